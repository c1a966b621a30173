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
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cover  # noqa: E402
from cover import FUNCS, N, Tracer, copy, counts, keys_once, prog  # noqa
from procmem import UBT, func_offset, not_root, ok, results  # noqa: E402

TRACEFS = "/sys/kernel/tracing"
KEEP = r"^ubt: pid \d+ \(%s\): (\d+) site\(s\) keep the kernel's int3 "


def take(path, name):
    """ubt -v system-wide on path while the target makes N calls of each
    function: its output, checked to count them all, each key once."""
    u = Tracer([UBT, "-v", "-e", prog(path)])
    ok(u.attached, "%s: ubt attached" % name, u.err[-300:])
    r = subprocess.run([path, str(N)], timeout=120)
    ok(r.returncode == 0, "%s: the target exits 0" % name,
       str(r.returncode))
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
    r = subprocess.run([path, str(N)], timeout=120)
    ok(r.returncode == 0, "kret: the target exits 0", str(r.returncode))
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
        case_uprobe_events()
    finally:
        shutil.rmtree(cover.work, ignore_errors=True)
    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
