"""bench/pause.py: the attach pause of make bench (issue 15), imported by
bench/run (part "pause").

How long attaching stops the target, as `ubt -v` reports it (the stop of
every thread that writes the jumps, and the whole time any thread was
stopped) and as the target's threads saw it (ubt-hotloop -g: the longest
time a thread was off its CPU without being runnable), median and range
over --pause-runs attaches:

- `-p`: a fresh `ubt-hotloop -g -t 4` (4 threads calling bench_nop in a
  loop, plus a watcher) per attach; the tracer runs until its first
  output line and 0.2 s more, then gets SIGINT.
- `-c`: `ubt -c 'ubt-hotloop -t 4 -d 50'`: the time the program waits at
  its entry point for the runtime and its probes (it has run its loader,
  none of its own code), as `ubt -v` counts it: from the trap at the entry
  point (an older ubt counted from when it had set up the stop there, a
  little later).

With --ubt-before, the same rows for that binary, run in turn with ubt's
(attach i of both, then attach i+1), so that a busy minute hits both; with
--pause-load, one busy loop per CPU (plain nice 0 processes) runs
meanwhile.

See bench/README.md.
"""

import os
import re
import shlex
import signal
import statistics
import subprocess
import time

PAUSE_PROG = "uprobe:{bin}:bench_nop { @c = count(); }"
PAUSE = re.compile(r"^ubt: attach pause ([\d.]+) ms", re.M)
STOPPED = re.compile(r"^ubt: target stopped for ([\d.]+) ms", re.M)
RETRIED = re.compile(r"^ubt: attach pause .* (\d+) retried stop", re.M)


class Fail(Exception):
    pass


def spread(vals, unit=1.0):
    """median (min-max) of vals (ms), or n/a."""
    if not vals:
        return "n/a"
    v = [x / unit for x in vals]
    return "%.2f ms (%.2f-%.2f)" % (statistics.median(v), min(v), max(v))


def worst(vals, goal):
    """the maximum of vals (ms), and whether it meets goal (ms)."""
    if not vals:
        return "n/a"
    m = max(vals)
    return "%.2f ms %s %g" % (m, "<=" if m <= goal else "MISSED >", goal)


# Issue 27's goals over the attaches of a -p row (ms): the pause's
# maximum; the whole time one thread was stopped (runtime and code areas
# included: "stopped in all"), its median and maximum.
GOAL_PAUSE_MAX = 5
GOAL_TOTAL_MED = 2
GOAL_TOTAL_MAX = 10


def ubt_run(b, argv, hold=0.2, timeout=30):
    """Run ubt (argv) until its first output line and hold seconds more,
    then SIGINT (hold None: until it exits, a -c run); its stdout and
    stderr texts."""
    errpath = os.path.join(b.tmp, "pause-stderr")
    b.log(shlex.join(argv))
    with open(errpath, "wb") as err:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=err)
    rd = b.reader(p.stdout)
    if hold is not None:
        rd.seen.wait(timeout=timeout)
        time.sleep(hold)
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    try:
        status = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise Fail("ubt did not exit on SIGINT")
    finally:
        rd.join(timeout=10)
        p.stdout.close()
    with open(errpath, "rb") as f:
        errtext = f.read().decode("utf-8", "replace")
    out = rd.text()
    if status != 0:
        raise Fail("ubt exited with %d: %s" % (
            status, (errtext.strip().splitlines() or ["?"])[-1]))
    m = re.findall(r"^@c: (\d+)$", out, re.M)
    if not m or int(m[-1]) == 0:
        raise Fail("the probe did not fire")
    return out, errtext


def figures(errtext):
    """ubt -v's pause and whole stop (ms); an older ubt that says only
    how long the target was stopped in all: that for both."""
    p = PAUSE.search(errtext)
    s = STOPPED.search(errtext)
    if not s:
        raise Fail("no stop time in ubt -v's output")
    return float(p.group(1) if p else s.group(1)), float(s.group(1))


def retried(errtext):
    """the stops ubt -v says it tried again (a thread late), or None
    (an older ubt)."""
    r = RETRIED.search(errtext)
    return int(r.group(1)) if r else None


