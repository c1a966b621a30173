#!/usr/bin/python3
"""bench/coverage.py: which function entries user mode patches (issue 26).

For each binary (libc, libssl, libcrypto, libstdc++ where installed, and
the bench's own target), runs `ubt -v --dry-run` system-wide on
`uprobe:BIN:*` with a probe that reads nothing of the entry state
(`count()`) and one that reads arg0-arg5, and prints, per binary and
program, how many function entries run in user mode and why the others
run in the kernel, by reason (the reasons -v prints, with offsets and
instruction names folded).  Not a timed test: the figures are exact.
With --before PATH, the same columns for another ubt (an older build),
side by side.

Usage: bench/coverage.py --ubt PATH [--before PATH] [--target PATH]...
"""

import argparse
import os
import re
import subprocess
import sys

LIBDIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")
LIBS = ("libc.so.6", "libssl.so.3", "libcrypto.so.3", "libstdc++.so.6")
PROGS = (
    ("count()", "{ @c = count(); }"),
    ("arg0-arg5", "{ @s = sum(arg0 + arg1 + arg2 + arg3 + arg4 + arg5); }"),
)
# -v's reasons, folded into classes (first match)
CLASSES = (
    (r"shorter than \d+ bytes after its entry", "too short after the entry"),
    (r"which the probe reads", "entry changes a register the probe reads"),
    (r"changes an argument register", "entry changes an argument register"),
    (r"changes %rsp", "entry changes %rsp"),
    (r"entry instruction .* transfers control",
     "the entry instruction is a jmp/call/ret"),
    (r"transfers control", "a branch right after the instruction"),
    (r"inside the patched window", "a branch targets the window"),
    (r"indirect call", "indirect call in the window"),
    (r"a call in the first", "call in the window"),
    (r"cannot be relocated", "an instruction cannot be relocated"),
    (r"past the end", "window past the end of the function"),
    (r"only endbr64", "function is only endbr64"),
    (r"no size", "symbol without a size"),
)


def fold(reason):
    for rx, name in CLASSES:
        if re.search(rx, reason):
            return name
    return re.sub(r"\+0x[0-9a-f]+|'[^']*'", "", reason)


def find_lib(name):
    for d in LIBDIRS:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return os.path.realpath(p)
    return None


def measure(ubt, binary, body):
    """(user, total, {reason: n}) of ubt -v --dry-run on binary:*"""
    prog = "uprobe:%s:* %s" % (binary, body)
    r = subprocess.run([ubt, "-v", "--dry-run", "-e", prog],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=600)
    user, total, why = 0, 0, {}
    for line in r.stderr.splitlines():
        m = re.match(r"^  uprobe:\S+?:(\S+): (user mode|kernel)(?: \((.*)\))?$",
                     line)
        if not m:
            continue
        total += 1
        if m.group(2) == "user mode":
            user += 1
        else:
            k = fold(m.group(3) or "")
            why[k] = why.get(k, 0) + 1
    if not total:
        return None, r.stderr.strip().splitlines()[:1]
    return (user, total, why), None


def pct(user, total):
    return "%d of %d (%.1f%%)" % (user, total, 100.0 * user / total)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ubt", required=True)
    ap.add_argument("--before", help="another ubt, side by side")
    ap.add_argument("--target", action="append", default=[],
                    help="another binary (the bench's own target)")
    a = ap.parse_args()
    bins = [b for b in (find_lib(n) for n in LIBS) if b]
    bins += [os.path.realpath(t) for t in a.target if os.path.exists(t)]
    tracers = [("ubt", a.ubt)] + ([("before", a.before)] if a.before
                                  else [])
    print("\nUser-mode coverage of function entries "
          "(ubt -v --dry-run, system-wide, uprobe:BIN:*)\n")
    head = "| binary | probe | " + " | ".join(
        "%s: user mode" % t for t, _ in tracers) + " |"
    print(head)
    print("|" + "---|" * (2 + len(tracers)))
    notes = []
    for b in bins:
        for pname, body in PROGS:
            cells = []
            for tname, ubt in tracers:
                res, err = measure(ubt, b, body)
                if not res:
                    cells.append("n/a")
                    notes.append("%s %s %s: %s" % (tname, b, pname,
                                                   err[0] if err else "?"))
                    continue
                user, total, why = res
                cells.append(pct(user, total))
                for k, n in sorted(why.items(), key=lambda kv: -kv[1]):
                    notes.append("%s %s %s: %d %s" % (
                        tname, os.path.basename(b), pname, n, k))
            print("| %s | %s | %s |" % (os.path.basename(b), pname,
                                       " | ".join(cells)))
    print("\nIn the kernel, by reason:")
    for n in notes:
        print("  " + n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
