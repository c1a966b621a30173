#!/usr/bin/env python3
"""Probes with sites in both domains, against --mode kernel (issue 14).

Every case of tests/runtime/sites.test whose output is deterministic
(DIFFERENTIAL exact, and one bpftrace 0.17 cannot run) is run three times: with --mode kernel, with the
default --mode auto, and with --mode auto -v. The first two must pass the
case and print the same stdout and stderr byte for byte; the third must
pass it too and say (-v) that a probe runs in user mode (most at some
sites only), so that the comparison is between two domains, not the
kernel twice.
Prints TAP.
"""
import importlib.machinery
import importlib.util
import os
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


def main():
    srcdir = os.environ.get("top_srcdir") or "."
    builddir = os.environ.get("top_builddir") or "."
    rr = load_runner(os.path.join(srcdir, "tests", "runtime-runner"))
    rtdir = os.path.abspath(os.path.join(srcdir, "tests", "runtime"))
    ubt = os.environ.get("UBT") or os.path.join(builddir, "ubt")
    also = ("sites.separate_windows_in_one_function",)
    cases = [c for c in rr.load_corpus(rtdir)
             if c.full.startswith("sites.") and
             (c.diff == "exact" or c.full in also)]

    tmp = tempfile.mkdtemp(prefix="ubt-sites-")
    try:
        targets = os.path.join(tmp, "targets")
        shutil.copytree(os.path.join(builddir, "tests", "targets"), targets,
                        ignore=shutil.ignore_patterns(
                            "*.o", ".deps", ".dirstamp", "*.log", "*.trs"))
        opts = types.SimpleNamespace(rtdir=rtdir, targets=targets,
                                     verbose=False)
        kern = rr.Runner(opts, [ubt], ["--mode", "kernel"])
        auto = rr.Runner(opts, [ubt], [])
        verb = rr.Runner(opts, [ubt], ["-v"])
        print("1..%d" % (len(cases) + 1))
        bad = 0
        ok = len(cases) >= 5
        print("%sok 1 - %d cases selected" % ("" if ok else "not ",
                                              len(cases)))
        bad += not ok
        for num, case in enumerate(cases, 2):
            ok_, oa, ov = kern.run(case), auto.run(case), verb.run(case)
            diffs = []
            for what, runner, out in (("--mode kernel", kern, ok_),
                                      ("--mode auto", auto, oa),
                                      ("-v", verb, ov)):
                fails = runner.check(case, out)
                if fails:
                    diffs.append(what + " fails: " + "; ".join(fails))
            for what, a, b in (("stdout", ok_.stdout, oa.stdout),
                               ("stderr", ok_.stderr, oa.stderr)):
                d = rr.first_difference(a, b)
                if d:
                    diffs.append("%s line %d: kernel %r, auto %r" %
                                 (what, d[0], d[1], d[2]))
            if b": user mode" not in ov.stderr:
                diffs.append("-v does not say that a probe runs in user "
                             "mode")
            if not diffs:
                print("ok %d - %s: --mode auto as --mode kernel" %
                      (num, case.full))
                continue
            bad += 1
            print("not ok %d - %s" % (num, case.full))
            for d in diffs:
                print("#   " + d)
            for what, out in (("kernel", ok_), ("auto", oa), ("-v", ov)):
                print("#   %s: %s (exit %s)" % (what, out.cmd, out.rc))
                rr.show(out.stdout + out.stderr)
        return 1 if bad else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
