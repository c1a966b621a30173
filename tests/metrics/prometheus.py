#!/usr/bin/env python3
"""--metrics against the real thing (issue 29): Debian's prometheus.

ubt runs system-wide on its own copy of ubt-loop (user mode for the
processes it takes, the kernel for the hits before a take) and, again,
with --mode kernel; each time the copy runs a fixed number of calls in a
few processes and then ubt sits idle while a Prometheus server (scrape
interval 1 s, 127.0.0.1 only, its own storage directory) scrapes it.
The series Prometheus's query API gives must equal ubt's own printout at
exit (-f json) exactly: counters, gauges, the stats() summary and each
histogram bucket by bucket.  Every page scraped with urllib passes
`promtool check metrics`; OpenMetrics when asked; 404 and 405; a port in
use and a bad address are errors before anything is attached; a
malformed request, a slow client and many connections at once leave the
endpoint serving.  Loopback only, every step bounded in time.  Prints TAP.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

N_PROCS = 3
N_CALLS = 40
results = []


def ok(cond, what):
    results.append((bool(cond), what))
    print("%sok %d - %s" % ("" if cond else "not ", len(results), what))
    sys.stdout.flush()
    return cond


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def http(url, accept=None, method="GET", timeout=5):
    req = urllib.request.Request(url, method=method)
    if accept:
        req.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def wait_for(cond, secs):
    end = time.time() + secs
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    return None


def promtool_check(page):
    p = subprocess.run(["promtool", "check", "metrics"], input=page,
                       capture_output=True, timeout=30)
    return p.returncode == 0, (p.stdout + p.stderr).decode(errors="replace")


class Prom:
    def __init__(self, tmp, targets):
        self.port = free_port()
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n")
            for job, port in targets:
                f.write("  - job_name: %s\n    static_configs:\n"
                        "      - targets: ['127.0.0.1:%d']\n" % (job, port))
        self.log = open(os.path.join(tmp, "prometheus.log"), "w")
        self.p = subprocess.Popen(
            ["prometheus", "--config.file=" + cfg,
             "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        self.url = "http://127.0.0.1:%d" % self.port

    def ready(self):
        def up():
            try:
                return http(self.url + "/-/ready", timeout=1)[0] == 200
            except OSError:
                return False
        return wait_for(up, 30)

    def query(self, q):
        st, _, body = http(self.url + "/api/v1/query?" +
                           urllib.parse.urlencode({"query": q}))
        d = json.loads(body)
        if st != 200 or d.get("status") != "success":
            return None
        return {tuple(sorted(r["metric"].items())): r["value"]
                for r in d["data"]["result"]}

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.log.close()


PROGRAM = """
uprobe:%(bin)s:ubt_step {
	@calls = count();
	@parity[arg0 %% 2, comm] = count();
	@dist = hist(arg0);
	@dist_sum = sum(arg0);
	@lin = lhist(arg0, 0, 30, 10);
	@st = stats(arg0);
	@mx = max(arg0);
	@keys[arg0] = count();
}
uretprobe:%(bin)s:ubt_step { @ret = sum(retval); }
uprobe:%(bin)s:ubt_step /arg0 %% 3 == 0/ {
	@rec[(par = arg0 %% 2, name = comm)] = count();
}
"""


def start_ubt(ubt, bin_, port, extra, tmp, tag):
    out = open(os.path.join(tmp, tag + ".out"), "w+")
    err = open(os.path.join(tmp, tag + ".err"), "w+")
    env = dict(os.environ, __BPFTRACE_NOTIFY_PROBES_ATTACHED="1")
    p = subprocess.Popen([ubt, "-f", "json", "--metrics",
                          "127.0.0.1:%d" % port] + extra +
                         ["-e", PROGRAM % {"bin": bin_}],
                         stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                         env=env)

    def attached():
        err.seek(0)
        return "__BPFTRACE_NOTIFY_PROBES_ATTACHED" in err.read()
    return p, out, err, wait_for(lambda: attached() or p.poll() is not None,
                                 60) and p.poll() is None


def stop_ubt(p, out, err):
    p.send_signal(signal.SIGINT)
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    out.seek(0)
    err.seek(0)
    maps = {}
    for line in out.read().splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("type") in ("map", "hist", "stats"):
            maps.update(d["data"])
    return p.returncode, maps, err.read()


def expected_series(maps, bin_):
    """{(metric name, labels tuple): value} from ubt's JSON printout."""
    e = {}
    e[("ubt_calls_total", ())] = maps["@calls"]
    for k, v in maps["@parity"].items():
        par, comm = k.split(",", 1)
        e[("ubt_parity_total", (("key0", par), ("key1", comm)))] = v
    for k, v in maps["@keys"].items():
        e[("ubt_keys_total", (("key", k),))] = v
    # a record key: a label per field, named by it
    for k, v in maps["@rec"].items():
        par, comm = k.split(",", 1)
        e[("ubt_rec_total", (("name", comm), ("par", par)))] = v
    # each probe's hits, counted before its filter; the second probe
    # of the same name is told apart by "#2"
    probe = "uprobe:%s:ubt_step" % bin_
    for name in (probe, probe + "#2", "uretprobe:%s:ubt_step" % bin_):
        e[("ubt_probe_hits_total", (("probe", name),))] = maps["@calls"]
    e[("ubt_mx", ())] = maps["@mx"]
    e[("ubt_ret_total", ())] = maps["@ret"]     # retval: unsigned
    st = maps["@st"]
    e[("ubt_st_count", ())] = st["count"]
    e[("ubt_st_sum", ())] = st["total"]
    e[("ubt_st_avg", ())] = st["average"]
    for name in ("dist", "lin"):
        cum = 0
        for b in maps["@" + name]:
            cum += b["count"]
            if "max" in b:
                e[("ubt_%s_bucket" % name, (("le", str(b["max"])),))] = cum
        e[("ubt_%s_bucket" % name, (("le", "+Inf"),))] = cum
        # text format only: OpenMetrics has _count only beside a _sum
        e[("ubt_%s_count" % name, ())] = cum
    # @dist_sum = sum() beside @dist = hist(): @dist's _sum
    e[("ubt_dist_sum", ())] = maps["@dist_sum"]
    return e


