#!/usr/bin/env python3
"""Every session killed: the descriptors killed workers leave do not pile
up (issue 25).

A worker killed between the target's memfd_create() and the mmap() of
that memfd leaves a descriptor no mapping uses ("ubt.PID", PID the dead
worker's).  Before, only a detach that completed closed them: when every
session was killed, they stayed for ever.  Now each attach closes them
in its first stop (a mapped one there when every thread is stopped,
else in the stop that writes its jumps: rounds 2 and 3 here).

Three rounds, each of 3 workers killed after the memfd_create()
(UBT_TEST_DIE_AFTER_MEMFD=1) and then a session killed once its probes
count (its worker and the ubt the user started, stopped first, then
SIGKILL: alone, the worker outlives a kill of its process group and
detaches): after each round the
target holds one ubt memfd descriptor, the killed session's own (its
attach closed the 3 unmapped ones, and took the previous round's killed
session's memory and descriptor out: killed-memory.py), computes right, and the killed session's jumps were in place.  Then a whole session counts exactly and
leaves no ubt memfd, mapped or not; the code is the file's; the target
exits 0.  Prints TAP.
"""
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (attached, code_in, done, memfd_maps,  # noqa: E402
                     not_root, ok, share_target, ubt_p, kill_all, UBT)

BOUND = 60
ROUNDS = 3
KILLS = 3
work = tempfile.mkdtemp(prefix="ubt-strayk.")


def ubt_fds(pid):
    """The target's ubt memfd descriptors: {inode: name}."""
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        p = "/proc/%d/fd/%s" % (pid, fd)
        try:
            link = os.readlink(p)
            ino = os.stat(p).st_ino
        except OSError:
            continue
        if link.startswith("/memfd:ubt."):
            out[ino] = link
    return out


def unmapped(pid):
    """How many ubt memfd descriptors no mapping of pid uses."""
    inos = {int(m[3]) for m in memfd_maps(pid)}
    return sum(1 for ino in ubt_fds(pid) if ino not in inos)


def main():
    if not_root():
        return 77
    path, t, orig = share_target(work, "strayk")
    ok(t.run("100", "done 100", timeout=BOUND), "the target computes")
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    for rnd in range(ROUNDS):
        errs = []
        for _ in range(KILLS):
            d = subprocess.run([UBT, "-p", str(t.p.pid), "-e", prog],
                               stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=BOUND,
                               env=dict(os.environ,
                                        UBT_TEST_DIE_AFTER_MEMFD="1"))
            errs.append((d.returncode, d.stderr[-200:]))
        left = unmapped(t.p.pid)
        ok(all(rc == 1 and b"killed by signal 9" in e for rc, e in errs) and
           left == KILLS and t.run("100", "done 100", timeout=BOUND),
           "round %d: %d workers killed after memfd_create(): %d unmapped "
           "descriptors, the target computes" % (rnd + 1, KILLS, KILLS),
           "%r, %d unmapped" % (errs, left))
        u = ubt_p(t.p.pid, prog)
        seen = attached(u)
        r = t.run("1000", "done 1000", timeout=BOUND)
        patched = code_in(t.p.pid, path, "share_push") != orig
        n = kill_all(u, t.p.pid, BOUND)
        left, fds = unmapped(t.p.pid), ubt_fds(t.p.pid)
        ok(b"NOTIFY_PROBES_ATTACHED" in seen and r and patched and n == 2 and
           left == 0 and len(fds) == 1 and
           t.run("100", "done 100", timeout=BOUND),
           "round %d: a session killed (worker and guard) once its "
           "jumps are in: one ubt memfd descriptor left, its own, the "
           "target computes" % (rnd + 1),
           "%r, patched %s, %d killed, %d unmapped, %r" % (
               seen[-200:], patched, n, left, fds))
    u = ubt_p(t.p.pid, prog)
    seen = attached(u)
    r = t.run("1000", "done 1000", timeout=BOUND)
    u.send_signal(signal.SIGINT)
    out, err = u.communicate(timeout=BOUND)
    ok(r and u.returncode == 0 and b"@c: 1000" in out,
       "a whole session then counts exactly", "status %s, %r %r"
       % (u.returncode, out[-200:], (seen + err)[-300:]))
    fds, maps = ubt_fds(t.p.pid), memfd_maps(t.p.pid)
    ok(not fds and not maps, "and leaves no ubt memfd, mapped or not",
       "%r; %r" % (fds, maps[:4]))
    ok(code_in(t.p.pid, path, "share_push") == orig and
       t.run("100", "done 100", timeout=BOUND),
       "the code is the file's, the target computes")
    st = t.finish(BOUND)
    ok(st == 0, "the target exits 0", "status %s" % st)
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
