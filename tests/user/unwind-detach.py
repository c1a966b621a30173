#!/usr/bin/env python3
"""Wrapped calls in progress while ubt detaches (tests/targets/exc.cc,
"detach" and "reattach" modes), with ubt -p --mode user:

- a probe inside the wrapped call makes ubt exit(), ubt restores the code
  and goes; the target then throws through the wrapped frame (its return
  address still lies in the runtime's rt_wrap_call), catches the
  exception, and runs on to exit 0.  The return probe never fires.
- the same, then a second ubt attaches (the thread's block is reset) and
  the call returns normally: it returns right, the first session's return
  probe does not run into the second session's block, and the second
  session counts right.
Prints TAP.
"""
import os
import select
import signal
import subprocess
import sys
import time

NOTIFY = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"
builddir = os.environ.get("top_builddir") or "."
UBT = os.environ.get("UBT") or os.path.join(builddir, "ubt")
EXE = os.path.abspath(os.path.join(builddir, "tests", "targets", "ubt-exc"))
n = 0
bad = 0


def ok(cond, name, detail=""):
    global n, bad
    n += 1
    bad += not cond
    print("%sok %d - %s%s" % ("" if cond else "not ", n, name,
                              "" if cond or not detail else " # " + detail))
    sys.stdout.flush()


def read_until(fd, want, timeout):
    """Read fd (unbuffered) until the text want appears or timeout
    seconds pass: (found, text read)."""
    buf = b""
    deadline = time.time() + timeout
    while want.encode() not in buf and time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 1)
        if r:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
    return want.encode() in buf, buf.decode(errors="replace")


def attach(pid, prog):
    """Start ubt -p pid -e prog; (process, attached?, output so far)."""
    env = dict(os.environ)
    env[NOTIFY] = "1"
    p = subprocess.Popen([UBT, "--mode", "user", "-p", str(pid), "-e",
                          prog], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=env)
    found, text = read_until(p.stdout.fileno(), NOTIFY, 20)
    return p, found, text


def finish(p, first, timeout):
    """Wait for p: (exit code, whole output)."""
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    return p.returncode, first + out.decode(errors="replace")


def detach_then_throw():
    target = subprocess.Popen([EXE, "3", "detach"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE)
    ubt = None
    try:
        ready, _ = read_until(target.stdout.fileno(), "ready\n", 10)
        prog = ('uprobe:%s:ubt_exc_hold_wait { printf("hold\\n"); exit(); }'
                ' uretprobe:%s:ubt_exc_hold { printf("hold returned\\n"); }'
                ' uretprobe:%s:ubt_exc_throw { @t = count(); }'
                % (EXE, EXE, EXE))
        attached = False
        if ready:
            ubt, attached, first = attach(target.pid, prog)
        ok(ready and attached, "ubt -p --mode user attached to ubt-exc")
        target.send_signal(signal.SIGUSR1)
        rc, out = finish(ubt, first, 20) if ubt else (None, "")
        ok(rc == 0 and "hold\n" in out and "hold returned" not in out,
           "exit() inside the wrapped call; its return probe never fired",
           "exit %s, output %r" % (rc, out))
        trc, tout = finish(target, "", 30)
        ok("caught after detach (restored)\n" in tout,
           "the exception passed the wrapped frame after the code was "
           "restored", repr(tout))
        ok(trc == 0 and "wrong result" not in tout and
           tout.endswith("done\n"),
           "ubt-exc ran on and exited 0", "exit %s, output %r" % (trc, tout))
    finally:
        for p in (ubt, target):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def detach_reattach_return():
    target = subprocess.Popen([EXE, "12", "reattach"],
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE)
    first_ubt = second = None
    try:
        fd = target.stdout.fileno()
        ready, _ = read_until(fd, "ready\n", 10)
        prog1 = ('uprobe:%s:ubt_exc_hold_wait { exit(); }'
                 ' uretprobe:%s:ubt_exc_hold_ret { @ret1 = count(); }'
                 % (EXE, EXE))
        prog2 = ('uretprobe:%s:ubt_exc_mid { @mid = count(); }'
                 ' uretprobe:%s:ubt_exc_hold_ret { @ret2 = count(); }'
                 % (EXE, EXE))
        attached = False
        if ready:
            first_ubt, attached, first = attach(target.pid, prog1)
        target.send_signal(signal.SIGUSR1)
        rc1, out1 = finish(first_ubt, first, 20) if first_ubt else (None,
                                                                    "")
        detached, _ = read_until(fd, "detached\n", 20)
        ok(attached and rc1 == 0 and detached and "@ret1: 1" not in out1,
           "first ubt exited with the wrapped call in progress",
           "exit %s, output %r" % (rc1, out1))
        attached = False
        if detached:
            second, attached, first = attach(target.pid, prog2)
        target.send_signal(signal.SIGUSR1)
        trc, tout = finish(target, "", 30)
        rc2, out2 = finish(second, first, 20) if second else (None, "")
        ok(trc == 0 and "returned after reattach 5\n" in tout and
           "wrong result" not in tout and tout.endswith("done\n"),
           "the call returned right into the second session; the target "
           "exited 0", "exit %s, output %r" % (trc, tout))
        ok(attached and rc2 == 0 and "@mid: 12\n" in out2 and
           "@ret2: 1" not in out2,
           "the second session counted right",
           "exit %s, output %r" % (rc2, out2))
    finally:
        for p in (first_ubt, second, target):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def main():
    print("1..7")
    detach_then_throw()
    detach_reattach_return()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
