#!/usr/bin/env python3
"""Threads exiting while ubt stops them (issue 25, item 5 of the issue).

A target whose threads come and go all the time (tests/user/exiting)
is traced by many short user-mode sessions in a row.  Stopping every
thread to patch or restore finds some of them exiting: ptrace(SEIZE)
of one gives EPERM, which is no other tracer; a thread stopped inside
clone() must not be taken for one outside it.  Every session must end
0 with the code restored (the bytes of the function as the file has
them), and the target must compute right throughout and exit 0.
UBT_EXITING_SESSIONS sets the number of sessions (default 40).  Prints
TAP.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (UBT, builddir, code_in, code_in_file,  # noqa: E402
                     done, not_root, ok)

TARGET = os.path.join(builddir, "tests", "user", "exiting")
SESSIONS = int(os.environ.get("UBT_EXITING_SESSIONS", "40"))
BOUND = 120


def main():
    if not_root():
        return 77
    work = tempfile.mkdtemp(prefix="ubt-exiting.")
    path = os.path.join(work, "exiting")
    shutil.copy(TARGET, path)
    orig = code_in_file(path, "exiting_work")
    t = subprocess.Popen([path, "8"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    prog = ("uprobe:%s:exiting_work { @c = count(); } "
            "interval:ms:20 { exit(); }" % path)
    bad_status, bad_code, first = 0, 0, ""
    for i in range(SESSIONS):
        if t.poll() is not None:
            break
        u = subprocess.run([UBT, "-p", str(t.pid), "-e", prog],
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=BOUND)
        err = u.stderr.decode(errors="replace")
        if u.returncode != 0 or "@c: " not in u.stdout.decode():
            bad_status += 1
            first = first or "session %d: status %d: %s" % (
                i, u.returncode, err[-300:])
        if t.poll() is None and code_in(t.pid, path, "exiting_work") != orig:
            bad_code += 1
            first = first or "session %d: code left patched" % i
    ok(t.poll() is None, "the target runs through %d sessions" % SESSIONS,
       "it ended with status %s" % t.returncode)
    ok(bad_status == 0, "every session ends 0 with its count",
       "%d failed; %s" % (bad_status, first))
    ok(bad_code == 0, "after every session the code is the file's",
       "%d left patched; %s" % (bad_code, first))
    out, err = t.communicate(input=b"", timeout=BOUND)
    ok(t.returncode == 0 and out.startswith(b"exiting: "),
       "the target computes right and exits 0",
       "status %s %r %r" % (t.returncode, out, err[-200:]))
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
