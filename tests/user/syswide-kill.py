#!/usr/bin/env python3
"""System-wide user mode, ubt killed (shim/run/sysw.c): ubt runs without -p or
-c, a process of the probed binary starts after it and is taken at its
first hit; ubt gets SIGKILL at random delays from 0 to 30 ms after that
start, while the process is being taken or just after.  Then the ubt the
user started (the guard) is gone, its worker ends the run the ordinary
way: the process must run on, its code the file's again once no ubt is
left, and finish with every result right (exit 0).  The same for kills of
the worker once the process is taken (the guard restores the process;
a worker killed in the middle of a remote call is the -p injector's
limit, as in kill-stress.py, not tested here).  A run that is not killed
takes the process (-v) and counts every call, as the kernel does.
Fixed random seed.  Prints TAP.
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procmem import (results, ok, code_in, code_in_file,  # noqa: E402
                     ubt_processes)

builddir = os.environ.get("top_builddir") or "."
UBT = os.environ.get("UBT") or os.path.join(builddir, "ubt")
SPAWN = os.path.join(builddir, "tests", "targets", "ubt-spawn")
KILLS = int(os.environ.get("UBT_SYSW_KILLS", "8"))
work = tempfile.mkdtemp(prefix="ubt-sysw.")
# a copy of its own: a system-wide probe sees every process of a binary
path = os.path.join(work, "ubt-spawn")
shutil.copy(SPAWN, path)
PROG = "uprobe:%s:ubt_tick { @c = count(); }" % path


def tracers():
    """ubt processes tracing our copy, still running."""
    return ubt_processes(lambda a: path.encode() in a)


def start_ubt(verbose=False):
    env = dict(os.environ, __BPFTRACE_NOTIFY_PROBES_ATTACHED="1")
    errpath = os.path.join(work, "err")
    err = open(errpath, "wb")
    p = subprocess.Popen([UBT] + (["-v"] if verbose else []) +
                         ["-e", PROG], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=err, env=env)
    end = time.time() + 30
    while time.time() < end:
        with open(errpath, "rb") as f:
            if b"__BPFTRACE_NOTIFY_PROBES_ATTACHED" in f.read():
                return p, errpath
        time.sleep(0.01)
    p.kill()
    raise SystemExit("Bail out! ubt did not attach")


def worker_of(guard):
    """The guard's child: the process that traces."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        if int(st.rsplit(")", 1)[1].split()[1]) == guard:
            return int(d)
    return None


def killed(n, kill_worker):
    orig = code_in_file(path, "ubt_tick")
    for i in range(n):
        ubt, errpath = start_ubt(verbose=kill_worker)
        worker = worker_of(ubt.pid)
        t = subprocess.Popen([path, "300", "3000"],
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        end = time.time() + 10
        while kill_worker and time.time() < end:
            with open(errpath, "rb") as f:
                if b" taken: " in f.read():
                    break
            time.sleep(0.005)
        time.sleep(random.uniform(0, 0.03))
        os.kill(worker if kill_worker and worker else ubt.pid,
                signal.SIGKILL)
        ubt.wait()
        end = time.time() + 10
        while tracers() and time.time() < end:
            time.sleep(0.01)
        left = tracers()
        alive = t.poll() is None
        code = code_in(t.pid, path, "ubt_tick") if alive else None
        if code == b"" and t.poll() is not None:
            code = None	# it exited while its memory was read
        errs = t.communicate(timeout=30)[1].decode(errors="replace")
        what = "worker" if kill_worker else "ubt"
        ok(not left and t.returncode == 0 and not errs and
           (code is None or code == orig),
           "%s killed %d: the process runs on restored and exits 0" %
           (what, i + 1),
           "tracers left %s, exit %s, stderr %r, code %s (file %s)" %
           (left, t.returncode, errs, code and code.hex(), orig.hex()))
        for p in left:
            os.kill(p, signal.SIGKILL)


def not_killed():
    ubt, errpath = start_ubt(verbose=True)
    t = subprocess.run([path, "100", "2000"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ubt.send_signal(signal.SIGINT)
    out = ubt.communicate(timeout=30)[0].decode()
    with open(errpath) as f:
        err = f.read()
    ok(t.returncode == 0 and "@c: 100\n" in out and
       ("pid %d (ubt-spawn) taken" % 0 in err or " taken: 1 probe" in err),
       "not killed: the process is taken and every call counted",
       "exit %s, out %r, err %r" % (t.returncode, out, err))


def main():
    random.seed(14)
    print("1..%d" % (2 * KILLS + 1))
    sys.stdout.flush()
    not_killed()
    killed(KILLS, False)
    killed(KILLS, True)
    shutil.rmtree(work, ignore_errors=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
