#!/usr/bin/env python3
"""Repeated -p sessions leave the target as one session does (issue 25,
item 2).

- N sessions in a row (UBT_MEM_SESSIONS, default 15; 100 by hand) of
  ubt -p on one ubt-share, each with an entry and a return probe: every
  session counts exactly; after each, the target holds no mapping of a
  ubt memfd and no descriptor more than before; its code bytes are the
  file's; VmSize and VmRSS after N sessions are those after one (within
  a small bound); the target exits 0.
- Under an address-space limit (RLIMIT_AS) of the target's own size plus
  256 MiB: a session in user mode fits, counts exactly, leaves no
  mapping, and the target forks and runs on after it.
- A session whose probes read comm and share a map with a kernel probe:
  the BPF maps mapped into the target go too.
- After a ubt killed with its whole group (SIGKILL), the next session's
  detach takes the dead one's mappings and descriptor out too.
- A wrapped call in progress at the detach (ubt-exc reclaim): it is
  parked (-v says so): no mapping of ubt's memfd stays, only one
  read-only private page (the thread's shadow entries) at the place of
  its block's first page, so VmSize grows by 4 kB, not the memfd's
  megabytes; a session while the call is still in progress leaves no
  memfd mapping either and keeps that page; the call then returns right
  through it; once it returned, the next session's detach removes the
  page; the target exits 0.  (Before, every mapping of the session
  stayed until then.)  The same with the parked call then throwing
  through its own wrapped frame (ubt-exc throw): the unwinder reads the
  parked page; the exception is caught; the target exits 0.  With
  two threads inside a wrapped call at the detach (tests/user/parked):
  both parked, two read-only pages, no memfd mapping; both calls return
  right; the next session's detach removes both pages; exit 0.  With
  UBT_NO_PARK=1 (the old rule), the session's mappings stay instead,
  none writable and executable, -v says why; the call returns right;
  the next session's detach removes them.
Prints TAP.
"""
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (Fed, attached, builddir, code_in,  # noqa: E402
                     done, memfd_maps, not_root, ok, ro_pages,
                     share_target, ubt_p, wait_dead)

work = tempfile.mkdtemp(prefix="ubt-mem.")
N = int(os.environ.get("UBT_MEM_SESSIONS", "15"))
EXC = os.path.abspath(os.path.join(builddir, "tests", "targets", "ubt-exc"))


