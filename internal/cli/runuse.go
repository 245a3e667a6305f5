package cli

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/cputime/cputime/internal/recorder"
	"github.com/cputime/cputime/internal/timeline"
)

// Where a run's tree spent its CPU and memory: by command name, over time,
// and the tree's memory at its highest (the recorder's figures, put in
// run's record).

// jsonCommand is what the processes of one command name used
// (timeline.CommandUse): a process that exec'd counts under the name of
// what it exec'd last.
type jsonCommand struct {
	Name      jsonName `json:"name"`
	Processes int      `json:"processes"`
	Threads   int      `json:"threads"`
	UserNs    int64    `json:"user_ns"`
	KernelNs  int64    `json:"kernel_ns"`
	// PeakConcurrent is the most of them alive at once (from creation and
	// exit times; one still running counts until CMD's exit).
	PeakConcurrent int `json:"peak_concurrent"`
}

// jsonParallelism is how many of the tree's tasks ran at once.
type jsonParallelism struct {
	// Average is the tree's CPU time over the wall-clock time (what
	// cpu_percent is, in CPUs): the mean number of its tasks on a CPU.
	Average float64 `json:"average"`
	// Peak is the most tasks on a CPU at once, averaged over windows of
	// PeakWindowNs: from each thread's CPU samples where the recording has
	// them (PeakFromSamples: with --trace or --timeline, or without
	// taskstats), else from each thread's CPU spread evenly over its life,
	// an estimate.
	Peak            float64 `json:"peak"`
	PeakWindowNs    int64   `json:"peak_window_ns"`
	PeakFromSamples bool    `json:"peak_from_samples"`
	// PeakThreadsAlive is the most threads alive at once, on a CPU or
	// not.
	PeakThreadsAlive int `json:"peak_threads_alive"`
}

func (c *jsonCommand) writeJSON(o *jsonOut) {
	w := o.object()
	w.string("name", string(c.Name))
	w.int("processes", int64(c.Processes))
	w.int("threads", int64(c.Threads))
	w.int("user_ns", c.UserNs)
	w.int("kernel_ns", c.KernelNs)
	w.int("peak_concurrent", int64(c.PeakConcurrent))
	w.end()
}

func (p *jsonParallelism) writeJSON(o *jsonOut) {
	if p == nil {
		o.b = append(o.b, "null"...)
		return
	}
	w := o.object()
	w.optFloat("average", &p.Average)
	w.optFloat("peak", &p.Peak)
	w.int("peak_window_ns", p.PeakWindowNs)
	w.bool("peak_from_samples", p.PeakFromSamples)
	w.int("peak_threads_alive", int64(p.PeakThreadsAlive))
	w.end()
}

// treeUse is where the recorded tree's CPU went, by command name and
// over time, with the top process's times as its own record has them (one
// answer per task), and the average over the wall-clock time where the
// tree's total is known (cpu_percent's). Nothing without a recording; no
// parallelism for a job, which follows no threads.
func treeUse(r runRecord) ([]timeline.CommandUse, *timeline.Parallelism) {
	if r.recording == nil || len(r.recording.Processes) == 0 {
		return nil, nil
	}
	rec := *r.recording
	rec.Processes = slices.Clone(rec.Processes)
	rec.Processes[0].User, rec.Processes[0].Kernel = r.Times.User, r.Times.Kernel
	bc := timeline.ByCommand(&rec)
	if r.job != nil {
		return bc, nil
	}
	pa := timeline.ParallelismOf(&rec)
	// Spread evenly between samples taken 50 ms apart, a thread's CPU can
	// land in a 10-ms window more than the machine could run there: no
	// more run at once than its CPUs.
	pa.Peak = min(pa.Peak, float64(runtime.NumCPU()))
	if r.tree.valid && r.wall > 0 {
		pa.Average = float64(r.tree.User+r.tree.Kernel) / float64(r.wall)
	}
	return bc, &pa
}

// treeUseJSON fills in where the tree's CPU and memory went (run only).
func treeUseJSON(j *jsonRun, r runRecord) {
	if m := r.memory; m != nil {
		kib, source := m.PeakKiB, m.Source
		j.TreePeakMemoryKiB, j.TreePeakMemorySource = &kib, &source
	}
	bc, pa := treeUse(r)
	if bc != nil {
		j.ByCommand = make([]jsonCommand, len(bc))
		for i, c := range bc {
			j.ByCommand[i] = jsonCommand{Name: jsonName(c.Name), Processes: c.Processes, Threads: c.Threads,
				UserNs: c.User.Nanoseconds(), KernelNs: c.Kernel.Nanoseconds(), PeakConcurrent: c.PeakConcurrent}
		}
	}
	if pa != nil {
		round := func(v float64) float64 { return math.Round(v*1000) / 1000 }
		j.Parallelism = &jsonParallelism{Average: round(pa.Average), Peak: round(pa.Peak), PeakWindowNs: pa.Window.Nanoseconds(),
			PeakFromSamples: pa.FromSamples, PeakThreadsAlive: pa.PeakThreads}
	}
}

// writeTreeUse writes the tree's peak memory and how parallel it ran, in
// time -v's manner (run only).
func writeTreeUse(w io.Writer, m *recorder.Memory, pa *timeline.Parallelism) error {
	var b strings.Builder
	if m != nil {
		how := m.Source
		if m.Estimate {
			how = "sampled every " + formatDuration(recorder.StatInterval) + ": an estimate"
		}
		fmt.Fprintf(&b, "\tTree's peak memory, all processes at once (kbytes): %d (%s)\n", m.PeakKiB, how)
	}
	if pa != nil {
		from := "from samples"
		if !pa.FromSamples {
			from = "each thread's CPU spread over its life: an estimate"
		}
		fmt.Fprintf(&b, "\tTasks on a CPU: %.2f on average, %.2f at the peak (%s windows, %s); threads alive at once: %d at most\n",
			pa.Average, pa.Peak, formatDuration(pa.Window), from, pa.PeakThreads)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// byCommandRows is how many command names the human output lists.
const byCommandRows = 8

// writeByCommand writes the short table of the tree's use by command
// name, the most CPU first.
func writeByCommand(w io.Writer, r runRecord, bc []timeline.CommandUse) error {
	if len(bc) < 2 {
		return nil // one name: the headline says it all
	}
	fmt.Fprintf(w, "by command (final name after exec; own threads, without children):\n")
	tw := newTable(w)
	fmt.Fprint(tw, "PROCESSES\tAT ONCE\tTHREADS\tUSER\tKERNEL\t  COMMAND\n")
	for _, c := range bc[:min(byCommandRows, len(bc))] {
		threads := strconv.Itoa(c.Threads)
		if r.job != nil {
			threads = "-" // not followed
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t  %s\n", c.Processes, c.PeakConcurrent, threads,
			formatDuration(c.User), formatDuration(c.Kernel), sanitize(c.Name))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := len(bc) - byCommandRows; n > 0 {
		_, err := fmt.Fprintf(w, "(%d more commands: --json lists every one)\n", n)
		return err
	}
	return nil
}
