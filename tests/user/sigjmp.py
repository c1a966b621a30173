#!/usr/bin/env python3
"""Signal handlers that leave by siglongjmp() while the code they
interrupt is anywhere in or around wrapped calls, the push and pop of a
return probe's shadow entry included (tests/targets/sigjmp.cc), with ubt
--mode user -c: a 20 us SIGALRM timer, each signal leaving by
siglongjmp() to main's loop (jmp), from a wrapped function the handler
calls (call), the same on a sigaltstack far from the stack (alt) or in
main's frame (altnear), or into a wrapped function's own loop (inner);
handlers nested in handlers (nest: SA_NODEFER, every other one leaves by
siglongjmp(), cutting short the handlers it interrupted too);
and a handler on the sigaltstack in main's frame that calls a wrapped
function and returns (altret: the interrupted calls are live below it).
The mode throw (a C++ exception from the handler) is not run: see
man/ubt.8, USER MODE.

Each run: the target runs to its end (exit 0, "done", no wrong return
value), no return probe hit is lost (no "shadow stack was full"
warning), and each function's return count lies between the returns its
callers saw and that plus the handler's exits (an exit may come after a
return probe fired, before the caller saw the return; nested handlers:
one in each handler it cuts short too, three levels counted).

SIGJMP_RUNS (default 1) runs of SIGJMP_MSEC (default 2000) ms per mode;
SIGJMP_MODES picks modes (space-separated).  Prints TAP.
"""
import os
import re
import subprocess
import sys

builddir = os.environ.get("top_builddir") or "."
UBT = os.environ.get("UBT") or os.path.join(builddir, "ubt")
EXE = os.path.abspath(os.path.join(builddir, "tests", "targets",
                                   "ubt-sigjmp"))
RUNS = int(os.environ.get("SIGJMP_RUNS", "1"))
MSEC = int(os.environ.get("SIGJMP_MSEC", "2000"))
MODES = os.environ.get("SIGJMP_MODES",
                       "jmp call nest alt altnear altret inner").split()
PROG = ("uretprobe:%(t)s:ubt_sj_f { @f = count(); } "
        "uretprobe:%(t)s:ubt_sj_leaf { @leaf = count(); } "
        "uretprobe:%(t)s:ubt_sj_mid { @mid = count(); }") % {"t": EXE}
n = 0


def ok(cond, name, detail=""):
    global n
    n += 1
    print("%sok %d - %s%s" % ("" if cond else "not ", n, name,
                              "" if cond or not detail else " # " + detail))
    sys.stdout.flush()
    return cond


def run(mode):
    """One traced run: a list of problems (empty: passed)."""
    try:
        p = subprocess.run([UBT, "--mode", "user", "-e", PROG, "-c",
                            "%s %d %s" % (EXE, MSEC, mode)],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=MSEC / 1000 + 60)
    except subprocess.TimeoutExpired:
        return ["timeout"]
    out = p.stdout.decode(errors="replace")
    bad = []
    if p.returncode:
        bad.append("ubt exit %d" % p.returncode)
    for what in ("killed by signal", "wrong result", "were not recorded",
                 "terminate called"):
        if what in out:
            bad.append(what)
    seen = re.search(r"^f (\d+) leaf (\d+) mid (\d+) jumps (\d+)$", out,
                     re.M)
    if not seen or "\ndone\n" not in out:
        return bad + ["no counts: " + out[-300:].replace("\n", " | ")]
    jumps = int(seen.group(4)) * (3 if mode == "nest" else 1)
    for i, name in enumerate(("f", "leaf", "mid")):
        want = int(seen.group(i + 1))
        got = re.search(r"^@%s: (\d+)$" % name, out, re.M)
        got = int(got.group(1)) if got else 0
        if not want <= got <= want + jumps:
            bad.append("@%s %d, calls %d, exits %d" %
                       (name, got, want, jumps))
    return bad


def main():
    if not os.access(EXE, os.X_OK):
        print("1..0 # SKIP %s not built" % EXE)
        return 0
    print("1..%d" % (len(MODES) * RUNS))
    failed = 0
    for mode in MODES:
        fails = 0
        for i in range(RUNS):
            bad = run(mode)
            fails += bool(bad)
            ok(not bad, "%s run %d" % (mode, i + 1), "; ".join(bad))
        failed += fails
        sys.stderr.write("# %s: %d of %d runs failed\n" % (mode, fails, RUNS))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
