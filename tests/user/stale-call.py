#!/usr/bin/env python3
"""A remote call a killed worker left blocked in the target, and the next
ubt's calls on the same thread (issue 25, item 6).

The first ubt's worker makes a remote poll() of 20 s on the target's
thread (UBT_TEST_STALL_CALL, tests/README.md) and is killed while the
thread is in it.  A second ubt attaches to the target while that call is
still blocked, and makes its own remote calls on the same thread (its
calls nest inside the stale one).  When the stale poll() ends, the stub
must put back the registers of the call it was (the thread's own, from
before the first ubt), not those of the second ubt's last call: the
thread then goes on where it was, answers its commands with the right
results, and exits 0; the second ubt counts exactly.  Before each call
kept its data on the thread's stack (shim/process/ptrace_stub.c), the
calls shared the stub page's, and the thread went back into the stub.

Before that, on the fresh target, the worker dies at the entry of the
stub page's own mmap (UBT_TEST_DIE_IN_MMAP), the first remote call of
all, which ran with ubt's registers from a system call instruction of
the vdso or libc (the thread went on from there with them: the target
died); it runs through a copy of the stub in the vdso's spare bytes now,
and the thread puts itself back.  A later ubt zeroes that copy.
Prints TAP.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (attached, children, code_in, done, not_root,  # noqa: E402
                     ok, share_target, ubt_p, UBT)

STALL_MS = 20000
BOUND = 60
work = tempfile.mkdtemp(prefix="ubt-stale.")


def in_poll(pid):
    """The target's thread is in a poll() system call (number 7), or in
    its restart after a stop (restart_syscall, 219)."""
    try:
        with open("/proc/%d/syscall" % pid) as f:
            return f.read().split()[0] in ("7", "219")
    except (OSError, IndexError):
        return False


def vdso_tail(pid):
    """The vdso's last 512 bytes in process pid."""
    with open("/proc/%d/maps" % pid) as f:
        hi = [int(ln.split()[0].split("-")[1], 16) for ln in f
              if "[vdso]" in ln][0]
    with open("/proc/%d/mem" % pid, "rb") as f:
        f.seek(hi - 512)
        return f.read(512)


def main():
    if not_root():
        return 77
    path, t, orig = share_target(work, "stale")
    ok(t.run("100", "done 100"), "the target computes")
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    zeros = vdso_tail(t.p.pid)
    d = subprocess.Popen([UBT, "-p", str(t.p.pid), "-e", prog],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE,
                         env=dict(os.environ, UBT_TEST_DIE_IN_MMAP="1"))
    try:
        d.stderr = d.communicate(timeout=BOUND)[1]
    except subprocess.TimeoutExpired:
        d.send_signal(signal.SIGINT)  # it did not die
        d.stderr = d.communicate(timeout=BOUND)[1]
    ok(d.returncode == 1 and b"killed by signal 9" in d.stderr and
       t.run("100", "done 100", timeout=BOUND) and t.p.poll() is None,
       "the worker killed in the stub page's own mmap: the target lives "
       "and computes", "ubt status %s, %r, target %s"
       % (d.returncode, d.stderr[-300:], t.p.poll()))
    env = dict(os.environ, UBT_TEST_STALL_CALL=str(STALL_MS),
               __BPFTRACE_NOTIFY_PROBES_ATTACHED="1")
    a = subprocess.Popen([UBT, "-p", str(t.p.pid), "-e", prog],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=env)
    line = a.stderr.readline()
    end = time.time() + BOUND
    while b"UBT_TEST_STALL_CALL" in line and not in_poll(t.p.pid) and \
            time.time() < end:
        time.sleep(0.01)
    stalled = in_poll(t.p.pid)
    for c in children(a.pid):
        os.kill(c, signal.SIGKILL)
    err = line + a.communicate(timeout=BOUND)[1]
    ok(stalled and a.returncode == 1 and t.p.poll() is None,
       "the first worker killed inside its remote poll(): the target lives",
       "in poll() %s, ubt status %s; %r" % (stalled, a.returncode, err))
    # the second ubt while the stale call is still blocked
    b = ubt_p(t.p.pid, prog)
    seen = attached(b)
    # the thread runs for an instant between ubt's detach and its return
    # to the blocked call (/proc/PID/syscall says "running" then)
    end = time.time() + 2
    while not in_poll(t.p.pid) and time.time() < end:
        time.sleep(0.01)
    still = in_poll(t.p.pid)
    ok(b"NOTIFY_PROBES_ATTACHED" in seen and still,
       "a second ubt attaches (its remote calls on the same thread) "
       "while the stale call is blocked", "%r, in poll() %s" % (seen, still))
    # the thread comes back from the stale call (up to 20 s) and computes
    r = t.run("1000", "done 1000", timeout=BOUND)
    ok(r and t.p.poll() is None, "after the stale call ends, the thread "
       "goes on where it was and computes right",
       "status %s, %r" % (t.p.poll(), r))
    b.send_signal(signal.SIGINT)
    out, err = b.communicate(timeout=BOUND)
    ok(b.returncode == 0 and b"@c: 1000" in out,
       "the second ubt counts exactly", "status %s, %r %r"
       % (b.returncode, out[-200:], err[-300:]))
    ok(code_in(t.p.pid, path, "share_push") == orig, "the code is the file's")
    ok(vdso_tail(t.p.pid) == zeros, "the vdso's spare bytes are zero again")
    st = t.finish(BOUND)
    ok(st == 0, "the target exits 0", "status %s" % st)
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