def status(pid):
    """VmSize and VmRSS of pid, kB."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, v = line.split(":", 1)
            if k in ("VmSize", "VmRSS"):
                out[k] = int(v.split()[0])
    return out


def writable_code(maps):
    """Executable ranges that a writable mapping of the memfd covers."""
    return [m for m in maps if "x" in m[0] and
            any("w" in w[0] and w[3] == m[3] and w[1] < m[2] and m[1] < w[2]
                for w in maps)]


def fds(pid):
    return sorted(os.listdir("/proc/%d/fd" % pid))


def session(t, prog, calls, *opts):
    """One ubt -p session around calls of share_push and share_riprel:
    (output, error output, the target's answer)."""
    u = ubt_p(t.p.pid, prog, *opts)
    attached(u)
    answer = t.run(str(calls), "done %d" % calls, timeout=60)
    u.send_signal(signal.SIGINT)
    out, err = u.communicate(timeout=60)
    return out, err, answer


def repeated():
    path, t, orig = share_target(work, "share")
    prog = ("uprobe:%s:share_push { @c = count(); } "
            "uretprobe:%s:share_riprel { @r = count(); }" % (path, path))
    fd0 = fds(t.p.pid)
    first = None
    bad = []
    for i in range(N):
        out, err, answer = session(t, prog, 1000, "--mode", "user")
        left = memfd_maps(t.p.pid)
        if (b"@c: 1000\n" not in out or b"@r: 1000\n" not in out or
                not answer):
            bad.append("session %d: %r %r" % (i + 1, out, err[-300:]))
        if left or fds(t.p.pid) != fd0:
            bad.append("session %d left %s, fds %s" %
                       (i + 1, left, fds(t.p.pid)))
        if code_in(t.p.pid, path, "share_push") != orig:
            bad.append("session %d: share_push is not the file's" % (i + 1))
        if i == 0:
            first = status(t.p.pid)
        if bad and not left:
            break	# a wrong count: the rest says nothing more
    last = status(t.p.pid)
    ok(not bad, "%d sessions: exact counts, no ubt mapping or descriptor "
       "left after each, the code the file's" % N, "; ".join(bad[:3]))
    ok(first and last["VmSize"] <= first["VmSize"] + 64 and
       last["VmRSS"] <= first["VmRSS"] + 512,
       "VmSize and VmRSS after %d sessions are those after one" % N,
       "after 1: %s, after %d: %s" % (first, N, last))
    print("# after 1 session %s, after %d sessions %s" % (first, N, last))
    t.close_input()
    ok(t.p.wait(timeout=30) == 0, "ubt-share exits 0")


class Limited(Fed):
    """ubt-share under RLIMIT_AS: its own size plus 256 MiB."""

    def __init__(self, argv):
        super().__init__(argv)
        size = status(self.p.pid)["VmSize"] * 1024
        self.limit = size + (256 << 20)
        resource.prlimit(self.p.pid, resource.RLIMIT_AS,
                         (self.limit, self.limit))


def limited():
    path, t, orig = share_target(work, "limited", Limited)
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    out, err, answer = session(t, prog, 1000, "--mode", "user")
    ok(b"@c: 1000\n" in out and answer and not memfd_maps(t.p.pid),
       "under RLIMIT_AS = its size + 256 MiB, a user-mode session fits "
       "and counts exactly", "%r %r" % (out, err[-400:]))
    ok(t.run("fork 100", "child 0", timeout=30) is not None,
       "the limited target forks and its child's calls are right")
    t.close_input()
    ok(t.p.wait(timeout=30) == 0, "the limited ubt-share exits 0")


def bpf_maps(pid):
    with open("/proc/%d/maps" % pid) as f:
        return [line.split()[0] for line in f if "anon_inode:bpf-map" in line]


def bpf_mapped():
    """A session whose probes read comm and share a map with a kernel
    probe: the BPF maps ubt mapped into the target go with it."""
    path, t, orig = share_target(work, "bpfmaps")
    prog = ("uprobe:%s:share_push { @c[comm] = count(); @x[1] = 1; } "
            "tracepoint:syscalls:sys_enter_getppid { @x[2] = @x[1]; }"
            % path)
    before = bpf_maps(t.p.pid)
    out, err, answer = session(t, prog, 1000)
    ok(b"@c[bpfmaps]: 1000\n" in out and answer and
       bpf_maps(t.p.pid) == before and not memfd_maps(t.p.pid),
       "the comm table and a map shared with the kernel go with the memfd",
       "%r %r, bpf maps %s then %s" % (out, err[-300:], before,
                                       bpf_maps(t.p.pid)))
    t.close_input()
    ok(t.p.wait(timeout=30) == 0, "that ubt-share exits 0")


def memfd_fds(pid):
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if "memfd:ubt" in os.readlink("/proc/%d/fd/%s" % (pid, fd)):
                out.append(fd)
        except OSError:
            pass
    return out


def after_killed():
    """A ubt killed with its whole group: the next session restores its
    jumps, and its detach takes the dead one's memory and descriptor
    out too."""
    path, t, orig = share_target(work, "killed")
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    u = ubt_p(t.p.pid, prog, "--mode", "user", start_new_session=True)
    attached(u)
    # both of ubt's processes (the worker has a process group of its
    # own), as a kill of the terminal's session would
    killed = []
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and os.getsid(int(d)) == u.pid:
                os.kill(int(d), signal.SIGKILL)
                killed.append(int(d))
        except OSError:
            pass
    u.communicate(timeout=60)
    # until both have exited: a worker still exiting is a live owner of
    # its jumps to the next ubt, which then rightly refuses user mode
    wait_dead(killed, 60)
    left = memfd_fds(t.p.pid), memfd_maps(t.p.pid)
    ok(left[0] and left[1], "the killed ubt left its memory and descriptor",
       str(left))
    out, err, answer = session(t, prog, 1000, "--mode", "user")
    ok(b"@c: 1000\n" in out and answer and not memfd_fds(t.p.pid) and
       not memfd_maps(t.p.pid) and
       code_in(t.p.pid, path, "share_push") == orig,
       "after a ubt killed with its group, the next session counts "
       "exactly and leaves neither's memory nor descriptor",
       "%r %r, left by the killed one %s, then %s %s" %
       (out, err[-300:], left, memfd_fds(t.p.pid), memfd_maps(t.p.pid)))
    t.close_input()
    ok(t.p.wait(timeout=30) == 0, "that ubt-share exits 0")


def read_line(p, want, timeout=30):
    """The first line of p's stdout (a Fed) that starts with want."""
    return p.expect(want, timeout)


def ubt_v(pid, prog):
    u = ubt_p(pid, prog, "-v", "--mode", "user")
    return u, attached(u)


def kept_then_reclaimed():
    t = Fed([EXC, "12", "reclaim"])
    pid = t.p.pid
    ok(read_line(t, "ready"), "ubt-exc is ready")
    prog1 = ("uprobe:%s:ubt_exc_hold_wait { exit(); } "
             "uretprobe:%s:ubt_exc_hold_ret { @ret1 = count(); }"
             % (EXC, EXC))
    # the runtime stays loaded after a first session: measured after one
    prog0 = "uprobe:%s:ubt_exc_mid { @m = count(); }" % EXC
    u0, _ = ubt_v(pid, prog0)
    u0.send_signal(signal.SIGINT)
    u0.communicate(timeout=60)
    size0, pages0 = status(pid)["VmSize"], ro_pages(pid)
    u1, seen = ubt_v(pid, prog1)
    t.p.send_signal(signal.SIGUSR1)
    out1, err1 = u1.communicate(timeout=60)
    err1 = seen + err1
    held = read_line(t, "detached")
    kept = memfd_maps(pid)
    parked = ro_pages(pid) - pages0
    size1 = status(pid)["VmSize"]
    print("# VmSize %d kB before, %d kB after the session left with a "
          "call in progress" % (size0, size1))
    ok(u1.returncode == 0 and held and not kept and len(parked) == 1 and
       size1 == size0 + 4 and b"parked" in err1 and
       b"stays mapped" not in err1,
       "a wrapped call in progress at the detach is parked: no ubt memfd "
       "mapping stays, one read-only page does (VmSize +4 kB), -v says so",
       "exit %s, %r, maps %s, parked %s, VmSize %d -> %d kB" %
       (u1.returncode, err1[-400:], kept, parked, size0, size1))
    prog2 = "uprobe:%s:ubt_exc_mid { @m = count(); }" % EXC
    u2, _ = ubt_v(pid, prog2)
    u2.send_signal(signal.SIGINT)
    out2, err2 = u2.communicate(timeout=60)
    ok(u2.returncode == 0 and b"stays mapped" not in err2 and
       not memfd_maps(pid) and parked <= ro_pages(pid),
       "a session while the call is still in progress leaves no memfd "
       "mapping and keeps the parked page",
       "exit %s, %r, maps %s" % (u2.returncode, err2[-300:],
                                 memfd_maps(pid)))
    t.p.send_signal(signal.SIGUSR1)
    back = read_line(t, "returned after reattach")
    waiting = read_line(t, "waiting")
    u3, _ = ubt_v(pid, prog2)
    u3.send_signal(signal.SIGINT)
    out3, err3 = u3.communicate(timeout=60)
    left = memfd_maps(pid)
    ok(back == "returned after reattach 5" and waiting and
       u3.returncode == 0 and not left and b"taken out" in err3 and
       not parked & ro_pages(pid) and status(pid)["VmSize"] == size0,
       "the call returned right; the next session's detach removes the "
       "parked page too (VmSize as before)", "%r %r, exit %s, %r, left "
       "%s, parked %s, VmSize %d kB" %
       (back, waiting, u3.returncode, err3[-300:], left,
        parked & ro_pages(pid), status(pid)["VmSize"]))
    t.p.send_signal(signal.SIGUSR1)
    ok(read_line(t, "done") and t.p.wait(timeout=30) == 0,
       "ubt-exc runs on and exits 0")


def parked_throw():
    t = Fed([EXC, "12", "throw"])
    pid = t.p.pid
    ok(read_line(t, "ready"), "ubt-exc (throw) is ready")
    prog = ("uprobe:%s:ubt_exc_hold_wait { exit(); } "
            "uretprobe:%s:ubt_exc_hold_throw { @r = count(); }"
            % (EXC, EXC))
    u, seen = ubt_v(pid, prog)
    t.p.send_signal(signal.SIGUSR1)
    out, err = u.communicate(timeout=60)
    err = seen + err
    held = read_line(t, "detached")
    ok(u.returncode == 0 and held and b"parked" in err and
       not memfd_maps(pid), "a wrapped call in progress at the detach is "
       "parked, no ubt memfd mapping stays", "exit %s, %r, maps %s" %
       (u.returncode, err[-400:], memfd_maps(pid)))
    t.p.send_signal(signal.SIGUSR1)
    ok(read_line(t, "caught after detach") == "caught after detach 12" and
       read_line(t, "done") and t.p.wait(timeout=30) == 0,
       "it throws through its parked frame, the exception is caught, "
       "ubt-exc exits 0")


def kept_unparked():
    t = Fed([EXC, "12", "reclaim"])
    pid = t.p.pid
    ok(read_line(t, "ready"), "ubt-exc (UBT_NO_PARK) is ready")
    prog1 = ("uprobe:%s:ubt_exc_hold_wait { exit(); } "
             "uretprobe:%s:ubt_exc_hold_ret { @ret1 = count(); }"
             % (EXC, EXC))
    os.environ["UBT_NO_PARK"] = "1"
    try:
        u1, seen = ubt_v(pid, prog1)
        t.p.send_signal(signal.SIGUSR1)
        out1, err1 = u1.communicate(timeout=60)
    finally:
        del os.environ["UBT_NO_PARK"]
    err1 = seen + err1
    held = read_line(t, "detached")
    kept = memfd_maps(pid)
    ok(u1.returncode == 0 and held and kept and
       b"stays mapped" in err1 and b"wrapped call" in err1 and
       not writable_code(kept) and
       not [m for m in kept if "w" in m[0] and "x" in m[0]],
       "UBT_NO_PARK=1: ubt's mappings stay, none writable and executable, "
       "-v says why", "exit %s, %r, maps %s" % (u1.returncode,
                                                 err1[-400:], kept))
    t.p.send_signal(signal.SIGUSR1)
    back = read_line(t, "returned after reattach")
    waiting = read_line(t, "waiting")
    prog2 = "uprobe:%s:ubt_exc_mid { @m = count(); }" % EXC
    u3, _ = ubt_v(pid, prog2)
    u3.send_signal(signal.SIGINT)
    out3, err3 = u3.communicate(timeout=60)
    ok(back == "returned after reattach 5" and waiting and
       u3.returncode == 0 and not memfd_maps(pid) and b"taken out" in err3,
       "the call returns right; the next session's detach removes them",
       "%r %r, exit %s, %r" % (back, waiting, u3.returncode, err3[-300:]))
    t.p.send_signal(signal.SIGUSR1)
    ok(read_line(t, "done") and t.p.wait(timeout=30) == 0,
       "ubt-exc runs on and exits 0")


PARKED = os.path.join(builddir, "tests", "user", "parked")


def two_parked():
    path = os.path.join(work, "parked")
    shutil.copy(PARKED, path)
    t = Fed([path])
    pid = t.p.pid
    ok(read_line(t, "ready"), "parked is ready")
    pages0 = ro_pages(pid)
    prog = ("uretprobe:%s:parked_wait { @r = count(); } "
            "uprobe:%s:parked_wait { @e = count(); } "
            "interval:ms:700 { exit(); }" % (path, path))
    u, seen = ubt_v(pid, prog)
    t.p.stdin.write(b"\n")
    t.p.stdin.flush()
    out, err = u.communicate(timeout=60)
    err = seen + err
    parked = ro_pages(pid) - pages0
    ok(u.returncode == 0 and b"2 wrapped call(s) in progress parked" in err
       and len(parked) == 2 and not memfd_maps(pid),
       "two threads inside a wrapped call: both parked, two read-only "
       "pages stay, no memfd mapping", "exit %s, %r, parked %s, maps %s" %
       (u.returncode, err[-400:], parked, memfd_maps(pid)))
    t.p.stdin.write(b"\n")
    t.p.stdin.flush()
    # in either order
    r1, r2 = sorted([str(read_line(t, "thread ")),
                     str(read_line(t, "thread "))])
    read_line(t, "joined")
    prog2 = "uprobe:%s:parked_wait { @e = count(); }" % path
    u2, seen2 = ubt_v(pid, prog2)
    u2.send_signal(signal.SIGINT)
    out2, err2 = u2.communicate(timeout=60)
    err2 = seen2 + err2
    ok(r1 == "thread 1 returned 2" and r2 == "thread 2 returned 4" and
       u2.returncode == 0 and not parked & ro_pages(pid),
       "both calls return right; the next session's detach removes both "
       "pages", "%r %r, exit %s, %r, left %s" %
       (r1, r2, u2.returncode, err2[-300:], parked & ro_pages(pid)))
    t.close_input()
    ok(read_line(t, "done") == "done 0" and t.p.wait(timeout=30) == 0,
       "parked exits 0")


def main():
    if not_root():
        return 0
    repeated()
    limited()
    bpf_mapped()
    after_killed()
    kept_then_reclaimed()
    parked_throw()
    two_parked()
    kept_unparked()
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
