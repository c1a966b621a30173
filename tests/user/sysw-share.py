#!/usr/bin/env python3
"""System-wide user mode shares the kernel's int3 of a site with the other
consumers of that uprobe (shim/run/sysw_share.c).

A process taken keeps the int3 of each site another tracer uses, found
before the take: another ubt running in the kernel (its uprobe_multi
links), a tracefs uprobe event (perf probe -x style, enabled in a tracefs
instance of the test's own).  Both tracers count every call exactly, ubt
prints each key once, -v names the other tracer.  Alone, a site's int3
goes (its hits no longer trap).  A return probe's site shared keeps the
process in the kernel.  tests/user/cover.py does the same with
bpftrace 0.17.  The target is a copy of tests/targets/ubt-cover per case.
Prints TAP.
"""
import os
import re
import select
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cover  # noqa: E402
from cover import FUNCS, N, Tracer, copy, counts, keys_once, prog  # noqa
from procmem import (UBT, Fed, code_in, code_in_file, func_offset,  # noqa
                     not_root, ok, results)

TRACEFS = "/sys/kernel/tracing"
KEEP = r"^ubt: pid \d+ \(%s\): (\d+) site\(s\) keep the kernel's int3 "


def take(path, name):
    """ubt -v system-wide on path while the target makes N calls of each
    function: its output, checked to count them all, each key once."""
    u = Tracer([UBT, "-v", "-e", prog(path)])
    ok(u.attached, "%s: ubt attached" % name, u.err[-300:])
    trc = cover.taken_run(path)
    ok(trc == 0, "%s: the target exits 0" % name, str(trc))
    rc = u.stop()
    ok(rc == 0 and re.search(r"^ubt: pid \d+ \(%s\) taken: %d probe\(s\) "
                             r"in user mode" % (os.path.basename(path),
                                                len(FUNCS)),
                             u.err, re.M),
       "%s: the process taken, ubt exits 0" % name, u.err[-600:])
    ok(counts(u.out) == {f: N for f in FUNCS} and keys_once(u.out),
       "%s: ubt counts %d calls of each, each key printed once"
       % (name, N), u.out[-600:])
    return u


def case_alone():
    path = copy("alone")
    u = take(path, "alone")
    ok(not re.search(KEEP % "alone", u.err, re.M),
       "alone: no site keeps the kernel's int3", u.err[-600:])


def case_other_ubt():
    path = copy("kubt")
    o = Tracer([UBT, "--mode", "kernel", "-e", prog(path)])
    ok(o.attached, "another ubt in the kernel attached", o.err[-300:])
    u = take(path, "kubt")
    o.stop()
    ok(counts(o.out) == {f: N for f in FUNCS},
       "the other ubt counts %d calls of each" % N, o.out[-600:])
    m = re.search(KEEP % "kubt" + r".*shared with another tracer: pid %d "
                  r"\(ubt\)" % o.p.pid, u.err, re.M)
    ok(m and m.group(1) == str(len(FUNCS)),
       "-v: every site keeps the int3, shared with "
       "the other ubt", u.err[-600:])


def case_return_probe():
    """A return probe's site shared: the process is not taken (the kernel
    counts it all), as a return probe in user mode beside a kept int3 has
    been seen to crash the target (a tail call into a function that a
    kernel uretprobe of the same ubt probes)."""
    path = copy("kret")
    o = Tracer([UBT, "--mode", "kernel", "-e", prog(path)])
    ok(o.attached, "kret: another ubt in the kernel attached", o.err[-300:])
    u = Tracer([UBT, "-v", "-e", "uretprobe:%s:cov_* { @[probe] = "
                "count(); }" % path])
    ok(u.attached, "kret: ubt attached", u.err[-300:])
    # until ubt has decided on the process (not to take it)
    trc = cover.taken_run(path, lambda pid: read_err_until(
        u, r"^ubt: pid %d \(kret\): its probes stay" % pid, 0.1))
    ok(trc == 0, "kret: the target exits 0", str(trc))
    u.stop()
    o.stop()
    got = {}
    for m in re.finditer(r"^@\[uretprobe:[^\]]*:(\w+)\]: (\d+)$", u.out,
                         re.M):
        got[m.group(1)] = got.get(m.group(1), 0) + int(m.group(2))
    ok(got == {f: N for f in FUNCS}, "kret: ubt counts %d returns of each"
       % N, u.out[-600:])
    ok(counts(o.out) == {f: N for f in FUNCS},
       "kret: the other ubt counts %d calls of each" % N, o.out[-600:])
    ok(re.search(r"^ubt: pid \d+ \(kret\): its probes stay in the kernel: "
                 r"the return probe's site \S+ is shared with another "
                 r"tracer: pid %d \(ubt\)" % o.p.pid, u.err, re.M),
       "kret: -v says why the process stays in the kernel", u.err[-600:])


