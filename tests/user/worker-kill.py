#!/usr/bin/env python3
"""SIGKILL of ubt's worker at a random instant of the attach (issue 25,
item 6).

ubt -p on a busy copy of ubt-share; its worker (the child that seizes
the target, places the runtime and writes the jumps) is killed at a
random instant from its start to 50 ms after the end of its attach (as
long as one session's took, measured first): before it touches the
target, inside a remote system call or dlopen(), while the jumps are
written, or after.  After each kill the ubt the user
started (the guard) ends, the target is alive, its code is the file's,
and every result it computes stays right; at the end it exits 0.
Every other round the kill falls within 3 ms of the moment the worker
starts to trace the target (while it makes its remote calls), where a
tracer's death used to hurt: a thread left at a single step's SIGTRAP
stop, or at the SIGSEGV of a call returning to address 0, got that
signal; one running a remote call went on with ubt's registers
(shim/process/ptrace_stub.c).
Then: the worker killed after its attach while the target maps 17 memfds
of its own before ubt's in the address order, as killed workers leave
theirs (the guard looked at the first 16 only and left the code
patched); and a whole session after all that leaves no ubt memfd, those
of workers killed before their first jump included.
UBT_WORKER_KILLS sets the number of rounds (default 16; 500 by hand),
UBT_WORKER_KILLS_LOG=1 prints each round.  Fixed random seed.  Prints TAP.
"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (Fed, children, code_in, done, not_root,  # noqa: E402
                     ok, share_target, UBT)

ROUNDS = int(os.environ.get("UBT_WORKER_KILLS", "16"))
work = tempfile.mkdtemp(prefix="ubt-wkill.")
BOUND = 60


class Busy(Fed):
    """The target fed batches of calls from a thread, every reply
    checked, until stopped."""

    def start(self):
        self.stop, self.bad, self.batches = False, None, 0
        self.th = threading.Thread(target=self.loop, daemon=True)
        self.th.start()

    def loop(self):
        while not self.stop and not self.bad:
            if not self.run("500", "done 500", timeout=BOUND):
                self.bad = "no reply to a batch (status %s)" % \
                    self.p.poll()
            self.batches += 1

    def halt(self):
        self.stop = True
        self.th.join(BOUND)


def tracer(pid):
    """The pid of a process that ptraces a thread of pid, 0 for none."""
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                for line in f:
                    if line.startswith("TracerPid:") and \
                       line.split()[1] != "0":
                        return int(line.split()[1])
        except OSError:
            pass
    return 0


def attached(u):
    """ubt said on stderr (non-blocking) that its probes are attached."""
    try:
        chunk = os.read(u.stderr.fileno(), 65536)
    except BlockingIOError:
        return False
    u.seen = getattr(u, "seen", b"") + chunk
    return b"NOTIFY_PROBES_ATTACHED" in u.seen or not chunk


def calibrate(t, prog):
    """Seconds from the worker's start to the end of its attach, in one
    session (the kills fall at random within it, and 50 ms after)."""
    env = dict(os.environ, __BPFTRACE_NOTIFY_PROBES_ATTACHED="1")
    u = subprocess.Popen([UBT, "-p", str(t.p.pid), "-e", prog],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=env)
    os.set_blocking(u.stderr.fileno(), False)
    while not children(u.pid) and u.poll() is None:
        pass
    t0 = time.time()
    while not attached(u) and u.poll() is None:
        time.sleep(0.001)
    span = time.time() - t0 + 0.05
    u.send_signal(signal.SIGINT)
    os.set_blocking(u.stderr.fileno(), True)
    u.communicate(timeout=BOUND)
    return span


def memfd_fds(pid):
    """The target's descriptors of ubt memfds."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += "/memfd:ubt" in os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            pass
    return n


def ubt_maps(pid):
    """The target's mappings of ubt's memfds (not its own decoys)."""
    with open("/proc/%d/maps" % pid) as f:
        return [ln for ln in f
                if "/memfd:ubt" in ln and "/memfd:ubt-decoy" not in ln]


def session(t, prog, kill=False):
    """One whole -p session, ended by SIGINT once attached (kill: its
    worker killed then): its status and stderr."""
    env = dict(os.environ, __BPFTRACE_NOTIFY_PROBES_ATTACHED="1")
    u = subprocess.Popen([UBT, "-p", str(t.p.pid), "-e", prog],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=env)
    os.set_blocking(u.stderr.fileno(), False)
    end = time.time() + BOUND
    while not attached(u) and u.poll() is None and time.time() < end:
        time.sleep(0.001)
    for c in children(u.pid) if kill else []:
        os.kill(c, signal.SIGKILL)
    u.send_signal(signal.SIGINT)
    os.set_blocking(u.stderr.fileno(), True)
    try:
        err = getattr(u, "seen", b"") + u.communicate(timeout=BOUND)[1]
    except subprocess.TimeoutExpired:
        u.kill()
        err = u.communicate()[1]
    return u.returncode, err


