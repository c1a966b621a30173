#!/usr/bin/env python3
"""Function entries user mode used to send to the kernel (issue 26), in
user mode now, shared with bpftrace 0.17 on the same functions.

tests/targets/ubt-cover (a copy per case): a two-instruction leaf followed
by alignment padding (cov_tiny), one whose entry instruction runs again
(cov_zero), an entry instruction that changes %rdx (cov_rdx), a 2-byte
jmp right after the entry instruction (cov_jshort) and its target
(cov_back), indirect calls ending the window after the entry instruction
(cov_ireg through a register, cov_irsp through the stack, cov_irip through
a RIP-relative pointer: relocated to return into the function).  In -c, -p and system-wide use, with bpftrace counting the
same functions at the same time: -v says user mode for every one, both
tracers count every call exactly, the target exits 0 and, after ubt
detaches from a -p process, every byte of the functions and their padding
is the file's again.  Also: a probe that reads %rdx (arg2) on cov_rdx runs
in the kernel and -v says why, and so does an indirect call that would
return inside the window (icall_short).  A USDT site whose window ends
in an indirect call (usdt_icall) runs in user mode beside bpftrace.
Prints TAP.
"""
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (UBT, Fed, builddir, code_in, code_in_file,  # noqa: E402
                     memfd_maps, not_root, ok, results)

NOTIFY = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"
COVER = os.path.join(builddir, "tests", "targets", "ubt-cover")
BPFTRACE = shutil.which("bpftrace")
FUNCS = ("cov_back", "cov_ireg", "cov_irip", "cov_irsp", "cov_jshort",
         "cov_rdx", "cov_tiny", "cov_zero")
N = 1000
work = tempfile.mkdtemp(prefix="ubt-cover.")


def diag(text):
    for line in str(text).splitlines():
        print("# " + line)


class Tracer:
    """A tracer run until SIGINT (or its own end); its output at the end."""

    def __init__(self, argv, wait=True):
        env = dict(os.environ)
        env[NOTIFY] = "1"
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.out = ""
        self.err = ""
        self.attached = wait and self._wait_notify(60)

    def _wait_notify(self, timeout):
        fds = {self.p.stdout.fileno(): "out", self.p.stderr.fileno(): "err"}
        end = time.time() + timeout
        while time.time() < end and NOTIFY not in self.err:
            r, _, _ = select.select(list(fds), [], [], 0.5)
            for fd in r:
                chunk = os.read(fd, 65536).decode(errors="replace")
                if not chunk:
                    return False
                if fds[fd] == "out":
                    self.out += chunk
                else:
                    self.err += chunk
            if not r and self.p.poll() is not None:
                return False
        return NOTIFY in self.err

    def stop(self, signal_it=True):
        end = time.time() + 60
        while time.time() < end:
            if signal_it and self.p.poll() is None:
                self.p.send_signal(signal.SIGINT)
            try:
                out, err = self.p.communicate(timeout=10)
                self.out += out
                self.err += err
                return self.p.returncode
            except subprocess.TimeoutExpired:
                pass
        self.p.kill()
        self.p.communicate()
        return "hung"


def counts(out):
    """@[...:FUNC]: N lines of a map keyed by probe (either tracer), a key
    printed twice added up (keys_once() checks that none is)."""
    got = {}
    for m in re.finditer(r"^@\[uprobe:[^\]]*:(\w+)\]: (\d+)$", out, re.M):
        got[m.group(1)] = got.get(m.group(1), 0) + int(m.group(2))
    return got


def keys_once(out):
    keys = re.findall(r"^@\[(uprobe:[^\]]*)\]: \d+$", out, re.M)
    return len(keys) == len(set(keys))


def prog(path):
    return "uprobe:%s:cov_* { @[probe] = count(); }" % path


def copy(name):
    path = os.path.join(work, name)
    shutil.copy(COVER, path)
    return path


