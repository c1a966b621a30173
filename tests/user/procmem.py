"""Helpers for the process-safety tests (share.py, kill-stress.py,
race.py, group-kill.py, ...): TAP results, the bytes of a function in a
process and in its file, a process fed commands on stdin whose output
lines are awaited, and ubt started on it."""
import os
import select
import shutil
import signal
import subprocess
import sys
import time

results = []

builddir = os.environ.get("top_builddir") or "."
UBT = os.environ.get("UBT") or os.path.join(builddir, "ubt")
SHARE = os.path.join(builddir, "tests", "targets", "ubt-share")


def not_root(why="not root"):
    """True, the TAP skip line printed, unless the test runs as root."""
    if os.geteuid() != 0:
        print("1..0 # SKIP " + why)
        return True
    return False


def done(work):
    """The TAP plan, work removed: the test's exit status."""
    print("1..%d" % len(results))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if all(results) else 1


def ubt_p(pid, prog, *opts, stdout=subprocess.PIPE, **kw):
    """ubt OPTS -p PID -e PROG started, to say on stderr (a pipe) when
    its probes are attached."""
    env = dict(os.environ, __BPFTRACE_NOTIFY_PROBES_ATTACHED="1")
    return subprocess.Popen([UBT] + list(opts) + ["-p", str(pid), "-e",
                                                  prog],
                            stdin=subprocess.DEVNULL, stdout=stdout,
                            stderr=subprocess.PIPE, env=env, **kw)


def attached(u):
    """ubt's stderr read up to its line that the probes are attached
    (bytes; without that line when ubt ended first)."""
    seen = b""
    while b"NOTIFY_PROBES_ATTACHED" not in seen:
        line = u.stderr.readline()
        if not line:
            break
        seen += line
    return seen


def share_target(work, name, fed=None):
    """A private copy of ubt-share, work/name, run (as fed, Fed by
    default): its path, the Fed and the bytes of share_push in the
    file."""
    path = os.path.join(work, name)
    shutil.copy(SHARE, path)
    t = (fed or Fed)([path])
    return path, t, code_in_file(path, "share_push")


def target_exits(t, bound):
    """Its input closed, the target exits 0 (a TAP result)."""
    t.close_input()
    ok(t.p.wait(timeout=bound) == 0, "the target exits 0")


def ubt_processes(named):
    """Running ubt processes with an argument for which named(arg) is true
    (arg: bytes), e.g. the pid after -p or a path in the program."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"ubt") and any(map(named, argv)):
            found.append(int(d))
    return found


def ok(cond, name, detail=""):
    """One TAP result; detail goes after a # when it fails."""
    results.append(bool(cond))
    print("%sok %d - %s%s" % ("" if cond else "not ", len(results), name,
                              "" if cond or not detail else " # " + detail))
    sys.stdout.flush()


def func_offset(path, fn):
    """st_value of function fn in ELF file path (nm)."""
    out = subprocess.run(["nm", path], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == fn:
            return int(f[0], 16)
    raise KeyError(fn)


def code_in(pid, path, fn, n=16):
    """n bytes at function fn of path (a PIE) as mapped in process pid."""
    base = None
    with open("/proc/%d/maps" % pid) as m:
        for line in m:
            f = line.split()
            if len(f) >= 6 and f[5] == path and int(f[2], 16) == 0:
                base = int(f[0].split("-")[0], 16)
                break
    with open("/proc/%d/mem" % pid, "rb") as m:
        m.seek(base + func_offset(path, fn))
        return m.read(n)


def code_in_file(path, fn, n=16):
    """The same bytes in the file (a PIE: file offset = address)."""
    with open(path, "rb") as f:
        f.seek(func_offset(path, fn))
        return f.read(n)


class Fed:
    """A process whose stdin takes commands and whose stdout lines are
    read raw (a buffered readline() would hide lines from select())."""

    def __init__(self, argv, env=None, stderr=None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=stderr,
                                  env=env)
        self.buf = ""
        self.err_seen = ""

    def send(self, cmd):
        self.p.stdin.write((cmd + "\n").encode())
        self.p.stdin.flush()

    def run(self, cmd, expect, timeout=20):
        self.send(cmd)
        return self.expect(expect, timeout)

    def expect(self, prefix, timeout=20):
        """The next output line that starts with prefix, or None."""
        fd = self.p.stdout.fileno()
        end = time.time() + timeout
        while time.time() < end:
            while "\n" in self.buf:
                line, self.buf = self.buf.split("\n", 1)
                if line.startswith(prefix):
                    return line
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return None
                self.buf += chunk.decode(errors="replace")
        return None

    def expect_err(self, text, timeout=20):
        """Wait until stderr (a pipe) holds text; what was read is kept
        in self.err_seen."""
        fd = self.p.stderr.fileno()
        end = time.time() + timeout
        while time.time() < end and text not in self.err_seen:
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                self.err_seen += chunk.decode(errors="replace")
        return text in self.err_seen

    def close_input(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        self.p.stdin = None

    def finish(self, timeout):
        """Close stdin and wait for the exit: its status, or "hung"
        (then killed) if it does not exit within timeout seconds."""
        self.close_input()
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return "hung"


def children(pid):
    """The pids of pid's children (its main thread's), [] when gone."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def memfd_maps(pid):
    """(perms, file start, file end, inode) of each ubt memfd mapping."""
    out = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            p = line.split(None, 5)
            if len(p) < 6 or "/memfd:ubt" not in p[5]:
                continue
            lo, hi = (int(x, 16) for x in p[0].split("-"))
            off = int(p[2], 16)
            out.append((p[1], off, off + hi - lo, p[4]))
    return out


def dead(pid):
    """pid has exited (gone, or a zombie init has yet to reap)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def kill_all(u, pid, bound):
    """ubt u's worker and guard for target pid both killed, stopped
    first (alone, the worker outlives its process group's kill and
    detaches), and waited for until both have exited: a worker still
    exiting is a live owner of its jumps to the next ubt, which then
    rightly leaves them be.  How many were killed."""
    both = [u.pid] + [w for w in ubt_processes(
        lambda a: a == str(pid).encode()) if w != u.pid]
    for p in both:
        os.kill(p, signal.SIGSTOP)
    for p in both:
        os.kill(p, signal.SIGKILL)
    u.wait(timeout=bound)
    wait_dead(both, bound)
    return len(both)


def ro_pages(pid):
    """Private anonymous read-only one-page mappings of pid (a parked
    call's page of its block, user_park.c)."""
    out = set()
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            p = line.split()
            lo, hi = (int(x, 16) for x in p[0].split("-"))
            if len(p) == 5 and p[1] == "r--p" and hi - lo == 4096:
                out.add(lo)
    return out


def wait_dead(pids, bound):
    """Wait up to bound seconds for each of pids to have exited."""
    for p in pids:
        for _ in range(bound * 100):
            if dead(p):
                break
            time.sleep(0.01)
