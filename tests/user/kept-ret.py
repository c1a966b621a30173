#!/usr/bin/env python3
"""Another tracer's return probes arrive while ubt's return probes run in
user mode in a -p process (tests/user/sysw-share.py does it system-wide).

The kernel takes the return address of each call at the entry's int3 and
drops its record of a call when another of its uprobes is hit at the same
stack pointer with another return address there.  ubt wraps cov_jshort
(the whole function runs in the trampoline), whose wrapped call ends in a
tail call of cov_back; the other tracer's uretprobes on both: the old
build's target died of SIGILL at the first such return.  Now the wrapped
call runs lower on the stack (RT_FN_WRAP_LOW): both tracers count every
return exactly, the code bytes are the file's after both left, the
target exits 0.  Target: a copy of tests/targets/ubt-cover.  Prints TAP.
"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cover import COVER, FUNCS, Tracer  # noqa: E402
from procmem import (UBT, Fed, code_in, code_in_file, not_root,  # noqa
                     ok, results)

N = 1000


def counts(out):
    got = {}
    for m in re.finditer(r"^@\[uretprobe:[^\]]*:(\w+)\]: (\d+)$", out,
                         re.M):
        got[m.group(1)] = got.get(m.group(1), 0) + int(m.group(2))
    return got


def main():
    if not_root("needs root"):
        return 77
    work = tempfile.mkdtemp(prefix="ubt-kept-ret.")
    try:
        path = os.path.join(work, "kret")
        shutil.copy(COVER, path)
        mine = ("cov_tiny", "cov_jshort")
        other = ("cov_jshort", "cov_back")
        t = Fed([path])
        ok(t.run("1", "done") == "done 1", "the target runs")
        u = Tracer([UBT, "-v", "-p", str(t.p.pid), "-e",
                    ",".join("uretprobe:%s:%s" % (path, f) for f in mine) +
                    " { @[probe] = count(); }"])
        ok(u.attached and re.search(r"^  uretprobe:\S+:cov_jshort: user "
                                    r"mode", u.err, re.M),
           "ubt attached, cov_jshort in user mode", u.err[-600:])
        ok(t.run(str(N), "done") == "done %d" % N, "%d calls" % N)
        o = Tracer([UBT, "--mode", "kernel", "-e",
                    ",".join("uretprobe:%s:%s" % (path, f) for f in other) +
                    " { @[probe] = count(); }"])
        ok(o.attached, "another ubt's return probes in the kernel",
           o.err[-300:])
        ok(t.run(str(N), "done") == "done %d" % N,
           "%d calls with the other tracer there" % N)
        o.stop()
        u.stop()
        alive = t.p.poll() is None
        code = {f: code_in(t.p.pid, path, f) for f in FUNCS} if alive \
            else {}
        ok(alive and all(code[f] == code_in_file(path, f) for f in FUNCS),
           "the functions' bytes are the file's once both left",
           "exit status %s %r" % (t.p.poll(), code))
        if alive:
            t.close_input()
        ok(alive and t.expect("exit") == "exit 0" and
           t.p.wait(timeout=60) == 0, "the target exits 0",
           str(t.p.poll()))
        ok(counts(u.out) == {f: 2 * N for f in mine},
           "ubt counts %d returns of each" % (2 * N), u.out[-600:])
        ok(counts(o.out) == {f: N for f in other},
           "the other ubt counts %d returns of each" % N, o.out[-600:])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("1..%d" % len(results))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
