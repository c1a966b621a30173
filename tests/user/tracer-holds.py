#!/usr/bin/env python3
"""Another ptrace user holds the target when ubt ends (issue 25, item 4).

gdb attaches to the target while ubt traces it in user mode and keeps it
until the test lets it go; ubt is asked to end meanwhile.  It cannot
stop the target to restore its code: it must say so, naming the next ubt
as the one that restores it, and exit non-zero, never 0 with the code
patched.  Once gdb let go, the target runs on; the next ubt removes the
jumps left, counts exactly, and leaves the code as the file has it; the
target computes right throughout and exits 0.  Prints TAP.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import Fed, code_in, code_in_file, ok, results  # noqa: E402

builddir = os.environ.get("top_builddir") or "."
UBT = os.environ.get("UBT") or os.path.join(builddir, "ubt")
SHARE = os.path.join(builddir, "tests", "targets", "ubt-share")
GDB = shutil.which("gdb")
work = tempfile.mkdtemp(prefix="ubt-holds.")
BOUND = 120


def attached(u):
    seen = b""
    while b"NOTIFY_PROBES_ATTACHED" not in seen:
        line = u.stderr.readline()
        if not line:
            break
        seen += line
    return seen


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP not root")
        return 77
    if not GDB:
        print("Bail out! gdb not found")
        return 99
    path = os.path.join(work, "holds")
    shutil.copy(SHARE, path)
    t = Fed([path])
    orig = code_in_file(path, "share_push")
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    env = dict(os.environ, __BPFTRACE_NOTIFY_PROBES_ATTACHED="1")
    u = subprocess.Popen([UBT, "-p", str(t.p.pid), "-e", prog],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    attached(u)
    ok(t.run("1000", "done 1000", timeout=BOUND),
       "the target computes under ubt")
    fifo = os.path.join(work, "go")
    os.mkfifo(fifo)
    g = subprocess.Popen([GDB, "-nx", "-batch", "-p", str(t.p.pid),
                          "-ex", "shell cat %s" % fifo, "-ex", "detach"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    # gdb holds it once the target's TracerPid is gdb's
    held = False
    for _ in range(BOUND * 10):
        with open("/proc/%d/status" % t.p.pid) as f:
            st = f.read()
        if "TracerPid:\t%d" % g.pid in st:
            held = True
            break
        if g.poll() is not None:
            break
        subprocess.run(["sleep", "0.1"])
    ok(held, "gdb holds the target")
    u.send_signal(signal.SIGINT)
    out, err = u.communicate(timeout=BOUND)
    err = err.decode(errors="replace")
    ok(u.returncode not in (0, None),
       "ubt cannot restore the code: it exits non-zero",
       "status %s" % u.returncode)
    ok("cannot stop pid %d to restore its code" % t.p.pid in err and
       "the next ubt" in err, "and says the next ubt restores it",
       err[-400:])
    with open(fifo, "w") as f:
        f.write("go\n")
    g.communicate(timeout=BOUND)
    # the jumps left, probes idle: the target runs on
    ok(t.run("1000", "done 1000", timeout=BOUND),
       "once gdb let go, the target computes right")
    u = subprocess.Popen([UBT, "-v", "-p", str(t.p.pid), "-e", prog],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    seen = attached(u)
    t.run("777", "done 777", timeout=BOUND)
    u.send_signal(signal.SIGINT)
    out, err = u.communicate(timeout=BOUND)
    err = (seen + err).decode(errors="replace")
    ok(u.returncode == 0 and b"@c: 777\n" in out and
       "left in pid %d by a ubt" % t.p.pid in err,
       "the next ubt removes the jumps left and counts exactly",
       "status %s %r %r" % (u.returncode, out[-100:], err[-300:]))
    ok(code_in(t.p.pid, path, "share_push") == orig,
       "then the code is the file's")
    t.close_input()
    ok(t.p.wait(timeout=BOUND) == 0, "the target exits 0")
    print("1..%d" % len(results))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
