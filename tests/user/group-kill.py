#!/usr/bin/env python3
"""A process-group kill of ubt (issue 25, item 3 of the issue).

`timeout -s KILL N ubt -p PID ...` and `kill -9 %job` send SIGKILL to
every process in ubt's process group: the ubt the user started (the
guard) and, unless it is elsewhere, the worker that patched the target.
With both dead nobody restores the code.  Here ubt runs -p in a process
group of its own, as a shell job does; once it is attached, its whole
group gets SIGKILL.  The worker must survive it, restore the code (the
bytes of the function as the file has them) and go; the target must
compute right throughout and exit 0; a later ubt must find nothing left
to remove.  Several rounds.  Prints TAP.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (UBT, attached, code_in, done, not_root,  # noqa: E402
                     ok, share_target, target_exits, ubt_p, ubt_processes)

ROUNDS = 3
BOUND = 120


def main():
    if not_root():
        return 77
    work = tempfile.mkdtemp(prefix="ubt-pgkill.")
    path, t, orig = share_target(work, "pgkill")
    prog = "uprobe:%s:share_push { @c = count(); }" % path
    for r in range(ROUNDS):
        u = ubt_p(t.p.pid, prog, "--mode", "user", start_new_session=True)
        ok(b"NOTIFY_PROBES_ATTACHED" in attached(u), "round %d: attached" % r)
        ok(t.run("300", "done 300", timeout=BOUND),
           "round %d: the target computes under ubt" % r)
        patched = code_in(t.p.pid, path, "share_push") != orig
        os.killpg(u.pid, signal.SIGKILL)
        u.wait(timeout=BOUND)
        # whatever is left of ubt ends by itself
        for _ in range(BOUND * 10):
            if not ubt_processes(lambda a: a == str(t.p.pid).encode()):
                break
            time.sleep(0.1)
        ok(patched and code_in(t.p.pid, path, "share_push") == orig,
           "round %d: after the group kill the code is the file's" % r,
           "patched while attached: %s" % patched)
        ok(t.run("200", "done 200", timeout=BOUND),
           "round %d: the target computes right after it" % r)
    u = subprocess.run([UBT, "-v", "-p", str(t.p.pid), "-e",
                        prog + " interval:ms:1 { exit(); }"],
                       stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=BOUND)
    err = u.stderr.decode(errors="replace")
    ok(u.returncode == 0 and "left in pid" not in err,
       "a later ubt finds no jump left to remove", err[-300:])
    target_exits(t, BOUND)
    return done(work)


if __name__ == "__main__":
    sys.exit(main())