def page_series(page):
    """{(name, labels): value} of a text-format page (simple parser)."""
    s = {}
    for line in page.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        head, val = line.rsplit(" ", 1)
        name, labels = head, ()
        if "{" in head:
            name, rest = head.split("{", 1)
            pairs = []
            for part in rest.rstrip("}").split('",'):
                k, v = part.split('="', 1)
                pairs.append((k, v.rstrip('"')))
            labels = tuple(sorted(pairs))
        s[(name, labels)] = float(val)
    return s


def phase(ubt, bin_, port, job, prom, extra, tmp, checks):
    p, out, err, up = start_ubt(ubt, bin_, port, extra, tmp, job)
    if not ok(up, "%s: ubt attached with --metrics" % job):
        err.seek(0)
        print("# " + err.read().replace("\n", "\n# "))
        p.kill()
        p.wait()
        return
    url = "http://127.0.0.1:%d/metrics" % port
    for i in range(N_PROCS):
        # 20 ms a call: ubt takes the process after its first hit
        subprocess.run([bin_, str(N_CALLS), "20000"],
                       stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, timeout=30)
    done = time.time()
    # two scrapes after the last call: Prometheus has the final values
    def scraped():
        r = prom.query('timestamp(ubt_calls_total{job="%s"})' % job)
        return r and all(float(v[1]) > done + 1 for v in r.values())
    ok(wait_for(scraped, 20), "%s: Prometheus scraped ubt after the "
       "target's calls" % job)
    got = prom.query('{job="%s",__name__=~"ubt_.*"}' % job) or {}
    st, ctype, page = http(url)
    checks(url, page)
    rc, maps, errtext = stop_ubt(p, out, err)
    ok(rc == 0, "%s: ubt exits 0 (%s)" % (job, rc))
    if not ok("@calls" in maps and maps["@calls"] == N_PROCS * N_CALLS,
              "%s: the printout counts %d calls" % (job, N_PROCS * N_CALLS)):
        print("# " + errtext.replace("\n", "\n# "))
        return
    exp = expected_series(maps, bin_)
    prom_s = {}
    for labels, v in got.items():
        d = dict(labels)
        name = d.pop("__name__")
        d.pop("job", None)
        d.pop("instance", None)
        prom_s[(name, tuple(sorted(d.items())))] = float(v[1])
    # Prometheus scrapes OpenMetrics: no _count without a _sum (@lin has
    # none; @dist has @dist_sum)
    hcount = ("ubt_lin_count",)
    bad = [(k, v, prom_s.get(k)) for k, v in exp.items()
           if (prom_s.get(k) != float(v) if k[0] not in hcount else
               k in prom_s)]
    ok(not bad, "%s: %d series in Prometheus equal the exit printout" %
       (job, len(exp)))
    for b in bad[:10]:
        print("#   %s: printout %s, Prometheus %s" % b)
    hb = [k for k in exp if k[0] == "ubt_dist_bucket"]
    ok(len(hb) >= 6 and all(prom_s.get(k) == exp[k] for k in hb),
       "%s: hist() bucket by bucket (%d buckets)" % (job, len(hb)))
    mine = page_series(page)
    if job == "auto":
        taken = mine.get(("ubt_processes_taken_total", ()), 0)
        ok(1 <= taken <= N_PROCS, "auto: %d of %d processes taken into "
           "user mode" % (taken, N_PROCS))
    bad = [(k, v, mine.get(k)) for k, v in exp.items()
           if mine.get(k) != float(v)]
    ok(not bad, "%s: the last page scraped equals the printout" % job)
    for b in bad[:5]:
        print("#   %s: printout %s, page %s" % b)


