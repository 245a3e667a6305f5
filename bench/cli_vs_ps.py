#!/usr/bin/env python3
"""The cputime command against ps, interleaved: wall time and the child's
CPU time (user + system, from wait4), medians over N rounds, each round
running every command once in turn so that a change in the machine's load
hits all alike.

    python3 bench/cli_vs_ps.py [ROUNDS]

It builds ./cmd/cputime, starts a process with 1000 idle threads, and
compares `cputime PID` with `ps -L -o tid,time -p PID` and `cputime` with
`ps -e -o pid,comm,time`, and the same listing by a CGO_ENABLED=0 build
(statically linked: the exporter's net/http makes the default build load
libc through the dynamic loader) with it. Linux only."""
import os, statistics, subprocess, sys, tempfile, time

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 40
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = os.path.join(tempfile.mkdtemp(), "cputime")
subprocess.run(["go", "build", "-o", binary, "./cmd/cputime"], cwd=root, check=True)
# The one binary links serve (net/http, which uses cgo's resolver where a C
# compiler is present): the third pair shows what dynamic linking costs a
# listing.
static_binary = os.path.join(os.path.dirname(binary), "cputime-static")
subprocess.run(["go", "build", "-o", static_binary, "./cmd/cputime"], cwd=root, check=True,
               env=dict(os.environ, CGO_ENABLED="0"))

threads = subprocess.Popen([sys.executable, "-c", """
import sys, threading
ev = threading.Event()
for _ in range(999):
    threading.Thread(target=ev.wait, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
assert threads.stdout.readline() == "ready\n"
pid = str(threads.pid)

devnull = os.open(os.devnull, os.O_WRONLY)

def run(cmd):
    t0 = time.perf_counter()
    child = os.fork()
    if child == 0:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execvp(cmd[0], cmd)
    _, _, ru = os.wait4(child, 0)
    return (time.perf_counter() - t0) * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3

pairs = [
    ([binary, pid], ["ps", "-L", "-o", "tid,time", "-p", pid]),
    ([binary], ["ps", "-e", "-o", "pid,comm,time"]),
    ([static_binary], ["ps", "-e", "-o", "pid,comm,time"]),
]
cmds = [c for p in pairs for c in p]
results = {i: ([], []) for i in range(len(cmds))}
for r in range(rounds + 2):  # two warm-up rounds
    for i, cmd in enumerate(cmds):
        wall, cpu = run(cmd)
        if r >= 2:
            results[i][0].append(wall)
            results[i][1].append(cpu)
threads.stdin.close()
threads.wait()

med = {i: (statistics.median(w), statistics.median(c)) for i, (w, c) in results.items()}
for i, cmd in enumerate(cmds):
    name = " ".join(os.path.basename(cmd[0]) if j == 0 else a for j, a in enumerate(cmd))
    print(f"{name:40s} wall {med[i][0]:7.1f} ms  cpu {med[i][1]:7.1f} ms")
for k in range(len(pairs)):
    a, b = med[2 * k], med[2 * k + 1]
    print(f"ratio {k + 1}: wall {a[0] / b[0]:.2f}x  cpu {a[1] / b[1]:.2f}x")
