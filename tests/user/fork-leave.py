#!/usr/bin/env python3
"""A child forked during a session holds nothing of ubt's once the
session ends (issue 25).

fork() copies the memfd's mappings (control view, code slices, chunks of
blocks) and its descriptor into the child.  Before, the detach put the
child's code back but left those in it for as long as it lived.  Now the
detach takes them out of the child as out of the target (the child's
thread is not inside ubt's code).

ubt -p with an entry and a return probe on a copy of ubt-share; the
target forks a child ("hold"), which makes its calls through the jumps
and waits.  At the end: exact counts (the child's calls are not the
target's, as with kernel probes); in the target and in the child, no
ubt memfd mapped, no ubt memfd descriptor, the code the file's; the child
then calls again, right, and exits 0, and so does the target.
Prints TAP.
"""
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (attached, code_in, done, memfd_maps,  # noqa: E402
                     not_root, ok, share_target, ubt_p)

BOUND = 60
work = tempfile.mkdtemp(prefix="ubt-forkl.")


def ubt_fds(pid):
    """pid's descriptors of ubt memfds (their links)."""
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("/memfd:ubt"):
            out.append(link)
    return out


def main():
    if not_root():
        return 77
    path, t, orig = share_target(work, "forkl")
    ok(t.run("100", "done 100", timeout=BOUND), "the target computes")
    prog = ("uprobe:%s:share_push { @c = count(); } "
            "uretprobe:%s:share_push { @r = count(); }" % (path, path))
    u = ubt_p(t.p.pid, prog)
    seen = attached(u)
    r = t.run("1000", "done 1000", timeout=BOUND)
    line = t.run("hold 100", "held ", timeout=BOUND)
    child = int(line.split()[1]) if line else 0
    held = child and memfd_maps(child) and ubt_fds(child) and \
        code_in(child, path, "share_push") != orig
    ok(r and held, "a child forked during the session holds the memfd's "
       "mappings and descriptor, and the jumps",
       "%r %r, child %d" % (r, seen[-200:], child))
    u.send_signal(signal.SIGINT)
    out, err = u.communicate(timeout=BOUND)
    ok(u.returncode == 0 and b"@c: 1000" in out and b"@r: 1000" in out,
       "exact counts (the child's calls are not the target's)",
       "status %s, %r %r" % (u.returncode, out[-200:], err[-300:]))
    if not child:
        return done(work)
    cm, cf = memfd_maps(child), ubt_fds(child)
    ok(not cm and not cf, "the child holds no ubt mapping and no ubt "
       "descriptor after the session", "%r; %r" % (cm[:4], cf))
    ok(code_in(child, path, "share_push") == orig,
       "the child's code is the file's")
    pm, pf = memfd_maps(t.p.pid), ubt_fds(t.p.pid)
    ok(not pm and not pf and code_in(t.p.pid, path, "share_push") == orig,
       "nor does the target, whose code is the file's",
       "%r; %r" % (pm[:4], pf))
    os.kill(child, signal.SIGUSR1)
    ok(t.run("100", "done 100", timeout=BOUND), "the target computes")
    st = t.finish(BOUND)
    ok(st == 0, "the child's calls after the session are right and it "
       "exits 0, and so does the target", "status %s" % st)
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