def attached_run(ubt, bin_, how, tmp):
    """-c and -p: scraped while the target runs, then its exit printout."""
    port = free_port()
    url = "http://127.0.0.1:%d/metrics" % port
    prog = "uprobe:%s:ubt_step { @calls = count(); }" % bin_
    tgt = None
    if how == "-c":
        args = ["-c", "%s 30 100000" % bin_]
    else:
        tgt = subprocess.Popen([bin_, "30", "100000"],
                               stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL)
        args = ["-p", str(tgt.pid)]
    p = subprocess.Popen([ubt, "-f", "json", "--metrics", "127.0.0.1:%d" %
                          port] + args + ["-e", prog],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)

    def mid():
        try:
            st, _, page = http(url, timeout=2)
        except OSError:
            return None
        v = page_series(page).get(("ubt_calls_total", ()), 0)
        return (page, v) if st == 200 and v >= 5 else None
    got = wait_for(mid, 20)
    page, v = got if got else (b"", 0)
    mode = page_series(page).get(("ubt_probe_mode", (
        ("mode", "user"), ("probe", "uprobe:%s:ubt_step" % bin_))))
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    if tgt:
        tgt.wait(30)
    final = None
    for line in out.decode().splitlines():
        if '"@calls"' in line:
            final = json.loads(line)["data"]["@calls"]
    ok(got and mode == 1 and promtool_check(page)[0] and final and
       5 <= v <= final and (how == "-p" or final == 30),
       "%s: scraped while the target runs (%d calls, user mode), "
       "%s at exit" % (how, v, final))


