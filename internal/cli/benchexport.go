package cli

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// benchExports are the files bench writes, created before the first run.
type benchExports struct{ json, markdown, csv *outFile }

func createBenchExports(o benchOptions) (benchExports, error) {
	var e benchExports
	for _, x := range []struct {
		path string
		f    **outFile
	}{{o.exportJSON, &e.json}, {o.exportMD, &e.markdown}, {o.exportCSV, &e.csv}} {
		if x.path == "" {
			continue
		}
		f, err := createOutFile(x.path)
		if err != nil {
			e.discard()
			return benchExports{}, err
		}
		*x.f = f
	}
	return e, nil
}

// discard drops the files not written; their paths stay as they were.
func (e benchExports) discard() {
	for _, f := range []*outFile{e.json, e.markdown, e.csv} {
		f.discard()
	}
}

// write fills each file; the error joins those of the files that failed.
func (e benchExports) write(results []benchResult, shell shellCost, o benchOptions) error {
	var errs []error
	if e.json != nil {
		errs = append(errs, e.json.write(func(w io.Writer) error { return writeBenchJSON(w, results, shell, o) }))
	}
	if e.markdown != nil {
		errs = append(errs, e.markdown.write(func(w io.Writer) error { return writeBenchMarkdown(w, results) }))
	}
	if e.csv != nil {
		errs = append(errs, e.csv.write(func(w io.Writer) error { return writeBenchCSV(w, results) }))
	}
	return errors.Join(errs...)
}

// jsonBench is --export-json's document: hyperfine's (results[] with
// command, mean, stddev, median, user, system, min, max, times and
// exit_codes, in seconds: mean to max and times are wall time, user and
// system the means), so that what reads hyperfine's output reads it, with
// the CPU figures added beside.
type jsonBench struct {
	Results []jsonBenchResult `json:"results"`
	// Headline is what the comparison is by: "cpu".
	Headline string `json:"headline"`
	// Shell is what was subtracted from each run's times.
	Shell jsonShell `json:"shell"`
	// OrphanTimeout is how long each run waited for its tree after the
	// command exited, in seconds.
	OrphanTimeout float64          `json:"orphan_timeout"`
	Comparison    []jsonComparison `json:"comparison"`
}

