// Command ratios reads `go test -bench` output (several runs of the same
// benchmarks) and prints, as Markdown, each comparison side by side with the
// peers' time as a multiple of cputime's, and the project's targets
// (../shared/DESIGN.md section 4) as met or missed. Times are medians over
// the runs. A ratio is taken within each run (the k-th result of a peer
// divided by the k-th of cputime: the same run, minutes apart at most) and
// the median of those is shown with their range, so that load from other
// work on the machine, which comes and goes between runs, cancels out as far
// as it can.
//
//	go run ./cmd/ratios results/raw.txt
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var libs = []string{"cputime", "gopsutil", "procfs"}

// samples[name][unit] holds every value seen; name has no -GOMAXPROCS suffix.
type samples map[string]map[string][]float64

var procsSuffix = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader, s samples) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := procsSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		if s[name] == nil {
			s[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("%q: %w", sc.Text(), err)
			}
			s[name][f[i+1]] = append(s[name][f[i+1]], v)
		}
	}
	return sc.Err()
}

func (s samples) median(name, unit string) (float64, int, bool) {
	v := slices.Clone(s[name][unit])
	if len(v) == 0 {
		return 0, 0, false
	}
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return m, len(v), true
}

// pairedRatio divides the i-th value of a by the i-th of b, which come from
// the same run, and returns the median, least and greatest quotient.
func (s samples) pairedRatio(a, b, unit string) (med, lo, hi float64, ok bool) {
	x, y := s[a][unit], s[b][unit]
	if len(x) == 0 || len(x) != len(y) {
		return 0, 0, 0, false
	}
	var q []float64
	for i := range x {
		q = append(q, x[i]/y[i])
	}
	slices.Sort(q)
	med = q[len(q)/2]
	if len(q)%2 == 0 {
		med = (q[len(q)/2-1] + q[len(q)/2]) / 2
	}
	return med, q[0], q[len(q)-1], true
}

func main() {
	s := samples{}
	for _, path := range os.Args[1:] {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ratios:", err)
			os.Exit(1)
		}
		err = parse(f, s)
		f.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "ratios:", err)
			os.Exit(1)
		}
	}
	printComparisons(s)
	printTargets(s)
}

