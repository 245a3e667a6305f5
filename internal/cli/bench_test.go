package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// fixedResults are two commands' runs with round figures: A uses 100,
// 102, 98 ms of CPU (mean 100, σ 2) in 200, 300, 250 ms of wall; B
// exactly twice A's CPU, run for run, in 400, 500, 450 ms.
func fixedResults() []benchResult {
	ms := time.Millisecond
	zero := 0
	mk := func(cmd string, scale time.Duration, walls ...time.Duration) benchResult {
		r := benchResult{command: cmd}
		for i, c := range []time.Duration{100 * ms, 102 * ms, 98 * ms} {
			r.runs = append(r.runs, benchRun{user: c * scale * 3 / 4, system: c * scale / 4, wall: walls[i], exit: &zero,
				maxRSS: 1024, complete: true})
		}
		r.summarize()
		return r
	}
	return []benchResult{mk("a | b", 1, 200*ms, 300*ms, 250*ms), mk("B", 2, 400*ms, 500*ms, 450*ms)}
}

// The Markdown table by CPU, worked by hand: A 100.0 ± 2.0 (98.0 … 102.0),
// wall 250.0 ± 50.0; B 200.0 ± 4.0, wall 450.0 ± 50.0, 2.00 ± sqrt(2)·0.04
// = 0.06 times A. The pipe in A's command is escaped out of the cell.
func TestBenchMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := writeBenchMarkdown(&b, fixedResults()); err != nil {
		t.Fatal(err)
	}
	want := "| Command | CPU mean [ms] | CPU min [ms] | CPU max [ms] | Wall mean [ms] | Relative CPU |\n" +
		"|:---|---:|---:|---:|---:|---:|\n" +
		"| `a \\| b` | 100.0 ± 2.0 | 98.0 | 102.0 | 250.0 ± 50.0 | 1.00 |\n" +
		"| `B` | 200.0 ± 4.0 | 196.0 | 204.0 | 450.0 ± 50.0 | 2.00 ± 0.06 |\n"
	if b.String() != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", b.String(), want)
	}
}

// The CSV has hyperfine's columns (wall time, in seconds) first, then the
// CPU's; a command with a separator in it stays one field.
func TestBenchCSV(t *testing.T) {
	var b bytes.Buffer
	rs := fixedResults()
	rs[0].command = "a, b"
	if err := writeBenchCSV(&b, rs); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := "command,mean,stddev,median,user,system,min,max,cpu_mean,cpu_stddev,cpu_median,cpu_min,cpu_max"
	if len(rows) != 3 || strings.Join(rows[0], ",") != head {
		t.Fatalf("rows %q", rows)
	}
	want := []string{"a, b", "0.25", "0.05", "0.25", "0.075", "0.025", "0.2", "0.3", "0.1", "0.002", "0.1", "0.098", "0.102"}
	for i, w := range want {
		if got := rows[1][i]; !sameNumber(got, w) {
			t.Errorf("column %s: %q, want %s", rows[0][i], got, w)
		}
	}
}

// sameNumber compares two decimal strings as numbers to 1e-12 (σ's
// arithmetic leaves the last digits of a float).
func sameNumber(a, b string) bool {
	if a == b {
		return true
	}
	var x, y float64
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return x-y < 1e-12 && y-x < 1e-12
}

// The JSON has hyperfine's fields with wall time where hyperfine has it,
// and the CPU figures beside; one run's σ is null, as hyperfine's.
func TestBenchJSONSchema(t *testing.T) {
	rs := fixedResults()
	var b bytes.Buffer
	o := benchOptions{orphanTimeout: 10 * time.Second}
	if err := writeBenchJSON(&b, rs, shellCost{command: "sh -c ''", runs: 20, wall: time.Millisecond, user: 500 * time.Microsecond}, o); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	res := doc["results"].([]any)
	a := res[0].(map[string]any)
	for _, k := range []string{"command", "mean", "stddev", "median", "min", "max", "times", "exit_codes", "user", "system",
		"cpu", "cpu_times", "user_times", "system_times", "max_rss_kib", "orphans", "complete", "outliers"} {
		if _, ok := a[k]; !ok {
			t.Errorf("result lacks %q: %v", k, a)
		}
	}
	num := func(v any, want float64) bool { f, ok := v.(float64); return ok && f-want < 1e-12 && want-f < 1e-12 }
	if !num(a["mean"], 0.25) || !num(a["user"], 0.075) || !num(a["system"], 0.025) || !num(a["cpu"].(map[string]any)["mean"], 0.1) {
		t.Errorf("mean %v (wall 0.25), user %v, system %v, cpu %v", a["mean"], a["user"], a["system"], a["cpu"])
	}
	if sh := doc["shell"].(map[string]any); sh["subtracted"] != true || sh["user"] != 0.0005 || sh["command"] != "sh -c ''" {
		t.Errorf("shell %v", sh)
	}
	c := doc["comparison"].([]any)[0].(map[string]any)
	if c["reference"] != "a | b" || c["command"] != "B" || !num(c["cpu_ratio"], 2) || c["cpu_ratio_ci95"] == nil {
		t.Errorf("comparison %v", c)
	}
	rs[0].runs = rs[0].runs[:1]
	rs[0].summarize()
	b.Reset()
	writeBenchJSON(&b, rs[:1], shellCost{}, o)
	if !strings.Contains(b.String(), `"stddev": null`) || !strings.Contains(b.String(), `"command": null`) {
		t.Errorf("one run, no shell: want stddev and the shell's command null:\n%s", b.String())
	}
}