def bpftrace_on(path):
    t = Tracer([BPFTRACE, "-e", prog(path)])
    ok(t.attached, "bpftrace attached to %s" % os.path.basename(path),
       t.err[-300:])
    return t


def user_mode_each(err, name):
    modes = {f: re.search(r"^  uprobe:\S+:%s: user mode" % f, err, re.M)
             is not None for f in FUNCS}
    ok(all(modes.values()), "%s: -v says user mode for every function"
       % name, repr({f: m for f, m in modes.items() if not m}) +
       " " + repr(err[-600:]))


def exact(got, want, name):
    ok(got == {f: want for f in FUNCS}, "%s: %d calls of each counted"
       % (name, want), repr(got))


def case_c():
    path = copy("c")
    bt = bpftrace_on(path)
    r = subprocess.run([UBT, "-v", "-e", prog(path), "-c",
                        "%s %d" % (path, N)], capture_output=True,
                       text=True, timeout=120)
    user_mode_each(r.stderr, "-c")
    ok(r.returncode == 0 and "exited with status 0" in r.stderr,
       "-c: ubt and the command exit 0", r.stderr[-400:])
    exact(counts(r.stdout), N, "-c: ubt")
    bt.stop()
    exact(counts(bt.out), N, "-c: bpftrace")


def case_p():
    path = copy("p")
    t = Fed([path])
    bt = bpftrace_on(path)
    ok(t.run("5", "done 5"), "-p: calls before ubt")
    u = Tracer([UBT, "-v", "-e", prog(path), "-p", str(t.p.pid)])
    ok(u.attached, "-p: ubt attached", u.err[-300:])
    ok(t.run(str(N), "done %d" % N), "-p: calls under both tracers")
    rc = u.stop()
    user_mode_each(u.err, "-p")
    ok(rc == 0, "-p: ubt exits 0", u.err[-300:])
    exact(counts(u.out), N, "-p: ubt")
    ok(t.run("7", "done 7"), "-p: calls after ubt")
    bt.stop()
    exact(counts(bt.out), 5 + N + 7, "-p: bpftrace")
    # every function and its padding (16 bytes each) the file's again,
    # with bpftrace's int3 gone too
    same = {f: code_in(t.p.pid, path, f, 16) == code_in_file(path, f, 16)
            for f in FUNCS}
    ok(all(same.values()), "-p: bytes restored exactly at detach",
       repr(same))
    t.close_input()
    line = t.expect("exit")
    ok(line == "exit 0" and t.p.wait(timeout=20) == 0,
       "-p: the target exits 0", repr(line))


def taken_run(path, ready=lambda pid: bool(memfd_maps(pid))):
    """The target, started after ubt: one call of each function (its
    first hit reports it), then, once ready(pid) says ubt has dealt with
    it (by default: taken, its memory mapped there; the take runs on to
    its end while the process waits on its input), the other N - 1
    calls; its exit status.  ubt takes a process while it runs on: a run
    of N calls straight away could end before a take on a loaded
    machine, and stay in the kernel."""
    t = Fed([path])
    t.run("1", "done 1")
    for _ in range(600):
        if ready(t.p.pid):
            break
        time.sleep(0.1)
    t.run(str(N - 1), "done %d" % (N - 1), timeout=120)
    t.close_input()
    line = t.expect("exit")
    rc = t.p.wait(timeout=20)
    return rc if line == "exit 0" else -1


def case_syswide():
    path = copy("sysw")
    bt = bpftrace_on(path)
    u = Tracer([UBT, "-v", "-e", prog(path)])
    ok(u.attached, "system-wide: ubt attached", u.err[-300:])
    rc = taken_run(path)
    ok(rc == 0, "system-wide: the target exits 0", str(rc))
    rc = u.stop()
    user_mode_each(u.err, "system-wide")
    ok(rc == 0, "system-wide: ubt exits 0", u.err[-300:])
    exact(counts(u.out), N, "system-wide: ubt")
    ok(keys_once(u.out), "system-wide: ubt prints each key once",
       "its kernel and user-mode hits as two lines: " + u.out[-400:])
    bt.stop()
    got = counts(bt.out)
    ok(got == {f: N for f in FUNCS}, "system-wide: bpftrace: %d calls of "
       "each counted (the int3s it shares stay in the process taken)" % N,
       repr(got))
    ok(re.search(r"^ubt: pid \d+ \(sysw\): %d site\(s\) keep the kernel's "
                 r"int3 .*shared with another tracer: pid %d \(bpftrace\)"
                 % (len(FUNCS), bt.p.pid), u.err, re.M),
       "system-wide: -v says which sites keep the kernel's int3, and why",
       u.err[-600:])

