#!/usr/bin/env python3
"""Long attaches show progress on a terminal (issue 24, item 6).

An attach of hundreds of sites (uprobe:libubt-many.so:ubt_many_*, 502
functions, in a busy ubt-many) prints "ubt: sites patched: N of 502" on
stderr when it is a terminal, rewritten in place and erased at the end; never
when stderr is a pipe.  The counts are exact, the target runs on and
exits 0, and its code is the file's after each run.  Prints TAP.
"""
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import code_in, code_in_file, ok, results  # noqa: E402

builddir = os.environ.get("top_builddir") or "."
UBT = os.environ.get("UBT") or os.path.join(builddir, "ubt")
targets = os.path.join(builddir, "tests", "targets")
work = tempfile.mkdtemp(prefix="ubt-progress.")
try:
    # uprobes belong to a file: private copies ($ORIGIN finds the library)
    for f in ("ubt-many", "libubt-many.so"):
        shutil.copy(os.path.join(targets, f), work)
    exe = os.path.join(work, "ubt-many")
    lib = os.path.join(work, "libubt-many.so")
    t = subprocess.Popen([exe, "1", "wait"], stdout=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    if t.stdout.readline() != b"ready\n":
        print("Bail out! ubt-many did not start")
        sys.exit(99)
    prog = ("uprobe:%s:ubt_many_* { @ = count(); } "
            "interval:ms:500 { exit(); }" % lib)
    argv = ["timeout", "--foreground", "120", UBT, "--mode", "user",
            "-p", str(t.pid), "-e", prog]

    # stderr a terminal
    master, slave = os.openpty()
    u = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave,
                         stdin=subprocess.DEVNULL)
    os.close(slave)
    err = b""
    while True:
        r, _, _ = select.select([master], [], [], 130)
        if not r:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    out = u.stdout.read().decode()
    rc = u.wait()
    os.close(master)
    text = err.decode(errors="replace")
    ok(rc == 0 and "\n@: " in out, "attach of 502 sites: the run ends well",
       "exit %d: %r %r" % (rc, out[-200:], text[-300:]))
    ok("\rubt: sites patched: 502 of 502" in text and
       "\rubt: sites patched: 0 of 502" in text,
       "a terminal: the count of sites patched, up to every one",
       repr(text[:300]))
    ok(text.count("\r\x1b[K") == 1 and
       text.rfind("\r\x1b[K") > text.rfind("sites patched"),
       "a terminal: the line is erased once the sites are in place",
       repr(text[-300:]))
    ok(code_in(t.pid, lib, "ubt_many_000") ==
       code_in_file(lib, "ubt_many_000"),
       "after the run: the code is the file's")

    # stderr a pipe
    u = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL)
    ok(u.returncode == 0 and b"\n@: " in u.stdout and
       b"sites patched" not in u.stderr and b"\r" not in u.stderr,
       "a pipe: no progress", repr(u.stderr[-300:]))
    ok(code_in(t.pid, lib, "ubt_many_000") ==
       code_in_file(lib, "ubt_many_000"),
       "after the second run: the code is the file's")

    t.send_signal(signal.SIGUSR1)
    tail = t.stdout.read().decode()
    ok(t.wait() == 0 and tail.startswith("rounds "),
       "the target ran on and exited 0", repr(tail))
finally:
    shutil.rmtree(work, ignore_errors=True)
print("1..%d" % len(results))
sys.exit(0)
