#!/usr/bin/env python3
"""A function probed in user mode by ubt and by another tracer at once
(issue 9: the traced process is sacred).

For an entry that starts with push %rbp, one that starts with a
%rip-relative load and a site inside a function (share_mid+4: a test
there, the jump after it) of ubt-share, with bpftrace (a perf-event
uprobe), `ubt --mode kernel` (libbpf's), a tracefs uprobe_events probe and
a uprobe_multi link (tests/user/umulti) as the other tracer (a system-wide kernel
uprobe, as SPDK's scripts place it), placed before ubt attaches and
after, and removed in either order:
the target never crashes and exits 0, ubt counts every call made while it
is attached, the other tracer every call made while it is attached.

Also: a second ubt on the same process runs its probes in the kernel and
says why; a ubt killed with SIGKILL leaves its jumps, which the next ubt
removes before it patches (both count exactly); a process another tracer
ptraces runs the probes in the kernel.  Every case traces its own copy of
ubt-share.  Prints TAP.
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
from procmem import (Fed, code_in, code_in_file, func_offset,  # noqa: E402
                     ok, results)

NOTIFY = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"
builddir = os.environ.get("top_builddir") or "."
UBT = os.environ.get("UBT") or os.path.join(builddir, "ubt")
SHARE = os.path.join(builddir, "tests", "targets", "ubt-share")
UMULTI = os.path.join(builddir, "tests", "user", "umulti")
BPFTRACE = shutil.which("bpftrace")
work = tempfile.mkdtemp(prefix="ubt-share.")


def diag(text):
    for line in str(text).splitlines():
        print("# " + line)


class Target(Fed):
    """A copy of ubt-share, fed commands on stdin."""

    def __init__(self, name):
        self.path = os.path.join(work, name)
        shutil.copy(SHARE, self.path)
        Fed.__init__(self, [self.path])

    def finish(self):
        self.close_input()
        try:
            return self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return "hung"


class Tracer:
    """A tracer run until SIGINT; its output once it ends."""

    def __init__(self, argv, wait=True, group=False):
        env = dict(os.environ)
        env[NOTIFY] = "1"
        self.argv = argv
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True,
                                  env=env, start_new_session=group)
        self.out = ""
        self.err_seen = ""
        self.attached = wait and self._wait_notify(30)

    def _wait_notify(self, timeout):
        # raw reads: a buffered readline() would hide lines from select();
        # the notification comes on stderr, as bpftrace prints it
        fds = {self.p.stdout.fileno(): "out", self.p.stderr.fileno(): "err"}
        end = time.time() + timeout
        while time.time() < end and NOTIFY not in self.err_seen:
            r, _, _ = select.select(list(fds), [], [], 0.5)
            for fd in r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return False
                text = chunk.decode(errors="replace")
                if fds[fd] == "out":
                    self.out += text
                else:
                    self.err_seen += text
            if not r and self.p.poll() is not None:
                return False
        return NOTIFY in self.err_seen

    # bpftrace 0.17 can take long to detach when other tests' tracers
    # hold the kernel's event lock (seen at make check -j2 on a loaded
    # machine); ubt gets 30 s
    stop_timeout = 30
    # bpftrace 0.17 once sat 120 s after a SIGINT at make check -j2 beside
    # other builds, its output unprinted: it gets one again every 10 s
    resend = None

    def stop(self):
        end = time.time() + self.stop_timeout
        out = None
        while out is None and time.time() < end:
            if self.p.poll() is None:
                self.p.send_signal(signal.SIGINT)
            try:
                out, err = self.p.communicate(
                    timeout=min(self.resend or self.stop_timeout,
                                max(1, end - time.time())))
            except subprocess.TimeoutExpired:
                pass
        if out is None:
            self.p.kill()
            out, err = self.p.communicate()
        self.out += out
        self.err = self.err_seen + err + "\n(exit %s)" % self.p.returncode
        return self.p.returncode

    def count(self, name="c"):
        m = re.search(r"^@%s: (\d+)$" % name, self.out, re.M)
        return int(m.group(1)) if m else None


def prog(path, fn):
    return "uprobe:%s:%s { @c = count(); }" % (path, fn)


class Tracefs:
    """A uprobe made through tracefs (uprobe_events), counted by the
    kernel's uprobe_profile: the third way other tools place uprobes."""

    root = "/sys/kernel/tracing"

    def __init__(self, t, fn):
        if not os.path.exists(self.root + "/uprobe_events"):
            subprocess.run(["mount", "-t", "tracefs", "nodev", self.root],
                           stderr=subprocess.DEVNULL)
        out = subprocess.run(["nm", t.path], capture_output=True,
                             text=True).stdout
        name, _, extra = fn.partition("+")
        off = [int(l.split()[0], 16) for l in out.splitlines()
               if l.endswith(" " + name)][0] + int(extra or 0)
        self.name = "ubtshare_%d_%s" % (os.getpid(), name)
        self.out, self.err = "", ""
        self.hits = None
        self._write("uprobe_events", "p:uprobes/%s %s:%#x\n" %
                    (self.name, t.path, off))
        self._write("events/uprobes/%s/enable" % self.name, "1\n")
        self.attached = True

    def _write(self, path, text):
        # raw: Python's append mode seeks, which tracefs files refuse
        fd = os.open(os.path.join(self.root, path), os.O_WRONLY |
                     os.O_APPEND)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def profile(self):
        with open(self.root + "/uprobe_profile") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3 and fields[1] == self.name:
                    return int(fields[2])
        return None

    def stop(self):
        self.hits = self.profile()
        self._write("events/uprobes/%s/enable" % self.name, "0\n")
        self._write("uprobe_events", "-:uprobes/%s\n" % self.name)
        return 0

    def count(self, name="c"):
        return self.hits