def kernel_only(ubt, tmp):
    """A kernel-only program: the key limit, @ alone, a stack key left out
    with one warning, the worked example's histogram."""
    port = free_port()
    url = "http://127.0.0.1:%d/metrics" % port
    prog = ("BEGIN { $i = 0; while ($i < 50) { @k[$i] = count(); $i++; } "
            "@ = count(); } "
            "interval:ms:100 { @st[kstack] = count(); } "
            "interval:s:4 { exit(); }")
    p = subprocess.Popen([ubt, "--metrics", "127.0.0.1:%d" % port,
                          "--metrics-max-keys", "10", "-e", prog],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)

    def page():
        try:
            st, _, pg = http(url, timeout=2)
            return pg if st == 200 else None
        except OSError:
            return None
    pg = wait_for(page, 20) or b""
    pg2 = page() or b""
    out, err = p.communicate(timeout=60)
    s = page_series(pg)
    keys = [k for k in s if k[0] == "ubt_k_total"]
    # the counter adds up what each page left out: 40 a page
    ok(page_series(pg2).get(("ubt_metrics_series_dropped_total",
                             (("map", "@k"),))) == 80,
       "kernel only: ubt_metrics_series_dropped_total counts 40 more "
       "at the next page")
    ok(len(keys) == 10 and s.get(("ubt_metrics_keys_dropped",
                                  (("map", "@k"),))) == 40 and
       s.get(("ubt_at_total", ())) == 1 and promtool_check(pg)[0],
       "kernel only: --metrics-max-keys 10 serves 10 of 50 keys, says 40 "
       "dropped; @ is ubt_at")
    ok(err.count(b"WARNING: --metrics: map @st is not served") == 1 and
       not any(k[0].startswith("ubt_st") for k in s) and
       b"@st[" in out and p.returncode == 0,
       "kernel only: a stack key: not served, one warning, in the printout")


