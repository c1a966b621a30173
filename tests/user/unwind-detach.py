#!/usr/bin/env python3
"""A wrapped call in progress while ubt detaches, then unwound by a C++
exception (tests/targets/exc.cc, "detach" mode): ubt -p --mode user
attaches, a probe inside the wrapped call makes it exit(), ubt restores
the code and goes; the target then throws through the wrapped frame (its
return address still lies in the runtime's rt_wrap_call), catches the
exception, and runs on to exit 0.  The return probe never fires.
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


def main():
    print("1..4")
    target = subprocess.Popen([EXE, "3", "detach"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE)
    ubt = None
    try:
        ready, _ = read_until(target.stdout.fileno(), "ready\n", 10)
        prog = ('uprobe:%s:ubt_exc_hold_wait { printf("hold\\n"); exit(); }'
                ' uretprobe:%s:ubt_exc_hold { printf("hold returned\\n"); }'
                ' uretprobe:%s:ubt_exc_throw { @t = count(); }'
                % (EXE, EXE, EXE))
        env = dict(os.environ)
        env[NOTIFY] = "1"
        ubt = subprocess.Popen([UBT, "--mode", "user", "-p",
                                str(target.pid), "-e", prog],
                               stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env)
        attached, first = (read_until(ubt.stdout.fileno(), NOTIFY, 20)
                           if ready else (False, ""))
        ok(ready and attached, "ubt -p --mode user attached to ubt-exc")
        target.send_signal(signal.SIGUSR1)
        try:
            out, _ = ubt.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            ubt.kill()
            out, _ = ubt.communicate()
        out = first + out.decode(errors="replace")
        ok(ubt.returncode == 0 and "hold\n" in out and
           "hold returned" not in out,
           "exit() inside the wrapped call; its return probe never fired",
           "exit %s, output %r" % (ubt.returncode, out))
        try:
            tout, _ = target.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            target.kill()
            tout, _ = target.communicate()
        tout = tout.decode(errors="replace")
        ok("caught after detach (restored)\n" in tout,
           "the exception passed the wrapped frame after the code was "
           "restored", repr(tout))
        ok(target.returncode == 0 and "wrong result" not in tout and
           tout.endswith("done\n"),
           "ubt-exc ran on and exited 0",
           "exit %s, output %r" % (target.returncode, tout))
    finally:
        for p in (ubt, target):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