class Umulti(Fed):
    """A uprobe_multi link (tests/user/umulti), as libbpf's newer API makes
    them; it counts hits in its own BPF map."""

    def __init__(self, t, fn):
        name, _, extra = fn.partition("+")
        off = func_offset(t.path, name) + int(extra or 0)
        Fed.__init__(self, [UMULTI, t.path, hex(off)],
                     stderr=subprocess.PIPE)
        self.attached = bool(self.expect("attached"))
        self.out = self.err = ""
        self.hits = None

    def stop(self):
        self.close_input()
        line = self.expect("count")
        self.hits = int(line.split()[1]) if line else None
        self.err = self.p.communicate(timeout=30)[1].decode()
        return self.p.returncode

    def count(self, name="c"):
        return self.hits


def other(kind, t, fn):
    """A system-wide kernel uprobe from another tracer: attached once its
    breakpoint is in the target's code (bpftrace 0.17 does not always
    print the notification before it exits)."""
    if kind == "tracefs":
        return Tracefs(t, fn)
    if kind == "uprobe_multi":
        return Umulti(t, fn)
    argv = ([BPFTRACE] if kind == "bpftrace" else
            [UBT, "--mode", "kernel"]) + ["-e", prog(t.path, fn)]
    o = Tracer(argv, wait=False)
    if kind == "bpftrace":
        o.stop_timeout = 120
        o.resend = 10
    for _ in range(600):
        if site_bytes(t, fn)[:1] == b"\xcc" or o.p.poll() is not None:
            break
        time.sleep(0.05)
    o.attached = site_bytes(t, fn)[:1] == b"\xcc"
    if kind != "bpftrace":
        o.attached = o.attached and o._wait_notify(30)
    else:
        time.sleep(0.5)	# its program set on the event before enabling
    return o


def ubt_p(t, text, mode=None, group=False):
    """ubt -v -p on target t, running program text (--mode MODE if
    given, else ubt's own choice)."""
    return Tracer([UBT, "-v"] + (["--mode", mode] if mode else []) +
                  ["-p", str(t.p.pid), "-e", text], group=group)


def ubt_user(t, fn, group=False):
    return ubt_p(t, prog(t.path, fn), group=group)


def maps_of(text):
    """The map lines of an output, sorted."""
    return "\n".join(sorted(re.findall(r"^@.*$", text, re.M)))