def attach_p(b, ubt, prog):
    """One -p attach to a fresh 4-thread loop: ubt's pause, its stop in
    all, the longest stop a thread of the target saw (ms)."""
    gaps = os.path.join(b.tmp, "pause-gaps")
    if os.path.exists(gaps):
        os.unlink(gaps)
    cmd = [b.hotloop, "-g", "-f", "nop", "-t", str(b.a.pause_threads),
           "-d", "60000", "-o", gaps]
    hl = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        if hl.poll() is not None:
            raise Fail("the target exited early")
        t0 = time.monotonic_ns()
        out, err = ubt_run(b, [ubt, "-v", "--mode", "user", "-p",
                               str(hl.pid), "-e", prog])
        t1 = time.monotonic_ns()
        if hl.poll() is not None:
            raise Fail("the target died (status %d)" % hl.returncode)
        hl.send_signal(signal.SIGUSR1)
        hl.wait(timeout=20)
    finally:
        if hl.poll() is None:
            hl.kill()
            hl.wait()
    pause, stopped = figures(err)
    b.pause_retries.setdefault(ubt, []).append(retried(err))
    # the attach with the longest stop in all: its -v lines, shown under
    # the table (where that time went)
    if stopped > b.pause_worst.get(ubt, (-1, ""))[0]:
        b.pause_worst[ubt] = (stopped, "\n".join(
            "    " + ln for ln in err.splitlines()
            if re.match(r"ubt: (attach pause|target stopped for|the thread "
                        r"for the runtime)", ln)))
    rep = b.parse_report(gaps) or {}
    def longest(lo, hi):
        return max([int(g["off"]) for g in rep.get("_gap", [])
                    if lo < int(g["start"]) + int(g["len"]) and
                    int(g["start"]) < hi] + [0]) / 1e6
    # the same measure in the 0.25 s before ubt started: the machine's
    return pause, stopped, longest(t0, t1), longest(t0 - 250000000, t0)


def attach_c(b, ubt, prog):
    cmd = [b.hotloop, "-f", "nop", "-t", str(b.a.pause_threads), "-d",
           "50"]
    out, err = ubt_run(b, [ubt, "-v", "--mode", "user", "-c",
                           shlex.join(cmd), "-e", prog], hold=None)
    return figures(err)


