"""bench/metrics.py: --metrics in make bench (issue 29), imported by
bench/run (part "metrics").

- Scrape cost: `ubt --metrics` on `ubt-loop` with one map of 10,000 keys,
  5,000 written by a kernel probe (BEGIN) and 5,000 by a user-mode uprobe,
  merged on each scrape; 20 scrapes once every key is there: the time ubt
  took to build the page (its own ubt_metrics_scrape_duration_seconds)
  and the time the client waited (connect to last byte), median and
  range.  Target: 50 ms.
- Hot path: `@c = count()` on bench_nop in user mode (1 thread), the
  added ns per hit without --metrics and with --metrics while a client
  scrapes every 100 ms; their ratio (target: 1.0 within noise).

See bench/README.md.
"""

import os
import re
import shlex
import socket
import statistics
import subprocess
import threading
import time
import urllib.request

SCRAPE_PROG = ("config = { max_map_keys = 16384 } "
               "BEGIN { $i = 0; while ($i < 5000) { @m[$i + 5000] = "
               "count(); $i++; } } "
               "uprobe:{bin}:ubt_step { @m[arg0 % 5000] = count(); }")
HOT_PROG = "uprobe:{bin}:bench_nop { @c = count(); }"
DURATION = re.compile(rb"^ubt_metrics_scrape_duration_seconds (\S+)$", re.M)


class Fail(Exception):
    pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def spread(vals, scale=1e3, unit="ms"):
    if not vals:
        return "n/a"
    v = [x * scale for x in vals]
    return "%.1f %s (%.1f-%.1f)" % (statistics.median(v), unit, min(v),
                                    max(v))


def cpu_s(pid):
    """CPU time (user + system) of pid so far, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")


def worker(pid):
    """ubt's worker: the child of the ubt started (the guard waits)."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:
        kids = []
    return kids[0] if kids else pid


def scrape_cost(b, loop):
    port = free_port()
    url = "http://127.0.0.1:%d/metrics" % port
    argv = [b.ubt, "--metrics", "127.0.0.1:%d" % port, "-c",
            "%s 100000000 20" % loop, "-e",
            SCRAPE_PROG.replace("{bin}", loop)]
    b.log(shlex.join(argv))
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    server, client, cpu = [], [], []
    try:
        end = time.time() + 60
        while time.time() < end:
            try:
                page = get(url)
                if page.count(b"\nubt_m_total{") >= 10000:
                    break
            except OSError:
                pass
            if p.poll() is not None:
                raise Fail("ubt exited: " +
                           p.stderr.read().decode(errors="replace")[-200:])
            time.sleep(0.2)
        else:
            raise Fail("the map never reached 10,000 keys")
        w = worker(p.pid)
        # the loop's own CPU time while idle, per second, to subtract
        c0, t0 = cpu_s(w), time.monotonic()
        time.sleep(2)
        idle = (cpu_s(w) - c0) / (time.monotonic() - t0)
        for _ in range(5):
            c0, t0 = cpu_s(w), time.monotonic()
            for _ in range(4):
                t1 = time.monotonic()
                page = get(url)
                client.append(time.monotonic() - t1)
                m = DURATION.search(page)
                if m:
                    server.append(float(m.group(1)))
            el = time.monotonic() - t0
            cpu.append(max(cpu_s(w) - c0 - idle * el, 0) / 4)
    finally:
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return server, client, cpu


def hot_once(b, scrape):
    out = os.path.join(b.tmp, "metrics-report")
    if os.path.exists(out):
        os.unlink(out)
    ms = max(b.a.ms, 1000)
    cmd = [b.hotloop, "-f", "nop", "-t", "1", "-d", str(ms), "-o",
           out] + b.cpus(1)
    if scrape is None:
        subprocess.run(cmd, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, timeout=60, check=True)
        return float(b.parse_report(out)[b.a.clock_key]), 0
    port = free_port()
    argv = [b.ubt, "--mode", "user"]
    if scrape:
        argv += ["--metrics", "127.0.0.1:%d" % port]
    argv += ["-c", shlex.join(cmd), "-e",
             HOT_PROG.replace("{bin}", b.hotloop)]
    b.log(shlex.join(argv))
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    n = [0]
    stop = threading.Event()

    def scraper():
        url = "http://127.0.0.1:%d/metrics" % port
        while not stop.wait(0.1):
            try:
                get(url, timeout=2)
                n[0] += 1
            except OSError:
                pass
    t = threading.Thread(target=scraper) if scrape else None
    if t:
        t.start()
    try:
        err = p.communicate(timeout=60)[1]
    finally:
        stop.set()
        if t:
            t.join()
    if p.returncode:
        raise Fail("ubt failed: " + err.decode(errors="replace")[-200:])
    rep = b.parse_report(out)
    if not rep:
        raise Fail("the hot loop did not report")
    return float(rep[b.a.clock_key]), n[0]


def metrics_table(b):
    loop = os.path.join(b.tmp, "ubt-loop")
    src = os.path.join(os.path.dirname(b.a.many), "ubt-loop")
    print()
    print("--metrics (issue 29)")
    try:
        import shutil
        shutil.copy(src, loop)
        server, client, cpu = scrape_cost(b, loop)
        rows = [["ubt's CPU time per scrape (less its idle loop's)",
                 spread(cpu), "%.2f" % (statistics.median(cpu) / 0.05)
                 if cpu else "n/a"],
                ["page built by ubt (ubt_metrics_scrape_duration_seconds)",
                 spread(server), "%.2f" % (statistics.median(server) / 0.05)
                 if server else "n/a"],
                ["client wait, connect to last byte", spread(client),
                 "%.2f" % (statistics.median(client) / 0.05)
                 if client else "n/a"]]
        b.print_table(["scrape of 10,000 keys (5,000 kernel + 5,000 user)",
                       "median (range)", "/50 ms"], rows)
    except (Fail, OSError, subprocess.SubprocessError) as e:
        print("scrape of 10,000 keys: n/a (%s)" % e)
    print()
    try:
        base, with_, without = [], [], []
        scrapes = 0
        for _ in range(b.a.runs):
            base.append(hot_once(b, None)[0])
            without.append(hot_once(b, False)[0])
            ns, n = hot_once(b, True)
            with_.append(ns)
            scrapes += n
        nb = statistics.median(base)
        a0 = statistics.median(without) - nb
        a1 = statistics.median(with_) - nb
        m0, m1 = statistics.median(without), statistics.median(with_)
        b.print_table(
            ["@c = count() in user mode, 1 thread", "ns per call",
             "added per hit", "with/without"],
            [["no probe", "%.2f" % nb, "", ""],
             ["no --metrics", "%.2f" % m0, "%.2f ns" % a0, ""],
             ["--metrics, scraped every 100 ms (%d scrapes)" % scrapes,
              "%.2f" % m1, "%.2f ns" % a1, "%.3f" % (m1 / m0)]])
    except (Fail, OSError, subprocess.SubprocessError) as e:
        print("hot path while scraping: n/a (%s)" % e)