def share_case(kind, fn, other_first, ubt_leaves_first):
    name = "%s %s, %s first, %s leaves first" % (
        fn, kind, "it" if other_first else "ubt",
        "ubt" if ubt_leaves_first else "it")
    t = Target("share-%s-%s-%d%d" % (kind, fn.replace("+", "-"),
                                     other_first, ubt_leaves_first))
    ok(t.run("10", "done"), name + ": target runs")
    if other_first:
        o = other(kind, t, fn)
        u = ubt_user(t, fn)
    else:
        u = ubt_user(t, fn)
        o = other(kind, t, fn)
    ok(o.attached and u.attached, name + ": both attached",
       "" if o.attached and u.attached else (u.out + o.out)[-300:])
    # both: 1000 calls; one left: 500 more; none: 200 more
    both = t.run("1000", "done")
    first, second = (u, o) if ubt_leaves_first else (o, u)
    first.stop()
    one = t.run("500", "done")
    second.stop()
    none = t.run("200", "done")
    st = t.finish()
    uc, oc = u.count(), o.count()
    want_u = 1000 if ubt_leaves_first else 1500
    want_o = 1500 if ubt_leaves_first else 1000
    ok(both and one and none and st == 0,
       name + ": target ran every batch and exits 0", "status %s" % st)
    ok("user mode" in u.err, name + ": ubt ran its probe in user mode",
       u.err.strip()[-200:])
    ok(uc == want_u, name + ": ubt counted %s, expected %d" % (uc, want_u),
       u.err.strip()[-200:])
    ok(oc == want_o, name + ": %s counted %s, expected %d" % (kind, oc,
                                                              want_o),
       (o.out + o.err)[-200:])


def second_ubt():
    name = "second ubt"
    t = Target("second")
    t.run("1", "done")
    u1 = ubt_user(t, "share_push")
    u2 = ubt_user(t, "share_push")
    ok(u1.attached and u2.attached, name + ": both attached")
    t.run("700", "done")
    u2.stop()
    u1.stop()
    st = t.finish()
    ok(re.search(r"kernel \(another ubt \(pid \d+\) runs probes", u2.err),
       name + ": it runs its probe in the kernel and says why",
       u2.err.strip()[-200:])
    ok(u1.count() == 700 and u2.count() == 700,
       name + ": both count 700: %s, %s" % (u1.count(), u2.count()))
    ok(st == 0, name + ": target exits 0")


def site_bytes(t, fn):
    """The bytes at fn (or fn+OFF) in the target."""
    name, _, off = fn.partition("+")
    return code_in(t.p.pid, t.path, name, 16 + int(off or 0))[
        int(off or 0):]


def killed_ubt():
    name = "ubt killed"
    t = Target("killed")
    t.run("1", "done")
    orig = site_bytes(t, "share_push")
    u1 = ubt_user(t, "share_push", group=True)
    ok(u1.attached, name + ": attached")
    t.run("300", "done")
    # ubt and the worker it forked (shim/user/guard.c, in a process group
    # of its own) at once, stopped first so that neither restores: its
    # jumps stay
    with open("/proc/%d/task/%d/children" % (u1.p.pid, u1.p.pid)) as f:
        kids = [int(k) for k in f.read().split()]
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for k in kids:
            os.kill(k, sig)
        os.killpg(u1.p.pid, sig)
    u1.p.wait()
    time.sleep(0.2)
    t.run("300", "done")
    u2 = ubt_user(t, "share_push")
    ok(u2.attached, name + ": the next ubt attached")
    t.run("400", "done")
    u2.stop()
    ok("user mode" in u2.err and "removed" in u2.err,
       name + ": it runs in user mode after removing the dead one's jump",
       u2.err.strip()[-300:])
    after = site_bytes(t, "share_push")
    st = t.finish()
    ok(u2.count() == 400, name + ": the next ubt counts 400: %s" %
       u2.count(), u2.err.strip()[-300:])
    ok(after == orig, name + ": the original code is back",
       "%s vs %s" % (after.hex(), orig.hex()))
    ok(st == 0, name + ": target exits 0")