func printComparisons(s samples) {
	var groups []string
	for name := range s {
		i := strings.LastIndex(name, "/")
		if i < 0 || !slices.Contains(libs, name[i+1:]) {
			continue
		}
		if g := name[:i]; !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	slices.SortFunc(groups, func(a, b string) int {
		return strings.Compare(sortKey(a), sortKey(b))
	})
	runs := 0
	fmt.Println("| benchmark | cputime | gopsutil | procfs | gopsutil ÷ cputime (range over runs) | procfs ÷ cputime | allocs/op (c / g / p) | B/op (c / g / p) |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, g := range groups {
		row := []string{g}
		var t [3]float64
		var allocs, bytes [3]string
		for i, lib := range libs {
			v, n, ok := s.median(g+"/"+lib, "ns/op")
			runs = max(runs, n)
			allocs[i], bytes[i] = "–", "–"
			if !ok {
				row = append(row, "–")
				continue
			}
			t[i] = v
			row = append(row, fmtNs(v))
			if a, _, ok := s.median(g+"/"+lib, "allocs/op"); ok {
				allocs[i] = fmtCount(a)
			}
			if b, _, ok := s.median(g+"/"+lib, "B/op"); ok {
				bytes[i] = fmtCount(b)
			}
		}
		for i := 1; i < 3; i++ {
			if med, lo, hi, ok := s.pairedRatio(g+"/"+libs[i], g+"/cputime", "ns/op"); ok {
				row = append(row, fmt.Sprintf("%.1f× (%.1f–%.1f)", med, lo, hi))
			} else {
				row = append(row, "–")
			}
		}
		row = append(row, strings.Join(allocs[:], " / "), strings.Join(bytes[:], " / "))
		fmt.Println("| " + strings.Join(row, " | ") + " |")
	}
	fmt.Printf("\nMedians of %d runs, interleaved (one `go test -count 1` per run).\n", runs)

	var live []string
	for name := range s {
		if _, _, ok := s.median(name, "live-B/thread"); ok {
			live = append(live, name)
		}
	}
	if len(live) > 0 {
		slices.SortFunc(live, func(a, b string) int { return strings.Compare(sortKey(a), sortKey(b)) })
		fmt.Println("\nScans: wall time, CPU time of the whole benchmark process per scan (getrusage; cputime reads on up to GOMAXPROCS threads, the peers on one), and the live heap a scan holds at its peak, per thread (one `cputime.ThreadInfo` record is 96 B plus its name):")
		fmt.Println()
		fmt.Println("| benchmark | wall | ÷ cputime's (range) | CPU | ÷ cputime's (range) | live B/thread |")
		fmt.Println("|---|---|---|---|---|---|")
		for _, name := range live {
			w, _, _ := s.median(name, "ns/op")
			c, _, _ := s.median(name, "cpu-ns/op")
			v, _, _ := s.median(name, "live-B/thread")
			base := name[:strings.LastIndex(name, "/")] + "/cputime"
			ratio := func(unit string) string {
				if name == base {
					return ""
				}
				if med, lo, hi, ok := s.pairedRatio(name, base, unit); ok {
					return fmt.Sprintf("%.2f× (%.2f–%.2f)", med, lo, hi)
				}
				return "–"
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %.0f |\n", name, fmtNs(w), ratio("ns/op"), fmtNs(c), ratio("cpu-ns/op"), v)
		}
	}
}

// sortKey orders Threads/100 before Threads/1000 before Threads/10000.
func sortKey(name string) string {
	return regexp.MustCompile(`\d+`).ReplaceAllStringFunc(name, func(d string) string {
		return fmt.Sprintf("%08s", d)
	})
}

func printTargets(s samples) {
	fmt.Println("\n| target (DESIGN §4) | measured | met |")
	fmt.Println("|---|---|---|")
	ns := func(name string) float64 { v, _, _ := s.median(name, "ns/op"); return v }
	allocs := func(name string) float64 { v, _, _ := s.median(name, "allocs/op"); return v }
	has := func(name string) bool { _, _, ok := s.median(name, "ns/op"); return ok }
	row := func(target, measured string, met bool) {
		fmt.Printf("| %s | %s | %s |\n", target, measured, map[bool]string{true: "yes", false: "**no**"}[met])
	}
	ratio := func(peer, base string) float64 {
		r, _, _, _ := s.pairedRatio(peer, base, "ns/op")
		return r
	}
	if has("ProcessTimes/cputime") {
		c := "ProcessTimes/cputime"
		row("process times through a handle ≤ 2 µs, 0 allocs", fmt.Sprintf("%s, %g allocs", fmtNs(ns(c)), allocs(c)), ns(c) <= 2000 && allocs(c) == 0)
		if has("ProcessTimes/gopsutil") {
			r := ratio("ProcessTimes/gopsutil", c)
			row("process times ≥ 10× faster than gopsutil", fmt.Sprintf("%.2f×", r), r >= 10)
		}
	}
	if c := "ThreadTimesOwn/cputime"; has(c) {
		row("own-process thread times ≤ 2 µs, 0 allocs", fmt.Sprintf("%s, %g allocs", fmtNs(ns(c)), allocs(c)), ns(c) <= 2000 && allocs(c) == 0)
	}
	for _, c := range []string{"ThreadTimesOther/cputime", "ThreadTimesOtherBusy/cputime"} {
		if has(c) {
			row("another process's thread times ≤ 6 µs ("+strings.TrimSuffix(c, "/cputime")+")", fmtNs(ns(c)), ns(c) <= 6000)
		}
	}
	if c := "Threads/1000/cputime"; has(c) {
		row("1000 threads with full records ≤ 10 ms", fmtNs(ns(c)), ns(c) <= 10e6)
		if p := "Threads/1000/gopsutil"; has(p) {
			r := ratio(p, c)
			row("1000 threads ≥ 3× faster than gopsutil", fmt.Sprintf("%.2f×", r), r >= 3)
		}
		if p := "Threads/1000/procfs"; has(p) {
			r := ratio(p, c)
			row("1000 threads ≥ 2× faster than procfs", fmt.Sprintf("%.2f×", r), r >= 2)
		}
	}
	if v, _, ok := s.median("Threads/10000/cputime", "live-B/thread"); ok {
		row("10,000 threads holding at most one record (96 B + name) per thread", fmt.Sprintf("%.0f B/thread live at the peak", v), v < 96)
	}
}

func fmtNs(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.3g ms", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.3g µs", v/1e3)
	}
	return fmt.Sprintf("%.3g ns", v)
}

func fmtCount(v float64) string {
	if v >= 10000 {
		return fmt.Sprintf("%.0fk", v/1000)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
