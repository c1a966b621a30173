#!/usr/bin/env python3
"""Compile time grows linearly with the statements of a probe.

A probe of 10000 statements once took 22 s to compile and one of 70000
did not finish: list scheduling and stack colouring in LLVM, a source
scan per assignment and per operator in sema, all quadratic. For each
kind of statement, the CPU time (user + system, of ubt and what it runs)
of a probe of 70000 statements must stay under RATIO times that of 7000,
plus SLACK seconds: linear growth is 10 times, these measure 8 to 20
(caches), the quadratic code measured over 90. CPU time, not wall time,
so that a loaded machine does not make the test fail; no absolute bound
on the machine's speed.

Then the limits that make a program too large for BPF are errors that
say so, not an abort of LLVM: a probe of 3000 printf()s. Prints TAP.
"""
import os
import resource
import subprocess
import sys
import tempfile

builddir = os.environ.get("top_builddir") or "."
UBT = os.environ.get("UBT") or os.path.join(builddir, "ubt")
RATIO = 40
SLACK = 5.0
SMALL, BIG = 7000, 70000

n = 0
bad = 0


def ok(cond, name, detail=""):
    global n, bad
    n += 1
    if cond:
        print("ok %d - %s" % (n, name))
    else:
        bad += 1
        print("not ok %d - %s" % (n, name))
        for line in detail.splitlines():
            print("# " + line)


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(args, timeout):
    """Run ubt ARGS; return (cpu seconds, exit status, stdout, stderr).
    The status is None when the timeout killed it."""
    before = children_cpu()
    p = subprocess.Popen([UBT] + args, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        rc = None
    return (children_cpu() - before, rc, out.decode(errors="replace"),
            err.decode(errors="replace"))


def program(kind, count):
    if kind == "map":
        body = "@x = 1;\n" * count
    elif kind == "variable":
        body = "$a = 1;\n" * count + "@x = $a;\n"
    elif kind == "if":
        body = "$a = 1;\n" + "".join(
            "if ($a == %d) { @x = %d; }\n" % (i, i) for i in range(count))
    else:
        raise ValueError(kind)
    return "BEGIN {\n" + body + "exit();\n}\n"


def scale(tmp, kind, args, expect_out):
    small = os.path.join(tmp, "small.bt")
    big = os.path.join(tmp, "big.bt")
    with open(small, "w") as f:
        f.write(program(kind, SMALL))
    with open(big, "w") as f:
        f.write(program(kind, BIG))
    # the smaller of two runs: the start of the first one pays for
    # loading the binary
    t_small = None
    for _ in range(2):
        t, rc, out, err = run(args + [small], 300)
        if rc != 0 or expect_out not in out:
            ok(False, "%s: %d statements compile" % (kind, SMALL),
               "exit %s\n%s%s" % (rc, out[-500:], err[-1000:]))
            return
        t_small = t if t_small is None else min(t_small, t)
    bound = RATIO * t_small + SLACK
    # the wall clock bounds a run that would take minutes
    t_big, rc, out, err = run(args + [big], 3 * bound + 30)
    ok(rc == 0 and expect_out in out and t_big <= bound,
       "%s: %d statements compile in %.1f s of CPU, at most %d x %.2f s "
       "+ %.0f s" % (kind, BIG, t_big, RATIO, t_small, SLACK),
       "exit %s%s\n%s%s" % (rc, " (killed)" if rc is None else "",
                            out[-500:], err[-1000:]))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        # a real run: the kernel loads the program of 70000 statements
        if os.geteuid() == 0:
            scale(tmp, "map", [], "@x: 1")
        else:
            scale(tmp, "map", ["--dry-run"], "")
        scale(tmp, "variable", ["--dry-run"], "")
        scale(tmp, "if", ["--dry-run"], "")

        prog = os.path.join(tmp, "printf.bt")
        with open(prog, "w") as f:
            f.write("BEGIN {\n" + 'printf("%d\\n", 1);\n' * 3000 + "}\n")
        t, rc, out, err = run(["--dry-run", prog], 300)
        ok(rc == 1 and "ubt: cannot emit BPF code: program too large: a "
           "jump spans more than 32767 instructions" in err,
           "3000 printf()s: too large for BPF jumps, an error",
           "exit %s\n%s" % (rc, err[-1000:]))
    print("1..%d" % n)
    return 0


sys.exit(main())