def ptraced():
    name = "ptraced"
    strace = shutil.which("strace")
    if not strace:
        ok(False, name + ": strace is installed")
        return
    t = Target("ptraced")
    t.run("1", "done")
    s = subprocess.Popen([strace, "-o", "/dev/null", "-p", str(t.p.pid)],
                         stderr=subprocess.DEVNULL)
    for _ in range(100):
        with open("/proc/%d/status" % t.p.pid) as f:
            if re.search(r"^TracerPid:\s+[1-9]", f.read(), re.M):
                break
        time.sleep(0.05)
    u = ubt_user(t, "share_push")
    t.run("250", "done")
    u.stop()
    s.send_signal(signal.SIGINT)
    s.wait()
    st = t.finish()
    ok(re.search(r"kernel \(pid \d+ is traced by pid %d" % s.pid, u.err),
       name + ": the probe runs in the kernel and -v says why",
       u.err.strip()[-200:])
    ok(u.count() == 250, name + ": counts 250: %s" % u.count())
    ok(st == 0, name + ": target exits 0")


FORK_PROG = ("uprobe:%s:share_push { @[arg0 %% 4] = count(); } "
             "uprobe:%s:share_riprel { @c = count(); }")


def ubt_c(mode, path, prog_text):
    """ubt -c on path: its stdin and stdout are the command's."""
    env = dict(os.environ, **{NOTIFY: "1"})
    return Fed([UBT, "--mode", mode, "-c", path, "-e", prog_text], env=env,
               stderr=subprocess.PIPE)


def fed_c(u):
    """End a ubt -c run: the command's EOF, then ubt's output."""
    u.close_input()
    done = u.expect("exit 0")
    out, err = u.p.communicate(timeout=30)
    maps = maps_of(u.buf + out.decode())
    return done, maps, u.err_seen + err.decode()


def fork_run(target):
    """Feed the fork sequence; the held child's pid."""
    held = None
    for cmd, want in (("100", "done"), ("hold 50", "held"),
                      ("fork 200", "child")):
        line = target.run(cmd, want)
        if line and line.startswith("held"):
            held = int(line.split()[1])
    return held


def held_restored(pid, path):
    return code_in(pid, path, "share_push") == code_in_file(path,
                                                            "share_push")


def fork_p():
    """-p: children forked while patched record nothing, as the kernel's
    probes on the process count none of theirs (--mode kernel -p); a child
    alive when ubt leaves is restored; every child exits 0."""
    name = "fork -p"
    outs = {}
    for mode in ("user", "kernel"):
        t = Target("fork-p-" + mode)
        t.run("1", "done")
        u = ubt_p(t, FORK_PROG % (t.path, t.path), mode)
        held = fork_run(t)
        u.stop()
        restored = held and held_restored(held, t.path)
        if held:
            os.kill(held, signal.SIGUSR1)
        st = t.finish()
        outs[mode] = maps_of(u.out)
        ok(u.count() == 100 and u.p.returncode == 0,
           name + ": --mode %s counts the parent's 100 calls" % mode,
           (u.out + u.err)[-300:])
        if mode == "user":
            ok(restored, name + ": a child alive at detach has its code "
               "restored")
        ok(st == 0, name + ": --mode %s: target and children exit 0" % mode,
           "status %s" % st)
    ok(outs["user"] == outs["kernel"], name + ": user mode == kernel mode")


def fork_c():
    """-c: children record into the merged maps with blocks of their own
    (RT_CTL_CHILDREN), the same counts as --mode kernel (and bpftrace)."""
    name = "fork -c"
    outs = {}
    path = os.path.join(work, "fork-c")
    shutil.copy(SHARE, path)
    for mode in ("user", "kernel"):
        u = ubt_c(mode, path, FORK_PROG % (path, path))
        held = fork_run(u)
        if held:
            os.kill(held, signal.SIGUSR1)
        _, outs[mode], err = fed_c(u)
        # the held child makes its second 50 calls while ubt runs
        ok(u.p.returncode == 0 and "@c: 400" in outs[mode],
           name + ": --mode %s counts 400 in parent and children" % mode,
           (outs[mode] + err)[-300:])
    ok(outs["user"] == outs["kernel"], name + ": user mode == kernel mode")


EXEC_PROG = ("uprobe:%s:share_push { @c = count(); @p[arg0 %% 2] = count(); }"
             " uprobe:%s:share_riprel { @r = count(); }")


