#!/usr/bin/env python3
"""No writable alias of code in the target (issue 25, item 1).

ubt's memfd is mapped in the target twice over: read-write for the
control block, maps and rings, and read-execute for the code slices
near each patched module.  No range of the memfd that is mapped
executable may also be mapped writable: a stray write of the target
would plant code.  Checked in /proc/PID/maps while ubt runs, after it
ended and after a second session, in an ordinary target and in one with
PR_SET_MDWE (where the kernel refuses writable-executable memory, but
not an alias).  Every result the target computes is checked, and it
exits 0.  Prints TAP.
"""
import ctypes
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (Fed, attached, code_in, done,  # noqa: E402
                     memfd_maps, not_root, ok, share_target, ubt_p)

work = tempfile.mkdtemp(prefix="ubt-alias.")
PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1


def aliases(pid):
    """Writable mappings that cover a file range mapped executable."""
    m = memfd_maps(pid)
    bad = []
    for perms, lo, hi, ino in m:
        if "x" not in perms:
            continue
        for perms2, lo2, hi2, ino2 in m:
            if ino2 == ino and "w" in perms2 and lo2 < hi and lo < hi2:
                bad.append("%s %x-%x r-x under %s %x-%x" %
                           (ino, lo, hi, perms2, lo2, hi2))
    return bad, sum("x" in e[0] for e in m)


def mdwe():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0):
        os._exit(77)


def mdwe_supported():
    p = subprocess.run([sys.executable, "-c",
                        "import ctypes,sys;"
                        "sys.exit(ctypes.CDLL(None).prctl(65,1,0,0,0)!=0)"])
    return p.returncode == 0


def case(name, fed):
    path, t, orig = share_target(work, name, fed)
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    for session in (1, 2):
        u = ubt_p(t.p.pid, prog)
        seen = attached(u)
        done = t.run("1000", "done 1000", timeout=60)
        during, nx = aliases(t.p.pid)
        u.send_signal(2)
        out, err = u.communicate(timeout=60)
        after, _ = aliases(t.p.pid)
        ok(b"@c: 1000" in out and done and nx > 0,
           "%s, session %d: counted in user mode" % (name, session),
           (seen + err).decode(errors="replace")[-300:])
        ok(not during, "%s, session %d: no writable alias of code while "
           "ubt runs" % (name, session), "; ".join(during))
        ok(not after, "%s, session %d: none once it ended" %
           (name, session), "; ".join(after))
        ok(code_in(t.p.pid, path, "share_push") == orig,
           "%s, session %d: the code is the file's again" % (name, session))
    t.close_input()
    ok(t.p.wait(timeout=60) == 0, "%s: the target exits 0" % name)


class MdweFed(Fed):
    """Fed, with PR_SET_MDWE set in the child before it runs."""

    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, preexec_fn=mdwe)
        self.buf = ""
        self.err_seen = ""


def main():
    if not_root():
        return 77
    case("plain", Fed)
    if mdwe_supported():
        case("mdwe", MdweFed)
    else:
        print("# PR_SET_MDWE: not in this kernel, its case left out")
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
