// Package bench compares cputime with its peers, github.com/shirou/gopsutil
// and github.com/prometheus/procfs: speed and memory in the benchmarks of
// this package (Linux only), precision and accuracy in ./cmd/accuracy. See
// README.md for the figures and run.sh for the command that makes them.
//
// It is a module of its own so that the peers never enter the dependencies
// of cputime itself.
package bench