type jsonBenchResult struct {
	Command string    `json:"command"`
	Mean    float64   `json:"mean"`
	Stddev  *float64  `json:"stddev"` // null for one run, as hyperfine's
	Median  float64   `json:"median"`
	User    float64   `json:"user"`
	System  float64   `json:"system"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Times   []float64 `json:"times"`
	// ExitCodes are the runs' exit codes, null for a run ended by a
	// signal (as hyperfine's).
	ExitCodes []*int `json:"exit_codes"`
	// CPU is the statistics of the runs' CPU times (user + system of the
	// whole tree): the headline.
	CPU      jsonStats `json:"cpu"`
	CPUTimes []float64 `json:"cpu_times"`
	// UserTimes and SystemTimes are each run's, the whole tree's.
	UserTimes   []float64 `json:"user_times"`
	SystemTimes []float64 `json:"system_times"`
	// MaxRSSKiB is each run's largest process's maximum resident set
	// (wait4's), in KiB.
	MaxRSSKiB []int64 `json:"max_rss_kib"`
	// TreePeakMemoryKiB is each run's whole tree's memory at its highest,
	// KiB (null where unknown), and TreePeakMemorySource what it counts:
	// a cgroup's high-water mark, or "sampled" (an estimate), as run's
	// tree_peak_memory_source.
	TreePeakMemoryKiB    []*int64 `json:"tree_peak_memory_kib"`
	TreePeakMemorySource string   `json:"tree_peak_memory_source"`
	// Orphans is how many orphans each run adopted and waited for;
	// Complete says each run's tree exited within the timeout and was
	// counted whole; Problems says why a run was not.
	Orphans  []int    `json:"orphans"`
	Complete []bool   `json:"complete"`
	Problems []string `json:"problems,omitempty"`
	// Outliers are the runs whose modified Z-score is beyond 3.5.
	Outliers jsonOutliers `json:"outliers"`
}

type jsonStats struct {
	Mean   float64  `json:"mean"`
	Stddev *float64 `json:"stddev"`
	Median float64  `json:"median"`
	Min    float64  `json:"min"`
	Max    float64  `json:"max"`
}

type jsonOutliers struct {
	CPU  int `json:"cpu"`
	Wall int `json:"wall"`
}

type jsonShell struct {
	// Command is the empty command run, null with --shell=none.
	Command *string `json:"command"`
	Runs    int     `json:"runs"`
	// Wall, User and System are the means subtracted, in seconds.
	Wall       float64 `json:"wall"`
	User       float64 `json:"user"`
	System     float64 `json:"system"`
	Subtracted bool    `json:"subtracted"`
}

// jsonComparison is a command's means over the reference's (the least
// CPU): CPU's ratio with its σ and 95 % confidence interval (null where
// there is none), wall's with its σ.
type jsonComparison struct {
	Command         string      `json:"command"`
	Reference       string      `json:"reference"`
	CPURatio        float64     `json:"cpu_ratio"`
	CPURatioStddev  float64     `json:"cpu_ratio_stddev"`
	CPURatioCI95    *[2]float64 `json:"cpu_ratio_ci95"`
	WallRatio       float64     `json:"wall_ratio"`
	WallRatioStddev float64     `json:"wall_ratio_stddev"`
}

func statsJSON(s summary) jsonStats {
	j := jsonStats{Mean: s.mean, Median: s.median, Min: s.min, Max: s.max}
	if s.n > 1 {
		sd := s.stddev
		j.Stddev = &sd
	}
	return j
}

func writeBenchJSON(w io.Writer, results []benchResult, shell shellCost, o benchOptions) error {
	doc := jsonBench{Results: []jsonBenchResult{}, Headline: "cpu", OrphanTimeout: o.orphanTimeout.Seconds(),
		Comparison: []jsonComparison{}}
	if shell.command != "" {
		c := shell.command
		doc.Shell = jsonShell{Command: &c, Runs: shell.runs, Wall: shell.wall.Seconds(), User: shell.user.Seconds(),
			System: shell.system.Seconds(), Subtracted: true}
	}
	for _, r := range results {
		ws := statsJSON(r.wall)
		j := jsonBenchResult{Command: r.command, Mean: ws.Mean, Stddev: ws.Stddev, Median: ws.Median, Min: ws.Min, Max: ws.Max,
			User: r.user.mean, System: r.system.mean, CPU: statsJSON(r.cpu),
			Outliers: jsonOutliers{CPU: r.cpuOutliers, Wall: r.wallOutliers}}
		seen := map[string]bool{}
		for _, run := range r.runs {
			j.Times = append(j.Times, run.wall.Seconds())
			j.ExitCodes = append(j.ExitCodes, run.exit)
			j.CPUTimes = append(j.CPUTimes, run.cpu().Seconds())
			j.UserTimes = append(j.UserTimes, run.user.Seconds())
			j.SystemTimes = append(j.SystemTimes, run.system.Seconds())
			j.MaxRSSKiB = append(j.MaxRSSKiB, run.maxRSS)
			j.TreePeakMemoryKiB = append(j.TreePeakMemoryKiB, run.peakKiB)
			if run.peakSource != "" {
				j.TreePeakMemorySource = run.peakSource
			}
			j.Orphans = append(j.Orphans, run.orphans)
			j.Complete = append(j.Complete, run.complete)
			if run.problem != "" && !seen[run.problem] {
				seen[run.problem] = true
				j.Problems = append(j.Problems, run.problem)
			}
		}
		doc.Results = append(doc.Results, j)
	}
	if len(results) > 1 {
		ref := leastCPU(results)
		for i, r := range results {
			if i == ref {
				continue
			}
			c, wr := ratioOf(r.cpu, results[ref].cpu), ratioOf(r.wall, results[ref].wall)
			jc := jsonComparison{Command: r.command, Reference: results[ref].command, CPURatio: c.r, CPURatioStddev: c.sigma,
				WallRatio: wr.r, WallRatioStddev: wr.sigma}
			if c.ok {
				jc.CPURatioCI95 = &[2]float64{c.lo, c.hi}
			}
			doc.Comparison = append(doc.Comparison, jc)
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// writeBenchMarkdown writes hyperfine's Markdown table by CPU time, with
// the wall time beside it.
func writeBenchMarkdown(w io.Writer, results []benchResult) error {
	if len(results) == 0 {
		return nil
	}
	ref := leastCPU(results)
	u := unitFor(results[ref].cpu.mean)
	num := func(s float64) string { return strconv.FormatFloat(s*u.scale, 'f', u.prec, 64) }
	var b strings.Builder
	fmt.Fprintf(&b, "| Command | CPU mean [%[1]s] | CPU min [%[1]s] | CPU max [%[1]s] | Wall mean [%[1]s] | Relative CPU |\n", u.name)
	b.WriteString("|:---|---:|---:|---:|---:|---:|\n")
	for i, r := range results {
		rel := "1.00"
		if i != ref {
			c := ratioOf(r.cpu, results[ref].cpu)
			rel = plusMinus(c.r, c.sigma)
		}
		fmt.Fprintf(&b, "| `%s` | %s ± %s | %s | %s | %s ± %s | %s |\n", markdownCode(r.command),
			num(r.cpu.mean), num(r.cpu.stddev), num(r.cpu.min), num(r.cpu.max), num(r.wall.mean), num(r.wall.stddev), rel)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// markdownCode is s fit for a table cell's code span: a pipe would end the
// cell, a backquote the span, a newline the row.
func markdownCode(s string) string {
	return strings.NewReplacer("|", `\|`, "`", "'", "\n", " ", "\r", " ").Replace(s)
}

// writeBenchCSV writes hyperfine's CSV columns (wall time in seconds;
// user and system the means), then the CPU time's statistics.
func writeBenchCSV(w io.Writer, results []benchResult) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"command", "mean", "stddev", "median", "user", "system", "min", "max",
		"cpu_mean", "cpu_stddev", "cpu_median", "cpu_min", "cpu_max"})
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	for _, r := range results {
		cw.Write([]string{r.command, f(r.wall.mean), f(r.wall.stddev), f(r.wall.median), f(r.user.mean), f(r.system.mean),
			f(r.wall.min), f(r.wall.max), f(r.cpu.mean), f(r.cpu.stddev), f(r.cpu.median), f(r.cpu.min), f(r.cpu.max)})
	}
	cw.Flush()
	return cw.Error()
}