def exec_p():
    """-p: the target execs itself: the probes follow into the new image
    (placed before it runs), the same counts as --mode kernel, the code
    restored when ubt leaves, the target exits 0."""
    name = "exec -p"
    outs = {}
    for mode in ("user", "kernel"):
        t = Target("exec-p-" + mode)
        t.run("1", "done")
        u = ubt_p(t, EXEC_PROG % (t.path, t.path), mode)
        steps = (t.run("100", "done") and t.run("exec 300", "exec done") and
                 t.run("50", "done"))
        u.stop()
        restored = mode == "kernel" or held_restored(t.p.pid, t.path)
        st = t.finish()
        outs[mode] = maps_of(u.out)
        ok(steps and st == 0 and u.count() == 450 and u.count("r") == 450,
           name + ": --mode %s counts 450 across the exec, target exits 0"
           % mode, (u.out + u.err)[-300:])
        if mode == "user":
            ok(re.search(r"ran execve\(\): user-mode probes placed again",
                         u.err), name + ": -v says it followed the exec",
               u.err[-200:])
            ok(restored, name + ": the new image's code restored")
    ok(outs["user"] == outs["kernel"], name + ": user mode == kernel mode")


def exec_c():
    """-c: the same across an exec."""
    name = "exec -c"
    outs = {}
    path = os.path.join(work, "exec-c")
    shutil.copy(SHARE, path)
    for mode in ("user", "kernel"):
        u = ubt_c(mode, path, EXEC_PROG % (path, path))
        steps = (u.expect_err(NOTIFY) and u.run("100", "done") and
                 u.run("exec 300", "exec done") and u.run("50", "done"))
        done, outs[mode], err = fed_c(u)
        ok(steps and done and u.p.returncode == 0 and
           "@c: 450" in outs[mode],
           name + ": --mode %s counts 450 across the exec" % mode,
           (outs[mode] + err)[-300:])
    ok(outs["user"] == outs["kernel"], name + ": user mode == kernel mode")


def killed_target():
    """-p: a target killed by a signal is named with the signal, as a -c
    command is, in both modes; the runtime's SIGSEGV handler passes a
    SIGSEGV sent by kill() on (the process dies of it as without ubt)."""
    for mode in ("user", "kernel"):
        for sig in (signal.SIGSEGV, signal.SIGKILL):
            name = "target killed by %s, --mode %s" % (sig.name, mode)
            t = Target("killed-%s-%s" % (mode, sig.name))
            t.run("1", "done")
            u = Tracer([UBT, "--mode", mode, "-p", str(t.p.pid), "-e",
                        prog(t.path, "share_push")])
            t.run("10", "done")
            os.kill(t.p.pid, sig)
            st = t.p.wait(30)
            try:
                out, err = u.p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                u.p.kill()
                out, err = u.p.communicate()
            ok(st == -sig and re.search(
                   r"^ubt: pid %d was killed by signal %d \(" %
                   (t.p.pid, sig), err, re.M) and u.p.returncode == 0,
               name + ": ubt says so", "status %s: %s" % (st, err[-200:]))


def main():
    if not os.access(SHARE, os.X_OK):
        print("1..0 # SKIP %s not built" % SHARE)
        return 77
    kinds = ["ubt-kernel", "tracefs", "uprobe_multi"] + (
        ["bpftrace"] if BPFTRACE else [])
    if not BPFTRACE:
        diag("bpftrace not installed: only ubt --mode kernel as the "
             "other tracer")
    for kind in kinds:
        for fn in ("share_push", "share_riprel", "share_mid+4"):
            if kind == "bpftrace" and "+" in fn:
                continue	# Debian's bpftrace 0.17: no uprobe offsets
            for other_first in (True, False):
                share_case(kind, fn, other_first, other_first)
                share_case(kind, fn, other_first, not other_first)
    second_ubt()
    killed_ubt()
    ptraced()
    fork_p()
    fork_c()
    exec_p()
    exec_c()
    killed_target()
    print("1..%d" % len(results))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if all(results) and BPFTRACE else 1


if __name__ == "__main__":
    sys.exit(main())