def case_mixed():
    """System-wide, one probe with sites on both sides (icall_short stays
    in the kernel), bpftrace on the same sites: each call counted once."""
    path = copy("mixed")
    both = ("uprobe:%s:cov_*,uprobe:%s:icall_short { @[probe] = count(); }"
            % (path, path))
    bt = Tracer([BPFTRACE, "-e", both])
    ok(bt.attached, "mixed: bpftrace attached", bt.err[-300:])
    u = Tracer([UBT, "-v", "-e", both])
    ok(u.attached, "mixed: ubt attached", u.err[-300:])
    trc = taken_run(path)
    rc = u.stop()
    bt.stop()
    want = {f: N for f in FUNCS + ("icall_short",)}
    ok(trc == 0 and rc == 0 and
       re.search(r"^ubt: pid \d+ \(mixed\) taken: %d probe\(s\) in user "
                 r"mode" % len(FUNCS), u.err, re.M),
       "mixed: the process taken, it and ubt exit 0",
       "%s %s %s" % (trc, rc, u.err[-400:]))
    ok(counts(u.out) == want, "mixed: ubt counts %d calls of each, the "
       "kernel's site too (its kernel program skips the sites patched, "
       "and only them)" % N, repr(counts(u.out)))
    ok(counts(bt.out) == want, "mixed: bpftrace counts %d calls of each"
       % N, repr(counts(bt.out)))