def read_err_until(t, pattern, timeout=60):
    """Read t's stderr (a Tracer's) until pattern is found in it."""
    fd = t.p.stderr.fileno()
    end = time.time() + timeout
    while time.time() < end and not re.search(pattern, t.err, re.M):
        r, _, _ = select.select([fd], [], [], 0.5)
        if r:
            chunk = os.read(fd, 65536).decode(errors="replace")
            if not chunk:
                break
            t.err += chunk
    return re.search(pattern, t.err, re.M) is not None


def case_return_after_take():
    """Another tracer's return probes arrive after the take: its int3s
    come back on sites whose calls user mode wraps, and the kernel takes
    their return addresses at the entry.  cov_jshort's wrapped call ends
    in a tail call of cov_back, whose kernel uretprobe (the other
    tracer's) is hit at the stack pointer of cov_jshort's entry: the
    kernel dropped its record of the cov_jshort call, and the return
    through its trampoline killed the target with SIGILL (the old build).
    Such a call now runs lower on the stack (RT_FN_WRAP_LOW): both count
    every return, the target exits 0, its code is the file's after."""
    path = copy("kafter")
    user = ("cov_tiny", "cov_zero", "cov_rdx", "cov_jshort")
    other = ("cov_jshort", "cov_back", "cov_tiny")
    u = Tracer([UBT, "-v", "-e", ",".join("uretprobe:%s:%s" % (path, f)
                                          for f in user) +
                " { @[probe] = count(); }"])
    ok(u.attached, "after: ubt attached", u.err[-300:])
    t = Fed([path])
    ok(t.run(str(N), "done") == "done %d" % N, "after: first %d calls" % N)
    ok(read_err_until(u, r"^ubt: pid %d \(kafter\) taken: 4 probe\(s\) "
                      r"in user mode" % t.p.pid),
       "after: the process taken, 4 probes in user mode", u.err[-600:])
    o = Tracer([UBT, "--mode", "kernel", "-e",
                ",".join("uretprobe:%s:%s" % (path, f) for f in other) +
                " { @[probe] = count(); }"])
    ok(o.attached, "after: another ubt's return probes in the kernel",
       o.err[-300:])
    ok(t.run(str(N), "done") == "done %d" % N,
       "after: %d calls with the other tracer there" % N)
    o.stop()
    u.stop()
    alive = t.p.poll() is None
    code = {f: code_in(t.p.pid, path, f) for f in FUNCS} if alive else {}
    ok(alive and all(code[f] == code_in_file(path, f) for f in FUNCS),
       "after: every function's bytes are the file's once both left",
       "exit status %s " % t.p.poll() + repr(code))
    ok(alive and t.run(str(N), "done") == "done %d" % N,
       "after: more calls")
    if alive:
        t.close_input()
    ok(alive and t.expect("exit") == "exit 0" and
       t.p.wait(timeout=60) == 0, "after: the target exits 0",
       str(t.p.poll()))
    got = {}
    for m in re.finditer(r"^@\[uretprobe:[^\]]*:(\w+)\]: (\d+)$", u.out,
                         re.M):
        got[m.group(1)] = got.get(m.group(1), 0) + int(m.group(2))
    ok(got == {f: 2 * N for f in user},
       "after: ubt counts %d returns of each" % (2 * N), u.out[-600:])
    got = {}
    for m in re.finditer(r"^@\[uretprobe:[^\]]*:(\w+)\]: (\d+)$", o.out,
                         re.M):
        got[m.group(1)] = got.get(m.group(1), 0) + int(m.group(2))
    ok(got == {f: N for f in other},
       "after: the other ubt counts %d returns of each" % N, o.out[-600:])


