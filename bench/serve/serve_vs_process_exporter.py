#!/usr/bin/env python3
"""cputime serve against ncabatoff/process-exporter on the same tasks.

    python3 bench/serve/serve_vs_process_exporter.py [PROCS] [THREADS] [INTERVAL_S] [SCRAPES]

defaults 10000 20000 15 3. Run as root from the repository's root (for the
exit records and the pid limit). It builds ./cmd/cputime and
process-exporter v0.8.7 (from the Go module proxy, once, kept in
$BENCHTMP, default /tmp/cputime-bench-serve), starts PROCS idle processes
and THREADS idle threads (in processes of 2,000 threads each), then runs
two configurations, one after the other, each with both exporters at once:

  processes  cputime serve (defaults)  vs  process-exporter -threads=false
  threads    cputime serve --threads --threads.max -1
             vs  process-exporter -threads=true

process-exporter gets one group per process ({{.Comm}}:{{.PID}}), so both
export every process. For each exporter it reports, from its process CPU
clock (exact ns): the CPU of one scrape (the median of SCRAPES scrapes,
Prometheus's headers, gzip), its CPU between scrapes (an unscraped window
of INTERVAL_S seconds), the total for one scrape interval (window +
scrape), its VmRSS after the scrapes, and cputime's ratio to
process-exporter for each. The two exporters' windows overlap and their
scrapes alternate, so the machine's load hits both alike."""
import gzip, json, os, re, shutil, signal, socket, statistics, subprocess, sys, time, urllib.request

PROCS = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
INTERVAL = float(sys.argv[3]) if len(sys.argv) > 3 else 15.0
SCRAPES = int(sys.argv[4]) if len(sys.argv) > 4 else 3
PE_VERSION = "v0.8.7"
TMP = os.environ.get("BENCHTMP", "/tmp/cputime-bench-serve")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADERS = {"Accept": "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
           "Accept-Encoding": "gzip", "User-Agent": "Prometheus/2.53.0"}
os.makedirs(TMP, exist_ok=True)
procs = []


def build():
    subprocess.run(["go", "build", "-o", TMP + "/cputime", "./cmd/cputime"], cwd=ROOT, check=True)
    subprocess.run(["gcc", "-O1", "-pthread", "-o", TMP + "/manytasks", os.path.join(ROOT, "bench/serve/manytasks.c")], check=True)
    pe = "%s/process-exporter-%s" % (TMP, PE_VERSION)
    if os.access(pe, os.X_OK):
        return pe
    env = dict(os.environ, GOWORK="off", GOFLAGS="")
    mod = "github.com/ncabatoff/process-exporter@" + PE_VERSION
    d = json.loads(subprocess.run(["go", "mod", "download", "-json", mod], cwd=TMP, env=env, capture_output=True, text=True, check=True).stdout)["Dir"]
    src = TMP + "/pe-src"
    shutil.rmtree(src, ignore_errors=True)
    shutil.copytree(d, src)
    subprocess.run(["chmod", "-R", "u+w", src], check=True)
    subprocess.run(["go", "build", "-o", pe, "./cmd/process-exporter"], cwd=src, env=dict(env, GOFLAGS="-mod=mod"), check=True)
    return pe


def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); n = s.getsockname()[1]; s.close(); return n


def start(argv, ready=None):
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if ready else subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, text=True)
    procs.append(p)
    if ready:
        line = p.stdout.readline()
        if ready not in line:
            sys.exit("%s: %r" % (argv[0], line))
    return p


class Exporter:
    def __init__(self, name, argv_of):
        self.name, self.port = name, port()
        self.p = start(argv_of("127.0.0.1:%d" % self.port))
        end = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close(); break
            except OSError:
                if time.time() > end or self.p.poll() is not None:
                    sys.exit("%s did not start" % name)
                time.sleep(0.05)
        self.scrapes, self.windows, self.size = [], [], 0

    def cpu(self):  # ns: the process CPU clock (CPUCLOCK_SCHED), exact
        return time.clock_gettime_ns((~self.p.pid << 3) | 2)

    def rss(self):  # MiB
        return int(re.search(r"VmRSS:\s+(\d+)", open("/proc/%d/status" % self.p.pid).read()).group(1)) / 1024

    def scrape(self):
        c0 = self.cpu()
        with urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/metrics" % self.port, headers=HEADERS), timeout=300) as r:
            body = r.read()
            if r.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
        self.size = len(body)
        return self.cpu() - c0


def measure(config, cs_args, pe_args, cs_bin, pe_bin, pe_cfg):
    cs = Exporter("cputime", lambda a: [cs_bin, "serve", "--web.listen-address", a] + cs_args)
    pe = Exporter("process-exporter", lambda a: [pe_bin, "-config.path", pe_cfg, "-web.listen-address", a, "-gather-smaps=false"] + pe_args)
    both = (cs, pe)
    for e in both:
        e.scrape()  # warm-up
    for i in range(SCRAPES):
        w0 = {e: e.cpu() for e in both}
        time.sleep(INTERVAL)
        w1 = {e: e.cpu() for e in both}
        for e in (both if i % 2 == 0 else both[::-1]):
            e.windows.append(w1[e] - w0[e])
            e.scrapes.append(e.scrape())
    rss = {e: e.rss() for e in both}
    for e in both:
        e.p.terminate(); e.p.wait()
    row = {}
    for e in both:
        s, w = statistics.median(e.scrapes) / 1e6, statistics.median(e.windows) / 1e6
        row[e.name] = (s, w, s + w, rss[e], e.size)
    c, p = row["cputime"], row["process-exporter"]
    print("\n### %s (%s)\n" % (config, " ".join(cs_args) or "defaults"))
    print("| | CPU per scrape | CPU between scrapes (%g s) | CPU per %g-s interval | VmRSS | body |" % (INTERVAL, INTERVAL))
    print("|---|---|---|---|---|---|")
    for n in ("cputime", "process-exporter"):
        r = row[n]
        print("| %s | %.0f ms | %.0f ms | %.0f ms | %.1f MiB | %.1f MB |" % (n, r[0], r[1], r[2], r[3], r[4] / 1e6))
    print("| cputime / process-exporter | %.3fx | %.3fx | %.3fx | %.2fx | |" % tuple(c[i] / p[i] if p[i] else float("nan") for i in range(4)))
    sys.stdout.flush()


def main():
    if os.geteuid() != 0:
        print("note: not root: cputime serve catches exits by refreshing every 100 ms instead of the kernel's exit records")
    cs_bin, pe_bin = TMP + "/cputime", build()
    pe_cfg = TMP + "/pe.yml"
    open(pe_cfg, "w").write('process_names:\n  - name: "{{.Comm}}:{{.PID}}"\n    cmdline:\n      - ".*"\n')
    pm = open("/proc/sys/kernel/pid_max").read().strip()
    tm = open("/proc/sys/kernel/threads-max").read().strip()
    print("## %s processes, %s threads, %g-s interval, %d scrapes (pid_max %s, threads-max %s)" % (f"{PROCS:,}", f"{THREADS:,}", INTERVAL, SCRAPES, pm, tm))
    try:
        if PROCS:
            start([TMP + "/manytasks", "procs", str(PROCS)], "ready")
        left = THREADS
        while left > 0:
            n = min(2000, left)
            start([TMP + "/manytasks", "threads", str(n)], "ready")
            left -= n
        measure("processes", [], ["-threads=false"], cs_bin, pe_bin, pe_cfg)
        measure("threads", ["--threads", "--threads.max", "-1"], ["-threads=true"], cs_bin, pe_bin, pe_cfg)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill(); p.wait()


main()
