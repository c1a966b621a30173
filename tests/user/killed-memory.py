#!/usr/bin/env python3
"""Sessions killed after they attached do not pile up memory in the
target (issue 25).

A -p session whose worker and guard are both SIGKILLed once its jumps are
in leaves its memfd's mappings (control view, guard, chunks, code
slices: about 9.4 MB) in the target.  Before, only a later detach that
completed took them out, so when every session was killed they grew
without bound.  Now the next attach, in the stop where it removes the
dead session's jumps (every thread held), takes out the memory of every
dead session none of whose jumps is left, when no thread's rip, stack
or shadow stack may still lead into it.

K sessions in a row, each killed once its probe counts: after each, the
target holds the ubt memfd mappings one killed session leaves (the last
one's), VmSize is that after the first, the code had the session's jump,
the target computes.  Then a whole session (-v) counts exactly, says it
took dead ubts' memory out, and leaves no ubt mapping or descriptor; the
code is the file's; the target exits 0.

A session killed while a wrapped call (return probe) is in progress
(ubt-exc reclaim): the next attach restores its jump but keeps its
memory (the return goes through the dead session's shadow stack), -v
says why, nothing of it writable and executable; the call then returns
right; the attach after that takes the memory out; ubt-exc exits 0.

A session whose probes read comm and share a map with a kernel probe,
killed: the BPF maps it mapped into the target (the comm table, the
shared table, found through its control block) go with its memory at
the next attach.

A wrapped call parked at a detach (ubt-exc reclaim; mem-sessions.py
tests the parking itself), then a session killed: the next attach takes
the dead session's memory out though the parked call's return lies on
the stack; once the call returned, another killed session, and the
attach after it takes out that one's memory and the parked page too,
while it is still attached.  ubt-exc exits 0.
Prints TAP.
"""
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (Fed, attached, builddir, code_in,  # noqa: E402
                     code_in_file, done, memfd_maps, not_root, ok,
                     ro_pages, share_target, ubt_p, kill_all)

BOUND = 60
KILLED = 5
work = tempfile.mkdtemp(prefix="ubt-killmem.")
EXC = os.path.abspath(os.path.join(builddir, "tests", "targets", "ubt-exc"))