def case_both_after_take():
    """The same with a return probe that has sites on both sides
    (icall_short's stays in the kernel: RUN_BOTH): once the other
    tracer's int3s were back on the patched sites, the probe's kernel
    program counted their returns too (3000 for 2000, the old build).
    It now skips the returns of calls marked at a patched site's entry,
    the mark keyed on the return address too: icall_short, called from
    the same frame, still counts every return in the kernel."""
    path = copy("kboth")
    user = ("cov_tiny", "cov_zero", "cov_rdx", "cov_jshort", "icall_short")
    other = ("cov_jshort", "cov_back", "cov_tiny", "icall_short")
    u = Tracer([UBT, "-v", "-e", ",".join("uretprobe:%s:%s" % (path, f)
                                          for f in user) +
                " { @[probe] = count(); }"])
    ok(u.attached, "both after: ubt attached", u.err[-300:])
    t = Fed([path])
    ok(t.run(str(N), "done") == "done %d" % N,
       "both after: first %d calls" % N)
    ok(read_err_until(u, r"^ubt: pid %d \(kboth\) taken: 4 probe\(s\) "
                      r"in user mode" % t.p.pid),
       "both after: the process taken, 4 sites in user mode", u.err[-600:])
    o = Tracer([UBT, "--mode", "kernel", "-e",
                ",".join("uretprobe:%s:%s" % (path, f) for f in other) +
                " { @[probe] = count(); }"])
    ok(o.attached, "both after: another ubt's return probes in the kernel",
       o.err[-300:])
    ok(t.run(str(N), "done") == "done %d" % N,
       "both after: %d calls with the other tracer there" % N)
    o.stop()
    u.stop()
    alive = t.p.poll() is None
    code = {f: code_in(t.p.pid, path, f) for f in FUNCS} if alive else {}
    ok(alive and all(code[f] == code_in_file(path, f) for f in FUNCS),
       "both after: every function's bytes are the file's once both left",
       "exit status %s " % t.p.poll() + repr(code))
    if alive:
        t.close_input()
    ok(alive and t.expect("exit") == "exit 0" and
       t.p.wait(timeout=60) == 0, "both after: the target exits 0",
       str(t.p.poll()))
    got = {}
    for m in re.finditer(r"^@\[uretprobe:[^\]]*:(\w+)\]: (\d+)$", u.out,
                         re.M):
        got[m.group(1)] = got.get(m.group(1), 0) + int(m.group(2))
    ok(got == {f: 2 * N for f in user},
       "both after: ubt counts %d returns of each, none twice" % (2 * N),
       u.out[-600:])
    got = {}
    for m in re.finditer(r"^@\[uretprobe:[^\]]*:(\w+)\]: (\d+)$", o.out,
                         re.M):
        got[m.group(1)] = got.get(m.group(1), 0) + int(m.group(2))
    ok(got == {f: N for f in other},
       "both after: the other ubt counts %d returns of each" % N,
       o.out[-600:])