// The summary names the least CPU and states each ratio with its σ and
// interval, the σ's digits widened where two would read 0.00.
func TestBenchSummary(t *testing.T) {
	var b bytes.Buffer
	writeBenchSummary(&b, fixedResults())
	for _, want := range []string{"Summary, by CPU time", "'a | b' used the least CPU",
		"'B' ran 2.00 ± 0.06 times as much CPU (95% CI", "wall time 1.80 ± 0.41 times as long"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	for _, c := range []struct {
		r, s float64
		want string
	}{{1.98, 0.0123, "1.98 ± 0.01"}, {1.9912, 0.0012, "1.991 ± 0.001"}, {2, 0, "2.00 ± 0.00"}, {2, 0.00001, "2.0000 ± 0.0000"}} {
		if got := plusMinus(c.r, c.s); got != c.want {
			t.Errorf("plusMinus(%v, %v) = %q, want %q", c.r, c.s, got, c.want)
		}
	}
}

// The progress bar redraws one line in place: a carriage return, the
// line, and spaces over what the last one had beyond it; clear blanks it.
// A nil bar (no terminal) draws nothing.
func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := &progressBar{w: &b}
	p.show("Performing warmup runs", 1, 2, "")
	first := b.String()
	if !strings.HasPrefix(first, "\r  Performing warmup runs") || !strings.Contains(first, " 1/2 ") ||
		strings.Count(first, "█") != progressWidth/2 || strings.Count(first, "░") != progressWidth/2 {
		t.Errorf("first draw %q", first)
	}
	b.Reset()
	p.clear()
	if got := b.String(); strings.Trim(got, "\r ") != "" || len(strings.TrimLeft(got, "\r")) < len([]rune(first))-2 {
		t.Errorf("clear wrote %q, want the line blanked", got)
	}
	var none *progressBar
	none.show("x", 1, 2, "")
	none.clear()
}

// Each misuse is named in one sentence, with bench's usage, status 2.
func TestBenchUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "no command given"},
		{[]string{"bench", "--runs", "0", "true"}, `--runs "0": wants a whole number of at least 1`},
		{[]string{"bench", "-r", "x", "true"}, `-r "x": wants a whole number of at least 1`},
		{[]string{"bench", "--warmup=-1", "true"}, `--warmup "-1": wants a whole number of at least 0`},
		{[]string{"bench", "--runz", "3", "true"}, `unknown option --runz; did you mean "--runs"?`},
		{[]string{"bench", "-p", "a", "-p", "b", "true", "false", "x"}, "2 --prepare commands for 3 commands"},
		{[]string{"bench", "-N", " "}, "an empty command cannot run without a shell"},
		{[]string{"bench", "--orphan-timeout", "soon", "true"}, `--orphan-timeout "soon": wants a positive duration`},
		{[]string{"bench", "--orphan-timeout=0s", "true"}, `--orphan-timeout "0s": wants a positive duration`},
		{[]string{"bench", "--export-json"}, "--export-json needs a file name"},
		{[]string{"bench", "--export-json", "--runs", "true"}, "--export-json needs a file name, not the option"},
		{[]string{"bench", "--shell="}, "--shell needs a shell, or none"},
		{[]string{"run", "--orphan-timeout=x", "true"}, `--orphan-timeout "x": wants a positive duration`},
		{[]string{"run", "--orphan-timeout"}, "--orphan-timeout needs a duration"},
		{[]string{"bench", "-N=1", "true"}, "-N takes no value"},
		{[]string{"bench", "-n", "a", "--command-name=b", "true"}, "2 --command-name names for 1 commands"},
		{[]string{"bench", "--show-output=yes", "true"}, "--show-output takes no value"},
	} {
		stdout, stderr, status := runCLI(t, System{}, c.args...)
		if status != exitUsage || !strings.Contains(stderr, c.want) || stdout != "" {
			t.Errorf("%q: status %d, stderr %q: want 2 and %q", c.args, status, stderr, c.want)
		}
	}
	stdout, _, status := runCLI(t, System{}, "bench", "-h")
	if status != 0 || !strings.HasPrefix(stdout, "usage: cputime bench") {
		t.Errorf("bench -h: status %d, %q", status, stdout)
	}
}