def vmsize(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    return 0


def ubt_fds(pid):
    """The target's ubt memfd descriptors."""
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith(
                    "/memfd:ubt."):
                out.append(fd)
        except OSError:
            pass
    return out


def main():
    if not_root():
        return 77
    path, t, orig = share_target(work, "killmem")
    pid = t.p.pid
    ok(t.run("100", "done 100", timeout=BOUND), "the target computes")
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    first = None
    for k in range(KILLED):
        u = ubt_p(pid, prog, "--mode", "user")
        seen = attached(u)
        r = t.run("1000", "done 1000", timeout=BOUND)
        patched = code_in(pid, path, "share_push") != orig
        n = kill_all(u, pid, BOUND)
        maps, size = memfd_maps(pid), vmsize(pid)
        inos = {m[3] for m in maps}
        if first is None:
            first = (len(maps), size)
        ok(b"NOTIFY_PROBES_ATTACHED" in seen and r and patched and
           n == 2 and len(inos) == 1 and len(maps) == first[0] and
           size <= first[1] and t.run("100", "done 100", timeout=BOUND),
           "session %d killed once its jump is in: the target holds one "
           "killed session's memory (%d mappings, VmSize %d kB), "
           "computes" % (k + 1, first[0], first[1]),
           "%r, patched %s, %d killed, %d mappings of %d memfds, VmSize "
           "%d kB" % (seen[-200:], patched, n, len(maps), len(inos), size))
    u = ubt_p(pid, prog, "-v", "--mode", "user")
    seen = attached(u)
    r = t.run("1000", "done 1000", timeout=BOUND)
    u.send_signal(signal.SIGINT)
    out, err = u.communicate(timeout=BOUND)
    err = seen + err
    ok(r and u.returncode == 0 and b"@c: 1000" in out and
       b"of dead ubts' memory taken out" in err,
       "a whole session then counts exactly and says -v it took the "
       "dead session's memory out", "status %s, %r %r"
       % (u.returncode, out[-200:], err[-400:]))
    fds, maps = ubt_fds(pid), memfd_maps(pid)
    ok(not fds and not maps and vmsize(pid) < first[1],
       "and leaves no ubt mapping or descriptor",
       "%r; %r; VmSize %d kB" % (fds, maps[:4], vmsize(pid)))
    ok(code_in(pid, path, "share_push") == orig and
       t.run("100", "done 100", timeout=BOUND),
       "the code is the file's, the target computes")
    st = t.finish(BOUND)
    ok(st == 0, "the target exits 0", "status %s" % st)
    killed_in_call()
    killed_bpf()
    killed_after_park()
    return done(work)


def killed_session(pid, prog):
    u = ubt_p(pid, prog, "--mode", "user")
    seen = attached(u)
    return b"NOTIFY_PROBES_ATTACHED" in seen and kill_all(u, pid, BOUND) == 2


def killed_after_park():
    t = Fed([EXC, "12", "reclaim"])
    pid = t.p.pid
    ok(t.expect("ready", BOUND), "ubt-exc (reclaim) is ready")
    mid = "uprobe:%s:ubt_exc_mid { @m = count(); }" % EXC
    st, out, err = session_v(pid, mid)
    pages0 = ro_pages(pid)
    prog1 = ("uprobe:%s:ubt_exc_hold_wait { exit(); } "
             "uretprobe:%s:ubt_exc_hold_ret { @r = count(); }" % (EXC, EXC))
    u = ubt_p(pid, prog1, "-v", "--mode", "user")
    seen = attached(u)
    t.p.send_signal(signal.SIGUSR1)
    out, err = u.communicate(timeout=BOUND)
    held = t.expect("detached", BOUND)
    parked = ro_pages(pid) - pages0
    ok(u.returncode == 0 and held and b"parked" in seen + err and
       len(parked) == 1 and not memfd_maps(pid),
       "a wrapped call in progress parked at the detach",
       "status %s, %r, parked %s, maps %s" % (u.returncode, err[-300:],
                                              parked, memfd_maps(pid)))
    killed = killed_session(pid, mid)
    dead_maps = memfd_maps(pid)
    st, out, err = session_v(pid, mid)
    ok(killed and dead_maps and st == 0 and
       b"of dead ubts' memory taken out" in err and not memfd_maps(pid) and
       parked <= ro_pages(pid),
       "a session killed then: the next attach takes its memory out, the "
       "parked call's return on the stack notwithstanding; the page stays",
       "killed %s, dead %s, status %s, %r, maps %s" %
       (killed, dead_maps, st, err, memfd_maps(pid)))
    t.p.send_signal(signal.SIGUSR1)
    back = t.expect("returned after reattach", BOUND)
    waiting = t.expect("waiting", BOUND)
    killed = killed_session(pid, mid)
    u = ubt_p(pid, mid, "-v", "--mode", "user")
    seen = attached(u)
    during = ro_pages(pid), memfd_maps(pid)
    u.send_signal(signal.SIGINT)
    out, err = u.communicate(timeout=BOUND)
    ok(back == "returned after reattach 5" and waiting and killed and
       b"of dead ubts' memory taken out" in seen and
       not parked & during[0] and
       len({m[3] for m in during[1]}) == 1 and u.returncode == 0,
       "the call returns right; after another killed session, the next "
       "attach takes out its memory and the parked page",
       "%r %r, killed %s, %r, pages %s, maps %s, status %s" %
       (back, waiting, killed, seen[-400:], parked & during[0],
        during[1], u.returncode))
    ok(code_in(pid, EXC, "ubt_exc_hold_wait") ==
       code_in_file(EXC, "ubt_exc_hold_wait"), "the code is the file's")
    t.p.send_signal(signal.SIGUSR1)
    ok(t.expect("done", BOUND) and t.p.wait(timeout=BOUND) == 0,
       "ubt-exc runs on and exits 0")


def bpf_maps(pid):
    with open("/proc/%d/maps" % pid) as f:
        return [line.split()[0] for line in f if "anon_inode:bpf-map" in line]


def killed_bpf():
    path, t, orig = share_target(work, "killbpf")
    pid = t.p.pid
    prog = ("uprobe:%s:share_push { @c[comm] = count(); @x[1] = 1; } "
            "tracepoint:syscalls:sys_enter_getppid { @x[2] = @x[1]; }"
            % path)
    before = bpf_maps(pid)
    u = ubt_p(pid, prog)
    seen = attached(u)
    r = t.run("1000", "done 1000", timeout=BOUND)
    n = kill_all(u, pid, BOUND)
    left = bpf_maps(pid)
    ok(b"NOTIFY_PROBES_ATTACHED" in seen and r and n == 2 and
       len(left) == len(before) + 2 and memfd_maps(pid),
       "a session sharing a map with a kernel probe, killed, leaves its "
       "comm table and shared table mapped", "%r, %d killed, bpf maps %s "
       "then %s" % (seen[-200:], n, before, left))
    st, out, err = session_v(pid, "uprobe:%s:share_push { @c = count(); }"
                             % path)
    ok(st == 0 and b"of dead ubts' memory taken out" in err and
       bpf_maps(pid) == before and not memfd_maps(pid) and
       code_in(pid, path, "share_push") == orig and
       t.run("100", "done 100", timeout=BOUND),
       "the next session takes them out with its memory; the code is the "
       "file's, the target computes", "status %s, %r, bpf maps %s then "
       "%s, memfd %s" % (st, err[-400:], before, bpf_maps(pid),
                         memfd_maps(pid)))
    st = t.finish(BOUND)
    ok(st == 0, "that target exits 0", "status %s" % st)


def session_v(pid, prog):
    """A whole -v session, ended by SIGINT once attached: status, out,
    err."""
    u = ubt_p(pid, prog, "-v", "--mode", "user")
    seen = attached(u)
    u.send_signal(signal.SIGINT)
    out, err = u.communicate(timeout=BOUND)
    return u.returncode, out, seen + err


def killed_in_call():
    t = Fed([EXC, "12", "reclaim"])
    pid = t.p.pid
    ok(t.expect("ready", BOUND), "ubt-exc is ready")
    prog1 = ('uprobe:%s:ubt_exc_hold_wait { printf("in\\n"); } '
             "uretprobe:%s:ubt_exc_hold_ret { @r = count(); }" % (EXC, EXC))
    u = ubt_p(pid, prog1, "--mode", "user")
    seen = attached(u)
    t.p.send_signal(signal.SIGUSR1)
    inside = b"" if u.stdout is None else u.stdout.readline()
    while inside and inside.strip() != b"in":
        inside = u.stdout.readline()
    n = kill_all(u, pid, BOUND)
    dead_maps = memfd_maps(pid)
    ok(b"NOTIFY_PROBES_ATTACHED" in seen and inside and n == 2 and
       dead_maps, "a session killed inside a wrapped call leaves its "
       "memory", "%r %r %d %s" % (seen[-200:], inside, n, dead_maps))
    prog2 = "uprobe:%s:ubt_exc_mid { @m = count(); }" % EXC
    st, out, err = session_v(pid, prog2)
    held = t.expect("detached", BOUND)
    kept = memfd_maps(pid)
    ok(st == 0 and held and b"of dead ubts' memory stay" in err and
       b"wrapped call" in err and
       {m[3] for m in dead_maps} <= {m[3] for m in kept},
       "the next attach restores its jump, keeps its memory and says "
       "-v why", "status %s, held %r, %r, maps %s" % (st, held, err[-400:],
                                                    kept))
    ok(kept and not [m for m in kept if "w" in m[0] and "x" in m[0]] and
       not [m for m in kept if "x" in m[0] and any(
           "w" in w[0] and w[3] == m[3] and w[1] < m[2] and m[1] < w[2]
           for w in kept)],
       "nothing of it writable and executable", str(kept))
    t.p.send_signal(signal.SIGUSR1)
    back = t.expect("returned after reattach", BOUND)
    waiting = t.expect("waiting", BOUND)
    st, out, err = session_v(pid, prog2)
    left = memfd_maps(pid)
    ok(back == "returned after reattach 5" and waiting and st == 0 and
       b"of dead ubts' memory taken out" in err and not left,
       "the call returns right; the attach after that takes the dead "
       "session's memory out", "%r %r, status %s, %r, left %s" %
       (back, waiting, st, err[-400:], left))
    t.p.send_signal(signal.SIGUSR1)
    ok(t.expect("done", BOUND) and t.p.wait(timeout=BOUND) == 0,
       "ubt-exc runs on and exits 0")


if __name__ == "__main__":
    sys.exit(main())