def pmu_events(path, func):
    """Uprobe PMU events on func of path, one per CPU, without BPF (as
    no scan can name them): their fds."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)

    class Attr(ctypes.Structure):
        _fields_ = [("type", ctypes.c_uint32), ("size", ctypes.c_uint32),
                    ("config", ctypes.c_uint64),
                    ("sample_period", ctypes.c_uint64),
                    ("sample_type", ctypes.c_uint64),
                    ("read_format", ctypes.c_uint64),
                    ("flags", ctypes.c_uint64),
                    ("wakeup_events", ctypes.c_uint32),
                    ("bp_type", ctypes.c_uint32),
                    ("config1", ctypes.c_uint64),
                    ("config2", ctypes.c_uint64),
                    ("pad", ctypes.c_uint64 * 8)]

    ptype = int(open("/sys/bus/event_source/devices/uprobe/type").read())
    name = ctypes.create_string_buffer(path.encode())
    fds = []
    for cpu in range(os.cpu_count()):
        a = Attr(type=ptype, size=ctypes.sizeof(Attr),
                 config1=ctypes.cast(name, ctypes.c_void_p).value,
                 config2=func_offset(path, func))
        fd = libc.syscall(298, ctypes.byref(a), -1, cpu, -1, 8)
        if fd < 0:
            for f in fds:
                os.close(f)
            return None
        fds.append(fd)
    return fds


def case_pmu():
    """A uprobe PMU event without BPF (no scan names it: the kernel
    describes no perf event without a program) on cov_rdx: its int3 was
    in ubt's new mapping of the file before ubt's own probes, so the site
    keeps it in the process taken.  The old build took it out: the event
    counted 178 of 1000 calls.  Both count every call."""
    import struct
    path = copy("pmu")
    fds = pmu_events(path, "cov_rdx")
    ok(fds is not None, "pmu: uprobe PMU events opened without BPF")
    if fds is None:
        return
    u = take(path, "pmu")
    n = sum(struct.unpack("Q", os.read(fd, 8))[0] for fd in fds)
    for fd in fds:
        os.close(fd)
    ok(n == N, "pmu: the PMU event counts %d calls" % N, str(n))
    ok(re.search(KEEP % "pmu" + r".*pmu\+0x[0-9a-f]+: shared with a uprobe "
                 r"consumer ubt cannot name", u.err, re.M),
       "-v: cov_rdx keeps the int3, shared with a consumer ubt cannot "
       "name", u.err[-600:])


def tracefs_write(name, text):
    """Append a line (no seek: tracefs refuses Python's "a" mode's)."""
    fd = os.open(os.path.join(TRACEFS, name), os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (text + "\n").encode())
    finally:
        os.close(fd)


def case_uprobe_events():
    """A uprobe event of tracefs on cov_rdx, enabled in an instance of its
    own (its hits go to that instance's buffer), hits in uprobe_profile."""
    path = copy("tfs")
    group = "ubtshare%d" % os.getpid()
    inst = os.path.join(TRACEFS, "instances", group)
    ev = "%s/cvrdx" % group
    try:
        tracefs_write("uprobe_events", "p:%s %s:%#x"
                      % (ev, path, func_offset(path, "cov_rdx")))
        os.mkdir(inst)
        tracefs_write(os.path.join(inst, "events", ev, "enable"), "1")
    except OSError as e:
        print("ok %d - # SKIP no tracefs uprobe events: %s"
              % (len(results) + 1, e))
        results.append(True)
        return
    try:
        u = take(path, "tfs")
        ok(re.search(KEEP % "tfs" + r".*\+%#x: shared with another "
                     r"tracer: uprobe_events %s" % (func_offset(
                         path, "cov_rdx"), ev), u.err, re.M),
           "-v: cov_rdx keeps the int3, shared with the uprobe event",
           u.err[-600:])
        hits = None
        with open(os.path.join(TRACEFS, "uprobe_profile")) as f:
            for line in f:
                w = line.split()
                if len(w) == 3 and w[0] == path and w[1] == "cvrdx":
                    hits = int(w[2])
        ok(hits == N, "the uprobe event counts %d hits" % N, repr(hits))
    finally:
        try:
            tracefs_write(os.path.join(inst, "events", ev, "enable"), "0")
        except OSError:
            pass
        if os.path.isdir(inst):
            os.rmdir(inst)
        tracefs_write("uprobe_events", "-:%s" % ev)


def main():
    if not_root("needs root"):
        return 77
    try:
        case_alone()
        case_other_ubt()
        case_return_probe()
        case_return_after_take()
        case_both_after_take()
        case_pmu()
        case_uprobe_events()
    finally:
        shutil.rmtree(cover.work, ignore_errors=True)
    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