def case_usdt():
    """A USDT site whose window ends in an indirect call (usdt_icall), in
    user mode, bpftrace on the same site at the same time."""
    path = copy("usdt")
    probe = ("usdt:%s:ubt_cover:icall { @c = count(); @s = sum(arg0); }"
             % path)
    bt = Tracer([BPFTRACE, "-e", probe])
    ok(bt.attached, "usdt: bpftrace attached", bt.err[-300:])
    r = subprocess.run([UBT, "-v", "-e", probe, "-c", "%s %d" % (path, N)],
                       capture_output=True, text=True, timeout=120)
    bt.stop()
    ok(re.search(r"^usdt:\S+:ubt_cover:icall: user mode", r.stderr, re.M),
       "usdt: a site followed by an indirect call runs in user mode",
       r.stderr[-400:])
    want = "@c: %d\n@s: %d\n" % (N, N * (N - 1) // 2)
    ok(r.returncode == 0 and want in r.stdout,
       "usdt: ubt counts every call, its argument exact, exit 0",
       r.stdout[-200:] + r.stderr[-200:])
    ok(want in bt.out, "usdt: bpftrace counts every call too",
       bt.out[-200:])


def case_reads():
    path = copy("reads")
    r = subprocess.run([UBT, "-v", "--dry-run", "-e",
                        "uprobe:%s:cov_rdx { @s = sum(arg2); } "
                        "uprobe:%s:cov_tiny { @t = sum(arg0); }"
                        % (path, path), "-c", "%s 1" % path],
                       capture_output=True, text=True, timeout=60)
    ok(re.search(r"^uprobe:\S+:cov_rdx: kernel \(\S+: the entry "
                 r"instruction at \+0 changes %rdx, which the probe "
                 r"reads\)$", r.stderr, re.M),
       "a probe reading %rdx at cov_rdx runs in the kernel, -v says why",
       r.stderr)
    ok(re.search(r"^uprobe:\S+:cov_tiny: user mode \(the function is "
                 r"too short for the jump: the rest of it runs in the "
                 r"trampoline, the jump takes the padding after it\)$",
                 r.stderr, re.M),
       "a probe reading arg0 at cov_tiny runs in user mode, -v says how",
       r.stderr)
    r = subprocess.run([UBT, "-v", "--dry-run", "-e",
                        "uprobe:%s:cov_rdx { @s = sum(arg0); }" % path,
                        "-c", "%s 1" % path],
                       capture_output=True, text=True, timeout=60)
    ok(re.search(r"^uprobe:\S+:cov_rdx: user mode \(the entry "
                 r"instruction changes %rdx, which the probe does not "
                 r"read\)$", r.stderr, re.M),
       "a probe reading arg0 at cov_rdx runs in user mode, -v says why",
       r.stderr)
    r = subprocess.run([UBT, "-v", "--dry-run", "-e",
                        "uprobe:%s:icall_short { @ = count(); }" % path,
                        "-c", "%s 1" % path],
                       capture_output=True, text=True, timeout=60)
    ok(re.search(r"^uprobe:\S+:icall_short: kernel \(.*an indirect call in "
                 r"the first 5 bytes would return inside the patched "
                 r"window\)$", r.stderr, re.M),
       "an indirect call right after the entry instruction: kernel, -v "
       "says why", r.stderr)


def case_two():
    """One function, a probe in the kernel (it reads %rdx) and one in user
    mode (it does not), sharing the entry: both count every call."""
    path = copy("two")
    r = subprocess.run([UBT, "-v", "-e",
                        "uprobe:%s:cov_rdx { @k = count(); $x = arg2; } "
                        "uprobe:%s:cov_rdx { @u = count(); }" % (path, path),
                        "-c", "%s %d" % (path, N)],
                       capture_output=True, text=True, timeout=120)
    ok(re.search(r"^uprobe:\S+:cov_rdx: kernel \(", r.stderr, re.M) and
       re.search(r"^uprobe:\S+:cov_rdx: user mode \(", r.stderr, re.M),
       "one function: the probe reading %rdx in the kernel, the other in "
       "user mode", r.stderr[-600:])
    ok(r.returncode == 0 and re.search(r"^@k: %d$" % N, r.stdout, re.M) and
       re.search(r"^@u: %d$" % N, r.stdout, re.M),
       "one function, both sides: every call counted on each",
       r.stdout[-300:] + r.stderr[-300:])


def case_ret():
    """Return probes: the same sites by call-wrapping, exact sums."""
    path = copy("ret")
    r = subprocess.run([UBT, "-v", "-e",
                        "uretprobe:%s:cov_* { @[probe] = sum(retval); }"
                        % path, "-c", "%s 100" % path],
                       capture_output=True, text=True, timeout=120)
    want = {"cov_tiny": 14950, "cov_zero": 0, "cov_rdx": 34750,
            "cov_jshort": 5450, "cov_back": 5450, "cov_ireg": 10000,
            "cov_irsp": 10000, "cov_irip": 10000}
    got = {}
    for m in re.finditer(r"^@\[uretprobe:[^\]]*:(\w+)\]: (\d+)$",
                         r.stdout, re.M):
        got[m.group(1)] = int(m.group(2))
    ok(got == want and r.returncode == 0, "uretprobe: exact sums",
       repr(got) + r.stderr[-300:])
    users = [f for f in FUNCS if f != "cov_back" and
             re.search(r"^  uretprobe:\S+:%s: user mode" % f, r.stderr, re.M)]
    ok(len(users) == len(FUNCS) - 1,
       "uretprobe: user mode at every site but cov_back", repr(users))


def main():
    if not_root("needs root"):
        return 77
    if not BPFTRACE:
        print("1..0 # SKIP no bpftrace")
        return 77
    try:
        case_reads()
        case_ret()
        case_two()
        case_c()
        case_p()
        case_syswide()
        case_mixed()
        case_usdt()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