def busy_loops():
    """One busy process per CPU (nice 0), pinned; the caller kills them."""
    procs = []
    for cpu in sorted(os.sched_getaffinity(0)):
        procs.append(subprocess.Popen(
            ["sh", "-c", "while :; do :; done"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            preexec_fn=lambda c=cpu: os.sched_setaffinity(0, {c})))
    return procs


def pause_table(b):
    prog = PAUSE_PROG.replace("{bin}", b.hotloop)
    bins = [("", b.ubt)]
    if b.before:
        bins.append((" before", b.before))
    kinds = [k for k in ("p", "c") if k in b.a.pause_kinds.split(",")]
    rows = {(k, w): ([], [], [], []) for k in kinds for w, _ in bins}
    fails = {}
    b.pause_retries = {}
    b.pause_worst = {}
    load = busy_loops() if b.a.pause_load else []
    try:
        for i in range(b.a.pause_runs):
            for kind in kinds:
                for who, ubt in bins:
                    if (kind, who) in fails:
                        continue
                    b.progress("attach pause: run %d/%d, -%s%s" % (
                        i + 1, b.a.pause_runs, kind, who))
                    try:
                        got = (attach_p if kind == "p" else attach_c)(
                            b, ubt, prog)
                    except Fail as e:
                        fails[(kind, who)] = str(e)
                        continue
                    for col, v in zip(rows[(kind, who)], got):
                        col.append(v)
    finally:
        for p in load:
            p.kill()
            p.wait()
    b.progress("")
    print("\nattach pause (issue 15): ubt -v's figures, median (min-max) of "
          "%d attaches%s; probe\n  %s\n" % (
              b.a.pause_runs,
              ", a busy loop on each of %d CPUs" % len(
                  os.sched_getaffinity(0)) if b.a.pause_load else "",
              PAUSE_PROG.replace("{bin}", "HOTLOOP")))
    table = []
    thr = b.a.pause_threads
    for kind, label in (("p", "-p, %d busy threads (goal <= 2 ms)" % thr),
                        ("c", "-c, %d threads (goal <= 3 ms)" % thr)):
        if kind not in kinds:
            continue
        for who, _ in bins:
            lab = label + who
            if (kind, who) in fails:
                n = "n/a" + b.note("attach pause -%s%s: %s" % (
                    kind, who, fails[(kind, who)]))
                table.append([lab, n, n, n, n, n, n])
                continue
            cols = rows[(kind, who)]
            p = kind == "p"
            table.append([lab, spread(cols[0]),
                          worst(cols[0], GOAL_PAUSE_MAX) if p else "-",
                          spread(cols[1]),
                          worst(cols[1], GOAL_TOTAL_MAX) if p else "-",
                          spread(cols[2]) if p else "-",
                          spread(cols[3]) if p else "-"])
    b.print_table(["target", "every thread stopped", "its max",
                   "stopped in all", "its max", "longest stop seen",
                   "seen, no tracer"], table)
    for who, ubt in bins:
        cols = rows.get(("p", who))
        if cols and cols[1] and ("p", who) not in fails:
            med = statistics.median(cols[1])
            print("-p%s: one thread stopped in all, median %.2f ms %s %g "
                  "ms, max %.2f ms %s %g ms (issue 27)" % (
                      who, med, "<=" if med <= GOAL_TOTAL_MED
                      else "MISSED >", GOAL_TOTAL_MED, max(cols[1]),
                      "<=" if max(cols[1]) <= GOAL_TOTAL_MAX
                      else "MISSED >", GOAL_TOTAL_MAX))
            tries = [r for r in b.pause_retries.get(ubt, [])
                     if r is not None]
            if tries:
                print("-p%s: stops tried again (a thread late, the others "
                      "let go): %d in %d attaches, at most %d in one" % (
                          who, sum(tries), len(tries), max(tries)))
            if ubt in b.pause_worst:
                print("-p%s: the attach with the longest stop in all, as "
                      "ubt -v put it:\n%s" % (who, b.pause_worst[ubt][1]))
    print("(every thread stopped: the stop that writes the jumps; stopped "
          "in all: -p adds one\nthread's stops for the runtime and code "
          "areas, the most any one thread of the target\nwas stopped for "
          "the attach; -c is the time at the entry point; its max: the "
          "maximum\nover the attaches against issue 27's goal;\nlongest stop seen: "
          "by a thread of the target, ubt-hotloop -g, while ubt ran; "
          "seen, no tracer:\nthe same in the 0.25 s before ubt started)")


# --- scale: a library's 500 functions at once (issue 15, point 4) -----

SCALE_PROG = "uprobe:{lib}:ubt_many_* { @ = count(); }"
SCALE_THREADS = 4


def scale_once(b, argv, lib, many, hold=0.3, timeout=300):
    """One -p attach of argv (a tracer) with SCALE_PROG to a fresh
    `ubt-many 4 wait`: seconds until the tracer said its probes are
    attached, seconds from SIGINT to its exit, ubt -v's pause (ms) or
    None."""
    tgt = subprocess.Popen([many, str(SCALE_THREADS), "wait"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
    errpath = os.path.join(b.tmp, "scale-stderr")
    try:
        if not tgt.stdout.readline():
            raise Fail("ubt-many did not start")
        env = dict(os.environ, __BPFTRACE_NOTIFY_PROBES_ATTACHED="1")
        argv = argv + ["-p", str(tgt.pid), "-e",
                       SCALE_PROG.replace("{lib}", lib)]
        b.log(shlex.join(argv))
        t0 = time.monotonic()
        with open(errpath, "wb") as err:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=err,
                                 env=env)
        rd = b.reader(p.stdout)
        attached = None
        while attached is None and p.poll() is None and \
                time.monotonic() - t0 < timeout:
            with open(errpath, "rb") as f:
                if b"__BPFTRACE_NOTIFY_PROBES_ATTACHED" in f.read():
                    attached = time.monotonic() - t0
                    break
            time.sleep(0.005)
        if attached is None:
            p.kill()
            p.wait()
            raise Fail("the tracer did not attach")
        time.sleep(hold)
        t1 = time.monotonic()
        p.send_signal(signal.SIGINT)
        try:
            status = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Fail("no exit within %d s of SIGINT" % timeout)
        gone = time.monotonic() - t1
        rd.join(timeout=10)
        p.stdout.close()
        with open(errpath, "rb") as f:
            errtext = f.read().decode("utf-8", "replace")
        if status != 0:
            raise Fail("exit status %d" % status)
        m = re.findall(r"^@: (\d+)$", rd.text(), re.M)
        if not m or int(m[-1]) == 0:
            raise Fail("the probes did not fire")
        pm = PAUSE.search(errtext)
        return attached, gone, float(pm.group(1)) if pm else None
    finally:
        if tgt.poll() is None:
            tgt.send_signal(signal.SIGUSR1)
            try:
                tgt.wait(timeout=10)
            except subprocess.TimeoutExpired:
                tgt.kill()
                tgt.wait()
        tgt.stdout.close()


def scale_table(b):
    many = b.a.many
    lib = os.path.join(os.path.dirname(os.path.abspath(many)),
                       "libubt-many.so")
    rows = []
    for tr, runs in (("ubt", b.a.scale_runs), ("bpftrace", 1)):
        res, fail = [], None
        for i in range(runs):
            b.progress("scale: %s run %d/%d" % (tr, i + 1, runs))
            try:
                argv = ([b.ubt, "-v"] if tr == "ubt" else
                        [b.bpftrace] if b.bpftrace else None)
                if not argv:
                    raise Fail("bpftrace is not installed")
                res.append(scale_once(b, argv, lib, many))
            except Fail as e:
                fail = str(e)
                break
        if fail:
            n = "n/a" + b.note("scale, %s: %s" % (tr, fail))
            rows.append([tr, n, n, n])
            continue
        med = lambda k: statistics.median([r[k] for r in res])
        pause = [r[2] for r in res if r[2] is not None]
        rows.append([tr, "%.2f s" % med(0), "%.2f s" % med(1),
                     "%.2f ms" % statistics.median(pause) if pause else "-"])
    b.progress("")
    print("\nscale (issue 15): -p into ubt-many (%d threads calling 502 "
          "functions of libubt-many.so\nin a loop), probe\n  %s\n"
          "median of %d runs for ubt, 1 for bpftrace\n" % (
              SCALE_THREADS, SCALE_PROG.replace("{lib}", "LIB"),
              b.a.scale_runs))
    b.print_table(["tracer", "attached after", "exit after SIGINT",
                   "attach pause"], rows)
    print("(attached after: from the start of the tracer to its "
          "\"probes attached\" notice;\nattach pause: ubt -v's stop of "
          "every thread, which writes all 502 jumps)")
