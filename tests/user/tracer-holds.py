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
from procmem import (attached, code_in, done, not_root, ok,  # noqa: E402
                     share_target, target_exits, ubt_p)

GDB = shutil.which("gdb")
work = tempfile.mkdtemp(prefix="ubt-holds.")
BOUND = 120


def main():
    if not_root():
        return 77
    if not GDB:
        print("Bail out! gdb not found")
        return 99
    path, t, orig = share_target(work, "holds")
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    u = ubt_p(t.p.pid, prog)
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
    u = ubt_p(t.p.pid, prog, "-v")
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
    target_exits(t, BOUND)
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
