#!/usr/bin/env python3
"""A worker killed between its remote memfd_create() and the mmap() of
that memfd leaves a descriptor in the target that no mapping uses; the
next whole session closes it (issue 25).

UBT_TEST_DIE_AFTER_MEMFD=1 (tests/README.md) kills the worker right after
the target's memfd_create() returns, twice.  The target lives and
computes, with two descriptors of unmapped ubt memfds, each named after
its dead worker ("ubt.PID").  A whole session then counts exactly, and
closes both (in its attach's commit stop; `-v` says how many at the
end) and no other: the target's
own unmapped memfd named "ubt" stays open.  Before, the detach closed only the
descriptors of memfds it unmapped, and these stayed until the target
exited.
Prints TAP.
"""
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (attached, code_in, done, not_root, ok,  # noqa: E402
                     share_target, ubt_p, UBT)

BOUND = 60
work = tempfile.mkdtemp(prefix="ubt-stray.")


def memfd_fds(pid):
    """The target's descriptors by memfd name: {name: count}."""
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("/memfd:"):
            name = link[len("/memfd:"):].replace(" (deleted)", "")
            out[name] = out.get(name, 0) + 1
    return out


def dead(fds):
    """How many descriptors of memfds named after a worker that is gone."""
    return sum(n for name, n in fds.items() if name.startswith("ubt.") and
               not os.path.exists("/proc/" + name[4:]))


def main():
    if not_root():
        return 77
    path, t, orig = share_target(work, "stray")
    ok(t.run("memfd ubt", "memfd ", timeout=BOUND) and
       t.run("100", "done 100"), "the target computes, with an unmapped "
       "memfd of its own named ubt")
    own = memfd_fds(t.p.pid).get("ubt", 0)
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    errs = []
    for _ in range(2):
        d = subprocess.run([UBT, "-p", str(t.p.pid), "-e", prog],
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=BOUND,
                           env=dict(os.environ, UBT_TEST_DIE_AFTER_MEMFD="1"))
        errs.append((d.returncode, d.stderr[-200:]))
    fds = memfd_fds(t.p.pid)
    ok(all(rc == 1 and b"killed by signal 9" in e for rc, e in errs) and
       t.p.poll() is None and t.run("100", "done 100", timeout=BOUND) and
       dead(fds) == 2 and code_in(t.p.pid, path, "share_push") == orig,
       "two workers killed after the target's memfd_create(): the target "
       "computes, two unmapped ubt memfd descriptors in it",
       "%r, target %s, %r" % (errs, t.p.poll(), fds))
    u = ubt_p(t.p.pid, prog, "-v")
    seen = attached(u)
    r = t.run("1000", "done 1000", timeout=BOUND)
    u.send_signal(signal.SIGINT)
    out, err = u.communicate(timeout=BOUND)
    err = seen + err
    ok(r and u.returncode == 0 and b"@c: 1000" in out,
       "a whole session then counts exactly", "status %s, %r %r"
       % (u.returncode, out[-200:], err[-300:]))
    fds = memfd_fds(t.p.pid)
    ok(dead(fds) == 0 and
       b"2 descriptor(s) of killed ubts' unmapped memory closed" in err,
       "the session closes both descriptors and says so",
       "%r; %r" % (fds, err[-400:]))
    ok(fds.get("ubt", 0) == own == 1 and
       t.run("100", "done 100", timeout=BOUND),
       "the target's own memfd stays, and it computes on",
       "%d of its own before, %r now" % (own, fds))
    ok(code_in(t.p.pid, path, "share_push") == orig, "the code is the file's")
    st = t.finish(BOUND)
    ok(st == 0, "the target exits 0", "status %s" % st)
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
