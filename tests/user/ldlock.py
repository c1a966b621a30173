#!/usr/bin/env python3
"""A thread of the target holds the dynamic loader's lock while ubt
attaches (issue 25, item 7).

The target's second thread sits inside a dl_iterate_phdr() callback (the
loader's write lock held) when ubt -p attaches.  A remote dlopen() of the
runtime would take the loader's other lock and block behind it; abandoned,
it left that lock held: the target's next dlopen() deadlocked and its exit
hung in _dl_fini.  ubt must see the lock held before it calls dlopen(),
wait a bounded time, then run the probes in the kernel and say why in -v
(with --mode user: fail with that reason); taken after that decision, the
attach fails with the reason before the call (UBT_TEST_LDLOCK_LATE=1);
taken as the call starts, the call is waited for, never abandoned
(UBT_TEST_LDLOCK_LATE=2).  The counts are exact, the
code is the file's after each ubt, the target's own dlopen() works once
its thread let go, a ubt after that runs in user mode, and the target
exits 0.  Prints TAP.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (Fed, attached, code_in, code_in_file, done,  # noqa
                     not_root, ok, ubt_p, UBT)

builddir = os.environ.get("top_builddir") or "."
TARGET = os.path.join(builddir, "tests", "targets", "ubt-ldlock")
LIB = os.path.abspath(os.path.join(builddir, "tests", "targets",
                                   "libubt-target.so"))
work = tempfile.mkdtemp(prefix="ubt-ldlock.")
BOUND = 60


def session(t, prog, n, *opts):
    """ubt -v OPTS -p on t for n calls: (status, stdout, stderr)."""
    u = ubt_p(t.p.pid, prog, "-v", *opts)
    seen = attached(u)
    if b"NOTIFY_PROBES_ATTACHED" in seen:
        t.run(str(n), "done %d" % n, timeout=BOUND)
        u.send_signal(signal.SIGINT)
    try:
        out, err = u.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        u.kill()
        out, err = u.communicate()
        return None, out, (seen + err).decode(errors="replace")
    return u.returncode, out, (seen + err).decode(errors="replace")


def main():
    if not_root():
        return 77
    path = os.path.join(work, "ldlock")
    shutil.copy(TARGET, path)
    orig = code_in_file(path, "ldlock_fn")
    prog = "uprobe:%s:ldlock_fn { @c = count(); }" % path
    t = Fed([path])
    ok(t.run("hold", "held", timeout=BOUND),
       "a thread of the target holds the loader's lock")

    st, out, err = session(t, prog, 1000)
    ok(st == 0 and b"@c: 1000\n" in out,
       "ubt -p counts exactly while the lock is held",
       "status %s %r %r" % (st, out[-100:], err[-400:]))
    ok("loader" in err and "lock" in err and "kernel" in err,
       "-v says the loader's lock sent the probe to the kernel", err[-600:])
    ok(code_in(t.p.pid, path, "ldlock_fn") == orig,
       "the code is the file's")

    st, out, err = session(t, prog, 10, "--mode", "user")
    ok(st not in (0, None) and "loader" in err and "lock" in err,
       "--mode user fails and says why", "status %s %r" % (st, err[-400:]))
    ok(code_in(t.p.pid, path, "ldlock_fn") == orig,
       "the code is the file's")

    # the lock taken after the decision: seen again before the call
    os.environ["UBT_TEST_LDLOCK_LATE"] = "1"
    st, out, err = session(t, prog, 10)
    ok(st not in (0, None) and "loader" in err and "lock" in err,
       "taken after the decision: the attach fails and says why",
       "status %s %r" % (st, err[-400:]))
    ok(code_in(t.p.pid, path, "ldlock_fn") == orig,
       "the code is the file's")

    # taken as the call starts: the call waits for it, never abandoned
    # (the thread lets go by itself: the call may run on the thread
    # that reads the commands)
    ok(t.run("free", "freed", timeout=BOUND), "the thread lets go")
    ok(t.run("hold 8000", "held", timeout=BOUND),
       "it takes the lock again, for 8 s")
    os.environ["UBT_TEST_LDLOCK_LATE"] = "2"
    u = ubt_p(t.p.pid, prog, "-v")
    seen = b""
    while b"waits for the dynamic loader's lock" not in seen:
        line = u.stderr.readline()
        if not line:
            break
        seen += line
    del os.environ["UBT_TEST_LDLOCK_LATE"]
    ok(b"waits for the dynamic loader's lock" in seen,
       "taken as the call starts: ubt says it waits", seen[-400:])
    seen += attached(u)
    t.run("555", "done 555", timeout=BOUND)
    u.send_signal(signal.SIGINT)
    try:
        out, err = u.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        u.kill()
        out, err = u.communicate()
    err = (seen + err).decode(errors="replace")
    ok(u.returncode == 0 and b"@c: 555\n" in out and "user mode" in err,
       "then the runtime is loaded and the probe counts in user mode",
       "status %s %r %r" % (u.returncode, out[-100:], err[-400:]))
    ok(code_in(t.p.pid, path, "ldlock_fn") == orig,
       "the code is the file's")
    ok(t.run("dlopen " + LIB, "dlopen ok", timeout=BOUND),
       "the target's own dlopen() works")

    st, out, err = session(t, prog, 777, "--mode", "user")
    ok(st == 0 and b"@c: 777\n" in out,
       "with the lock free, ubt runs the probe in user mode",
       "status %s %r %r" % (st, out[-100:], err[-400:]))
    ok(code_in(t.p.pid, path, "ldlock_fn") == orig,
       "the code is the file's")
    ok(t.run("dlopen " + LIB, "dlopen ok", timeout=BOUND),
       "the target's dlopen() works after that too")
    st = t.finish(BOUND)
    ok(st == 0, "the target exits 0", "status %s" % st)
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
