#!/usr/bin/env python3
"""The uprobe part of the runtime corpus in both modes (issue 4 item 6).

Every enabled case (tests/runtime/enabled), and every case of
tests/native/*.test, whose program has a uprobe, uretprobe or usdt probe
and runs a -c command or a -p process is run twice, with
--mode kernel and with --mode user: both runs must pass the case, and for
cases whose output is deterministic (DIFFERENTIAL exact) stdout and stderr
must be byte-identical. Cases listed in tests/native/kernel-only.txt use
something user mode does not do: there --mode user must fail with ubt's
"cannot run ... in user mode" error, and the list says why. Prints TAP.
"""
import importlib.machinery
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import types


def load_runner(path):
    sys.dont_write_bytecode = True      # no __pycache__ in the source tree
    loader = importlib.machinery.SourceFileLoader("runtime_runner", path)
    spec = importlib.util.spec_from_loader("runtime_runner", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def is_user_case(case):
    text = " ".join([case.prog or "", case.run or "", case.args or ""])
    if not re.search(r"\b(u(ret)?probe|usdt):", text):
        return False
    return re.search(r"(^|\s)-[cp](\s|$)", text) is not None


def main():
    srcdir = os.environ.get("top_srcdir") or "."
    builddir = os.environ.get("top_builddir") or "."
    rr = load_runner(os.path.join(srcdir, "tests", "runtime-runner"))
    rtdir = os.path.abspath(os.path.join(srcdir, "tests", "runtime"))
    ubt = os.environ.get("UBT") or os.path.join(builddir, "ubt")
    cases = rr.load_corpus(rtdir)
    enabled = [n for n, _, _ in rr.read_list(os.path.join(rtdir, "enabled"))]
    cases = [c for c in cases if rr.matches(c, enabled) and is_user_case(c)]
    # and ubt's own user-mode cases (tests/native/*.test), all of them
    cases += [c for c in rr.load_corpus(os.path.join(srcdir, "tests",
                                                     "native"))
              if is_user_case(c)]
    # CASES='builtins.*' (shell globs, space-separated): only those
    if os.environ.get("CASES"):
        cases = [c for c in cases if rr.matches(c, os.environ["CASES"].split())]
    kernel_only = {}
    for name, reason, _ in rr.read_list(os.path.join(
            srcdir, "tests", "native", "kernel-only.txt")):
        kernel_only[name] = reason

    tmp = tempfile.mkdtemp(prefix="ubt-usermode-")
    try:
        targets = os.path.join(tmp, "targets")
        shutil.copytree(os.path.join(builddir, "tests", "targets"), targets,
                        ignore=shutil.ignore_patterns(
                            "*.o", ".deps", ".dirstamp", "*.log", "*.trs"))
        opts = types.SimpleNamespace(rtdir=rtdir, targets=targets,
                                     verbose=False)
        kern = rr.Runner(opts, [ubt], ["--mode", "kernel"])
        user = rr.Runner(opts, [ubt], ["--mode", "user"])
        print("1..%d" % (len(cases) + 1))
        bad = 0
        ok = len(cases) > 10
        print("%sok 1 - %d uprobe cases selected" %
              ("" if ok else "not ", len(cases)))
        bad += not ok
        for num, case in enumerate(cases, 2):
            ou = user.run(case)
            if case.full in kernel_only:
                err = ou.stderr.decode(errors="replace")
                good = ou.rc == 1 and "in user mode:" in err
                print("%sok %d - %s: --mode user refuses (%s)" %
                      ("" if good else "not ", num, case.full,
                       kernel_only[case.full]))
                if not good:
                    bad += 1
                    rr.show(ou.stdout + ou.stderr)
                continue
            ok_ = kern.run(case)
            if ok_.skip or ou.skip:
                print("ok %d - %s # SKIP %s" % (num, case.full,
                                                ok_.skip or ou.skip))
                continue
            diffs = []
            fk, fu = kern.check(case, ok_), user.check(case, ou)
            if fk:
                diffs.append("--mode kernel fails: " + "; ".join(fk))
            if fu:
                diffs.append("--mode user fails: " + "; ".join(fu))
            if case.diff == "exact":
                for what, a, b in (("stdout", ok_.stdout, ou.stdout),
                                   ("stderr", ok_.stderr, ou.stderr)):
                    d = rr.first_difference(a, b)
                    if d:
                        diffs.append("%s line %d: kernel %r, user %r" %
                                     (what, d[0], d[1], d[2]))
            if not diffs:
                print("ok %d - %s" % (num, case.full))
                continue
            bad += 1
            print("not ok %d - %s # modes differ" % (num, case.full))
            for d in diffs:
                print("#   " + d)
            print("#   kernel: %s (exit %s)" % (ok_.cmd, ok_.rc))
            rr.show(ok_.stdout + ok_.stderr)
            print("#   user: %s (exit %s)" % (ou.cmd, ou.rc))
            rr.show(ou.stdout + ou.stderr)
        return 1 if bad else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