def cleared(ubt):
    """clear() in an interval probe: the counter goes back (a reset to
    Prometheus), every page stays valid."""
    port = free_port()
    url = "http://127.0.0.1:%d/metrics" % port
    prog = ("interval:ms:100 { @t = count(); } "
            "interval:ms:1500 { clear(@t); } "
            "interval:ms:3000 { exit(); }")
    p = subprocess.Popen([ubt, "--metrics", "127.0.0.1:%d" % port, "-e",
                          prog], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen, valid = [], True
    while p.poll() is None:
        try:
            st, _, pg = http(url, timeout=2)
        except OSError:
            time.sleep(0.05)
            continue
        v = page_series(pg).get(("ubt_t_total", ()))
        if st == 200 and v is not None:
            seen.append(v)
            valid = valid and promtool_check(pg)[0]
        time.sleep(0.1)
    p.communicate(timeout=60)
    drop = any(b < a for a, b in zip(seen, seen[1:]))
    ok(drop and valid and p.returncode == 0,
       "clear(): the counter goes back once cleared (%d pages, valid)" %
       len(seen))


def hup_reset(ubt, bin_, how):
    """SIGHUP under --metrics clears every map: the counter goes back (a
    reset to Prometheus), ubt goes on serving and ends as before."""
    port = free_port()
    url = "http://127.0.0.1:%d/metrics" % port
    if how == "kernel":
        args = ["-e", "interval:ms:20 { @calls = count(); } "
                "interval:s:5 { exit(); }"]
    else:
        args = ["-c", "%s 100 50000" % bin_, "-e",
                "uprobe:%s:ubt_step { @calls = count(); }" % bin_]
    p = subprocess.Popen([ubt, "-f", "json", "--metrics",
                          "127.0.0.1:%d" % port] + args,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)

    def value(least, most):
        try:
            st, _, page = http(url, timeout=2)
        except OSError:
            return None
        v = page_series(page).get(("ubt_calls_total", ()))
        if st != 200 or v is None or not least <= v <= most:
            return None
        return v, promtool_check(page)[0]
    before = wait_for(lambda: value(10, 1 << 62), 30)
    if before:
        p.send_signal(signal.SIGHUP)
    after = before and wait_for(lambda: value(0, before[0] - 1), 10)
    again = after and wait_for(lambda: value(after[0] + 1, 1 << 62), 10)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    final = None
    for line in out.decode().splitlines():
        if '"@calls"' in line:
            final = json.loads(line)["data"]["@calls"]
    ok(before and after and again and before[1] and after[1] and
       final is not None and after[0] < final and
       (how == "kernel" or final < 100) and p.returncode == 0,
       "%s: SIGHUP clears the maps, the counter goes back (%s, %s, %s), "
       "the run goes on, @calls %s at exit, exit %d: %r" %
       (how, before and before[0], after and after[0], again and again[0],
        final, p.returncode, err[-300:]))


def example(ubt, builddir, srcdir):
    """examples/io-latency.bt on examples/io-engine: a valid page with the
    latency histogram by operation."""
    port = free_port()
    url = "http://127.0.0.1:%d/metrics" % port
    eng = os.path.join(builddir, "examples", "io-engine")
    script = open(os.path.join(srcdir, "examples",
                               "io-latency.bt")).read().replace(
        "./examples/io-engine", eng)
    p = subprocess.Popen([ubt, "--metrics", str(port), "-c", eng + " 3",
                          "-e", script], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def page():
        try:
            st, _, pg = http(url, timeout=2)
        except OSError:
            return None
        return pg if st == 200 and b'ubt_io_latency_bucket{key="flush"' \
            in pg else None
    pg = wait_for(page, 20) or b""
    p.communicate(timeout=60)
    ok(pg and promtool_check(pg)[0] and
       all(b'ubt_io_latency_bucket{key="%s",le="+Inf"}' % op in pg
           for op in (b"read", b"write", b"flush")),
       "examples/io-latency.bt: the latency histogram by operation")


def main():
    builddir = os.environ.get("top_builddir") or "."
    ubt = os.environ.get("UBT") or os.path.join(builddir, "ubt")
    for tool in ("prometheus", "promtool"):
        if not shutil.which(tool):
            print("1..0 # SKIP %s not installed (.ci/packages)" % tool)
            return 77
    tmp = tempfile.mkdtemp(prefix="ubt-metrics-")
    os.chmod(tmp, 0o755)
    bin_ = os.path.join(tmp, "ubt-loop-metrics")
    shutil.copy(os.path.join(builddir, "tests", "targets", "ubt-loop"), bin_)
    ports = {"auto": free_port(), "kernel": free_port()}
    prom = Prom(tmp, sorted(ports.items()))
    try:
        # errors before anything is attached
        hold = socket.socket()
        hold.bind(("127.0.0.1", 0))
        hold.listen(1)
        used = hold.getsockname()[1]
        r = subprocess.run([ubt, "--metrics", "127.0.0.1:%d" % used, "-e",
                            "uprobe:%s:ubt_step { @ = count(); }" % bin_],
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=60)
        hold.close()
        e = r.stderr.decode()
        ok(r.returncode == 1 and
           "ubt: cannot serve metrics on 127.0.0.1:%d: Address already in "
           "use" % used in e and b"Attaching" not in r.stdout,
           "a port in use: an error before anything is attached")
        r = subprocess.run([ubt, "--metrics", "192.0.2.1:%d" % used, "-e",
                            "BEGIN { exit(); }"], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=60)
        ok(r.returncode == 1 and b"cannot serve metrics on 192.0.2.1" in
           r.stderr and b"Attaching" not in r.stdout,
           "an address not on this machine: an error before attaching")
        r = subprocess.run([ubt, "--metrics", "1.2.3:80", "-e",
                            "BEGIN { exit(); }"], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=60)
        ok(r.returncode == 2 and b"invalid address for --metrics" in
           r.stderr, "a malformed address: a command-line error")
        prog = "BEGIN { @__ubt_hits_0 = 1; exit(); }"
        r = subprocess.run([ubt, "--metrics", "127.0.0.1:%d" % free_port(),
                            "-e", prog], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=60)
        r2 = subprocess.run([ubt, "-e", prog], stdin=subprocess.DEVNULL,
                            capture_output=True, timeout=60)
        ok(r.returncode == 1 and b"stdin:1:9-22: ERROR: map names "
           b"beginning with @__ubt_hits_ are ubt's own with --metrics" in
           r.stderr and b"Attaching" not in r.stdout and
           r2.returncode == 0 and b"@__ubt_hits_0: 1" in r2.stdout,
           "a map named as ubt's hit counts: an error with --metrics, "
           "printed without")
        ok(prom.ready(), "prometheus is ready on 127.0.0.1:%d" % prom.port)

        def auto_checks(url, page):
            good, msg = promtool_check(page)
            ok(good, "auto: promtool check metrics passes the page")
            if not good:
                print("# " + msg.replace("\n", "\n# "))
            st, ctype, om = http(url, accept="application/openmetrics-text;"
                                 "version=1.0.0,text/plain;q=0.5")
            ok(st == 200 and ctype.startswith("application/openmetrics-text")
               and om.endswith(b"# EOF\n") and
               b"# TYPE ubt_calls counter\n" in om and
               b"\nubt_calls_total " in om,
               "auto: OpenMetrics when Accept asks for it")
            base = url[:-len("/metrics")]
            ok(http(base + "/other")[0] == 404 and
               http(base + "/")[0] == 404, "auto: 404 for other paths")
            ok(http(url, method="POST")[0] == 405, "auto: 405 for POST")
            st, _, body = http(url, method="HEAD")
            ok(st == 200 and body == b"", "auto: HEAD answers without body")
            port = int(url.split(":")[2].split("/")[0])
            # a malformed request, a slow client, many connections
            s = socket.create_connection(("127.0.0.1", port), 5)
            s.sendall(b"\x00\xffGARBAGE \r\n\x01\r\n\r\n")
            s.settimeout(5)
            try:
                s.recv(100)
            except OSError:
                pass
            s.close()
            slow = socket.create_connection(("127.0.0.1", port), 5)
            slow.sendall(b"GET /metr")
            t0 = time.time()
            st, _, p2 = http(url)
            ok(st == 200 and time.time() - t0 < 2 and
               b"ubt_calls_total" in p2,
               "auto: served beside a slow client and after a malformed "
               "request")
            many = []
            for i in range(200):
                try:
                    many.append(socket.create_connection(("127.0.0.1", port),
                                                         2))
                except OSError:
                    break
            for c in many:
                c.close()
            slow.close()
            st, _, p3 = wait_for(lambda: (lambda r: r if r[0] == 200 else
                                          None)(http(url)), 10) or (0, 0, 0)
            ok(st == 200 and promtool_check(p3)[0],
               "auto: serving after %d connections at once" % len(many))

        def kernel_checks(url, page):
            good, msg = promtool_check(page)
            ok(good, "kernel: promtool check metrics passes the page")
            if not good:
                print("# " + msg.replace("\n", "\n# "))
            series = page_series(page)
            ok(('ubt_probe_mode', (('mode', 'kernel'), ('probe',
                'uprobe:%s:ubt_step' % bin_))) in series,
               "kernel: ubt_probe_mode says where the probe runs")

        kernel_only(ubt, tmp)
        cleared(ubt)
        for how in ("kernel", "-c"):
            hup_reset(ubt, bin_, how)
        example(ubt, builddir, os.environ.get("top_srcdir") or ".")
        for how in ("-c", "-p"):
            attached_run(ubt, bin_, how, tmp)
        phase(ubt, bin_, ports["auto"], "auto", prom, [], tmp, auto_checks)
        phase(ubt, bin_, ports["kernel"], "kernel", prom,
              ["--mode", "kernel"], tmp, kernel_checks)
    finally:
        prom.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print("1..%d" % len(results))
    return 0 if all(r[0] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
