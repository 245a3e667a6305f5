#!/usr/bin/env bash
# Runs the comparison with the peers and writes the tables README.md shows
# into results/:
#   machine.md    the machine, kernel, Go and library versions
#   raw.txt       every benchmark line of every run (go test -bench format)
#   benchstat.txt benchstat over the runs, one column per library
#   ratios.md     medians side by side, peer ÷ cputime, and the targets
#   ratios-serial.md  the 1000-thread scans again with GOMAXPROCS=1
#   accuracy.md   precision and creation-time accuracy (./cmd/accuracy)
#
# The runs are interleaved: COUNT separate `-count 1` runs of all benchmarks,
# rather than -count COUNT (which repeats each benchmark back to back), so
# that drift in the machine's load spreads over all libraries alike.
#
#	./run.sh                      # COUNT=10, all benchmarks, ~7 min on 2 CPUs
#	COUNT=20 BENCH=Threads ./run.sh
set -euo pipefail
cd "$(dirname "$0")"

COUNT=${COUNT:-10}
BENCH=${BENCH:-.}
BENCHTIME=${BENCHTIME:-1s}
OUT=${OUT:-results}
mkdir -p "$OUT"

BENCHSTAT=$(command -v benchstat || echo "$(go env GOPATH)/bin/benchstat")
if [ ! -x "$BENCHSTAT" ]; then
	go install golang.org/x/perf/cmd/benchstat@latest
fi

{
	echo "| | |"
	echo "|---|---|"
	echo "| CPU | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') |"
	echo "| logical CPUs | $(nproc) |"
	echo "| memory | $(free -g | awk '/^Mem:/ {print $2 " GiB"}') |"
	echo "| kernel | $(uname -sr) |"
	echo "| USER_HZ | $(getconf CLK_TCK) |"
	echo "| Go | $(go version | cut -d' ' -f3-) |"
	echo "| peers | $(go list -m -f '{{.Path}} {{.Version}}' github.com/shirou/gopsutil/v4 github.com/prometheus/procfs | paste -sd, - | sed 's/,/, /') |"
	echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
	echo "| command | \`COUNT=$COUNT BENCH='$BENCH' BENCHTIME=$BENCHTIME ./run.sh\` |"
} >"$OUT/machine.md"
cat "$OUT/machine.md"

go test -c -o "$OUT/bench.test" .
: >"$OUT/raw.txt"
for i in $(seq "$COUNT"); do
	echo "run $i of $COUNT" >&2
	"$OUT/bench.test" -test.run '^$' -test.bench "$BENCH" -test.benchmem \
		-test.benchtime "$BENCHTIME" -test.count 1 | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >>"$OUT/raw.txt"
done

# The 1000-thread comparison again on one CPU (GOMAXPROCS=1): cputime can no
# longer spread its scan over a second CPU, so this compares the work each
# library does per thread, and it is what a busy machine comes down to.
if [ -z "${SKIP_SERIAL:-}" ]; then
	: >"$OUT/raw-serial.txt"
	for i in $(seq "$COUNT"); do
		echo "serial run $i of $COUNT" >&2
		"$OUT/bench.test" -test.run '^$' -test.bench 'Threads/^1000$/' -test.benchmem \
			-test.benchtime "$BENCHTIME" -test.count 1 -test.cpu 1 | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >>"$OUT/raw-serial.txt"
	done
	go run ./cmd/ratios "$OUT/raw-serial.txt" >"$OUT/ratios-serial.md"
fi
rm -f "$OUT/bench.test"

# benchstat groups by key=value parts of a name: name the library's part.
sed -E 's#/(cputime|gopsutil|procfs)(-[0-9]+)?([[:space:]])#/lib=\1\2\3#' "$OUT/raw.txt" >"$OUT/raw-lib.txt"
{
	"$BENCHSTAT" -col /lib -filter '/lib:(cputime OR gopsutil OR procfs)' "$OUT/raw-lib.txt"
	echo
	"$BENCHSTAT" -filter '.name:SyscallFloor' "$OUT/raw.txt"
} >"$OUT/benchstat.txt"
rm -f "$OUT/raw-lib.txt"

go run ./cmd/ratios "$OUT/raw.txt" >"$OUT/ratios.md"
go run ./cmd/accuracy >"$OUT/accuracy.md"
cat "$OUT/ratios.md" "$OUT/accuracy.md"
[ -z "${SKIP_SERIAL:-}" ] && cat "$OUT/ratios-serial.md"
exit 0