def main():
    if not_root():
        return 77
    # the feeding thread must not keep the poll below from the GIL for
    # the default 5 ms: the attach takes a few
    sys.setswitchinterval(0.0001)
    path, t, orig = share_target(work, "wkill", fed=Busy)
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    t.start()
    rng = random.Random(25)
    killed = inside = 0
    span = calibrate(t, prog)
    env = dict(os.environ, __BPFTRACE_NOTIFY_PROBES_ATTACHED="1")
    bad = []
    for i in range(ROUNDS):
        t0 = time.time()
        u = subprocess.Popen([UBT, "-p", str(t.p.pid), "-e", prog],
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=env)
        os.set_blocking(u.stderr.fileno(), False)
        # the worker: ubt's child, once it is there
        w = []
        end = time.time() + BOUND
        while not w and u.poll() is None and time.time() < end and \
                not attached(u):
            w = children(u.pid)
        if i % 2:
            # at a random instant from the worker's start
            delay = rng.uniform(0, span)
            time.sleep(delay)
        else:
            # while it holds the target (remote calls, jumps written):
            # once it traces it, a little later
            start = time.time()
            while w and not tracer(t.p.pid) and u.poll() is None and \
                    not attached(u) and time.time() < start + span:
                pass
            delay = rng.uniform(0, 0.003)
            time.sleep(delay)
        if w and tracer(t.p.pid):
            inside += 1
        for c in w:
            try:
                os.kill(c, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        if u.poll() is None:
            u.send_signal(signal.SIGINT)
        os.set_blocking(u.stderr.fileno(), True)
        try:
            err = getattr(u, "seen", b"") + u.communicate(timeout=BOUND)[1]
        except subprocess.TimeoutExpired:
            u.kill()
            err = u.communicate()[1]
            bad.append("round %d: ubt hung" % i)
        if os.environ.get("UBT_WORKER_KILLS_LOG"):
            print("# round %d: %.1f ms, worker %s, ubt status %s, %.1f s, %r"
                  % (i, delay * 1000, w, u.returncode, time.time() - t0,
                     err[-200:]))
        if t.p.poll() is not None:
            bad.append("round %d (%.1f ms): the target died, status %s; %r"
                       % (i, delay * 1000, t.p.returncode, err[-300:]))
            break
        if code_in(t.p.pid, path, "share_push") != orig:
            bad.append("round %d (%.1f ms): code left patched; %r"
                       % (i, delay * 1000, err[-300:]))
        if t.bad:
            bad.append("round %d: %s" % (i, t.bad))
            break
    ok(not bad, "%d worker kills within %.0f ms of its start (%d while it "
       "held the target): the target lives, its code is the file's"
       % (killed, span * 1000, inside), "; ".join(bad[:3]))
    # many memfds before the worker's in the address order (as killed
    # workers leave: one each; the first 16 were all the guard looked at)
    t.halt()
    decoys = t.run("memfds 17", "memfds 17", timeout=BOUND)
    t.start()
    st, err = session(t, prog, kill=True)
    ok(decoys and t.p.poll() is None and
       code_in(t.p.pid, path, "share_push") == orig,
       "the worker killed after its attach, 17 other memfds mapped before "
       "its own: the guard restores the code", "status %s; %r"
       % (st, err[-300:]))
    # what the killed workers left (a memfd each, some before they placed
    # a jump) goes with the next whole session: it marks them, its detach
    # removes them
    left = len(set(ln.split()[4] for ln in ubt_maps(t.p.pid)))
    st, err = session(t, prog)
    maps, fds = ubt_maps(t.p.pid), memfd_fds(t.p.pid)
    ok(st == 0 and not maps and not fds and
       code_in(t.p.pid, path, "share_push") == orig,
       "a whole session after the kills leaves no ubt memfd (%d were left "
       "by the kills)" % left,
       "status %s, %d mapping(s) of %d memfd(s), %d descriptor(s) left; "
       "%r" % (st, len(maps), len(set(ln.split()[4] for ln in maps)), fds,
               err[-300:]))
    t.halt()
    ok(not t.bad and t.batches > 0, "the target computed right throughout "
       "(%d batches)" % t.batches, t.bad or "")
    st = t.finish(BOUND)
    ok(st == 0, "the target exits 0", "status %s" % st)
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
