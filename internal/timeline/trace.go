package timeline

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
)

// TraceCategoryThread and TraceCategoryProcess are the "cat" of the trace's
// complete events: one slice per thread, from its creation to its exit, and
// one per process on a track of its own.
const (
	TraceCategoryThread  = "thread"
	TraceCategoryProcess = "process"
)

// traceEvent is one event of the Trace Event Format (the "JSON Object
// Format" that chrome://tracing, Perfetto UI and catapult read): ts and dur
// in microseconds, here since the plan's origin.
type traceEvent struct {
	Name string   `json:"name"`
	Cat  string   `json:"cat,omitempty"`
	Ph   string   `json:"ph"`
	TS   float64  `json:"ts"`
	Dur  *float64 `json:"dur,omitempty"`
	PID  int      `json:"pid"`
	TID  int      `json:"tid"`
	Args any      `json:"args,omitempty"`
}

// threadArgs are the args of a thread's slice.
type threadArgs struct {
	PID         int     `json:"pid"` // the real IDs; the event's pid/tid differ only for reused IDs
	TID         int     `json:"tid"`
	UserNs      int64   `json:"user_ns"`
	KernelNs    int64   `json:"kernel_ns"`
	CPUNs       int64   `json:"cpu_ns"`
	Utilisation float64 `json:"utilisation"` // (user+kernel)/(exit−creation), 0 for a zero-length life
	Creation    string  `json:"creation"`    // RFC 3339, UTC, ns; "" if unknown
	// CreationUnknown: the recorder missed the creation; the slice starts
	// at the process's creation (or the recording's start) instead.
	CreationUnknown bool   `json:"creation_unknown,omitempty"`
	Exit            string `json:"exit,omitempty"`
	RunningAtEnd    bool   `json:"running_at_end,omitempty"`
}

type processArgs struct {
	PID             int     `json:"pid"`
	Parent          int     `json:"parent"`
	Threads         int     `json:"threads"`
	UserNs          int64   `json:"user_ns"`
	KernelNs        int64   `json:"kernel_ns"`
	CPUNs           int64   `json:"cpu_ns"`
	Utilisation     float64 `json:"utilisation"`
	Creation        string  `json:"creation"`
	CreationUnknown bool    `json:"creation_unknown,omitempty"`
	Exit            string  `json:"exit,omitempty"`
	RunningAtEnd    bool    `json:"running_at_end,omitempty"`
}

// WriteTrace writes r as Chrome trace-event JSON, the "JSON Object Format"
// ({"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}),
// which Perfetto UI (ui.perfetto.dev) and chrome://tracing open:
//
//   - each process is a group: "M" process_name (the sanitized name),
//     process_labels (parent pid, thread count, CPU time) and
//     process_sort_index (tree order: each process before its children);
//   - each thread is a track: "M" thread_name and thread_sort_index (by
//     creation), and one complete ("X") slice of category "thread" from
//     its creation to its exit, args carrying user_ns, kernel_ns, cpu_ns,
//     utilisation and the wall-clock creation and exit;
//   - each process has one "X" slice of category "process" on a track of
//     its own, named "(process)", sorted above its threads;
//   - a thread with Samples has a counter ("C") named "cpu TID NAME" in
//     its process: the percentage of one CPU it used between consecutive
//     points (its creation, each sample, its exit), 0 after it exits; a
//     sample that lags the exact final total is merged into its
//     neighbours rather than shown as a step above 100 %;
//   - the whole tree is a group of its own, "whole tree", sorted first,
//     with a counter ("C") named "running tasks": the tree's tasks on a
//     CPU, each step the average over its window (ParallelismWindow, wider
//     for a long recording), as RunningLane computes it; a step is written
//     where the value changes.
//
// ts and dur are microseconds (with ns decimals) since otherData.origin:
// Recording.Start, or the first creation if that is earlier (the kernel's
// creation times are tick-granular). A task still running at the end of
// the recording ends at the end (Recording.End, or the last instant the
// recording holds if later) and says "running_at_end": true; a task whose
// creation the recorder missed starts at its process's creation (a process
// at its first thread's, else at Recording.Start) and says
// "creation_unknown": true. Names are
// shown the way ps shows them: controls and bidi overrides become '?'.
// A pid or tid used twice in the recording (the kernel reuses them) gets
// an ID above 2^22 in the event's pid/tid; args keep the real one.
//
// r is validated first; an invalid recording gives an error wrapping
// ErrInvalidRecording and writes nothing.
func WriteTrace(w io.Writer, r *Recording) error {
	pl, err := prepare(r)
	if err != nil {
		return err
	}
	us := func(t time.Time) float64 { return float64(t.Sub(pl.origin).Nanoseconds()) / 1e3 }
	dur := func(a, b time.Time) *float64 { d := float64(b.Sub(a).Nanoseconds()) / 1e3; return &d }
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}

	var meta, timed []traceEvent
	used := map[int]bool{}
	for _, pp := range pl.procs {
		used[pp.traceID] = true
		for _, pt := range pp.threads {
			used[pt.traceID] = true
		}
	}
	nextTrack := syntheticIDBase
	for pi, pp := range pl.procs {
		p := pp.p
		pid := pp.traceID
		name := displayName(p.Name, "process", p.ID)
		cpu := p.User + p.Kernel
		labels := fmt.Sprintf("pid %d, parent %d, %d threads, CPU %s (user %s, kernel %s)",
			p.ID, p.Parent, len(p.Threads), fmtDur(cpu), fmtDur(p.User), fmtDur(p.Kernel))
		if pp.running {
			labels += ", running at end"
		}
		meta = append(meta,
			traceEvent{Name: "process_name", Ph: "M", PID: pid, Args: map[string]any{"name": name}},
			traceEvent{Name: "process_labels", Ph: "M", PID: pid, Args: map[string]any{"labels": labels}},
			traceEvent{Name: "process_sort_index", Ph: "M", PID: pid, Args: map[string]any{"sort_index": pi}},
		)
		// The process's own slice gets a track of its own: on the main
		// thread's track it would have to nest exactly around that
		// thread's slice, and the two exits come from different sources.
		for used[nextTrack] {
			nextTrack++
		}
		track := nextTrack
		used[track] = true
		meta = append(meta,
			traceEvent{Name: "thread_name", Ph: "M", PID: pid, TID: track, Args: map[string]any{"name": "(process)"}},
			traceEvent{Name: "thread_sort_index", Ph: "M", PID: pid, TID: track, Args: map[string]any{"sort_index": -1}},
		)
		timed = append(timed, traceEvent{
			Name: name, Cat: TraceCategoryProcess, Ph: "X", TS: us(pp.creation), Dur: dur(pp.creation, pp.end), PID: pid, TID: track,
			Args: processArgs{
				PID: p.ID, Parent: p.Parent, Threads: len(p.Threads),
				UserNs: p.User.Nanoseconds(), KernelNs: p.Kernel.Nanoseconds(), CPUNs: cpu.Nanoseconds(),
				Utilisation: utilisation(cpu, pp.end.Sub(pp.creation)),
				Creation:    stamp(p.Creation), CreationUnknown: pp.creationUnknown, Exit: stamp(p.Exit), RunningAtEnd: pp.running,
			},
		})
		for ti, pt := range pp.threads {
			t := pt.t
			tname := displayName(t.Name, "thread", t.ID)
			tcpu := t.User + t.Kernel
			meta = append(meta,
				traceEvent{Name: "thread_name", Ph: "M", PID: pid, TID: pt.traceID, Args: map[string]any{"name": tname}},
				traceEvent{Name: "thread_sort_index", Ph: "M", PID: pid, TID: pt.traceID, Args: map[string]any{"sort_index": ti}},
			)
			timed = append(timed, traceEvent{
				Name: tname, Cat: TraceCategoryThread, Ph: "X", TS: us(pt.creation), Dur: dur(pt.creation, pt.end), PID: pid, TID: pt.traceID,
				Args: threadArgs{
					PID: p.ID, TID: t.ID,
					UserNs: t.User.Nanoseconds(), KernelNs: t.Kernel.Nanoseconds(), CPUNs: tcpu.Nanoseconds(),
					Utilisation: utilisation(tcpu, pt.end.Sub(pt.creation)),
					Creation:    stamp(t.Creation), CreationUnknown: pt.creationUnknown, Exit: stamp(t.Exit), RunningAtEnd: pt.running,
				},
			})
			if len(t.Samples) == 0 {
				continue
			}
			cname := "cpu " + strconv.Itoa(t.ID) + " " + tname
			for _, s := range cpuSteps(t, pt) {
				timed = append(timed, traceEvent{Name: cname, Ph: "C", TS: us(s.at), PID: pid, TID: pt.traceID,
					Args: map[string]float64{"percent": s.percent}})
			}
		}
	}
	if len(pl.procs) > 0 {
		for used[nextTrack] {
			nextTrack++
		}
		tree := nextTrack
		used[tree] = true
		meta = append(meta,
			traceEvent{Name: "process_name", Ph: "M", PID: tree, Args: map[string]any{"name": "whole tree"}},
			traceEvent{Name: "process_sort_index", Ph: "M", PID: tree, Args: map[string]any{"sort_index": -1}},
		)
		lane, w := RunningLane(r, pl.origin, pl.end, ParallelismWindow, maxTraceSteps)
		last := math.NaN()
		for i, v := range lane {
			v = math.Round(v*1000) / 1000
			if v == last {
				continue
			}
			last = v
			timed = append(timed, traceEvent{Name: "running tasks", Ph: "C", TS: us(pl.origin.Add(time.Duration(i) * w)), PID: tree,
				Args: map[string]float64{"tasks": v}})
		}
		if len(lane) > 0 {
			timed = append(timed, traceEvent{Name: "running tasks", Ph: "C", TS: us(pl.end), PID: tree, Args: map[string]float64{"tasks": 0}})
		}
	}
	// Viewers sort themselves, but a file in time order is easier to read
	// and to cut.
	slices.SortStableFunc(timed, func(a, b traceEvent) int { return cmp.Compare(a.TS, b.TS) })

	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\"displayTimeUnit\":\"ms\",\"otherData\":")
	other, err := json.Marshal(map[string]string{
		"generator":       "cputime",
		"origin":          stamp(pl.origin),
		"recording_start": stamp(r.Start),
		"recording_end":   stamp(r.End),
		"end":             stamp(pl.end),
		"time_unit":       "ts and dur are microseconds since origin",
	})
	if err != nil {
		return err
	}
	bw.Write(other)
	bw.WriteString(",\n\"traceEvents\":[")
	for i, ev := range slices.Concat(meta, timed) {
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encoding trace event %q: %w", ev.Name, err)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n")
		bw.Write(b)
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// maxTraceSteps bounds the steps of the trace's "running tasks" counter.
const maxTraceSteps = 20_000

type cpuStep struct {
	at      time.Time
	percent float64
}

// cpuSteps turns a thread's cumulative samples into utilisation steps: at
// each point (creation with 0 CPU, each sample, the exit with the final
// total) the percentage of one CPU used until the next point, and 0 from
// the exit on. A running thread's last step lasts to the end of the trace.
// No step exceeds 100 % unless the whole life from creation does (see the
// merging below); the steps' integral is the thread's CPU time.
func cpuSteps(t *Thread, pt planThread) []cpuStep {
	type point struct {
		at  time.Time
		cpu time.Duration
	}
	pts := make([]point, 0, len(t.Samples)+2)
	if pt.creation.Before(t.Samples[0].At) {
		pts = append(pts, point{pt.creation, 0})
	}
	for _, s := range t.Samples {
		pts = append(pts, point{s.At, s.CPU})
	}
	last := pts[len(pts)-1]
	if !pt.running && t.Exit.After(last.at) && t.User+t.Kernel >= last.cpu {
		pts = append(pts, point{t.Exit, t.User + t.Kernel})
	}
	// One thread uses at most one CPU. A sample that lags the thread's
	// true total (schedstat's sum_exec_runtime advances at ticks and
	// switches, while the final total is exact) makes the next interval
	// look busier than that; merge such an interval with the ones before
	// it until it is not (keeping the creation point), so the CPU shows
	// up, spread, where it was used rather than as an impossible spike.
	kept := pts[:1]
	for _, p := range pts[1:] {
		for len(kept) > 1 {
			q := kept[len(kept)-1]
			if wall := p.at.Sub(q.at); wall > 0 && p.cpu-q.cpu <= wall {
				break
			}
			kept = kept[:len(kept)-1]
		}
		kept = append(kept, p)
	}
	pts = kept
	steps := make([]cpuStep, 0, len(pts))
	for i := 0; i+1 < len(pts); i++ {
		if !pts[i+1].at.After(pts[i].at) {
			continue // two samples at one instant: no interval between them
		}
		steps = append(steps, cpuStep{pts[i].at, 100 * utilisation(pts[i+1].cpu-pts[i].cpu, pts[i+1].at.Sub(pts[i].at))})
	}
	if !pt.running {
		steps = append(steps, cpuStep{pts[len(pts)-1].at, 0})
	}
	return steps
}

// utilisation is cpu/wall, 0 for a zero-length wall span.
func utilisation(cpu, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return float64(cpu) / float64(wall)
}

// displayName is name sanitized, or "kind ID" for an empty name.
func displayName(name, kind string, id int) string {
	if name == "" {
		return kind + " " + strconv.Itoa(id)
	}
	return sanitize(name)
}

// fmtDur prints d the way a person reads CPU times: 3 significant digits
// in the largest unit that keeps it at least 1.
func fmtDur(d time.Duration) string {
	switch a := d.Abs(); {
	case a == 0:
		return "0"
	case a >= time.Second:
		return trimFloat(d.Seconds(), 3) + " s"
	case a >= time.Millisecond:
		return trimFloat(float64(d)/1e6, 3) + " ms"
	case a >= time.Microsecond:
		return trimFloat(float64(d)/1e3, 3) + " µs"
	default:
		return strconv.FormatInt(int64(d), 10) + " ns"
	}
}

// trimFloat formats v with sig significant digits (at least 0 decimals),
// without trailing zeros.
func trimFloat(v float64, sig int) string {
	decimals := sig - 1
	for a := math.Abs(v); a >= 10 && decimals > 0; a /= 10 {
		decimals--
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if decimals > 0 {
		for s[len(s)-1] == '0' {
			s = s[:len(s)-1]
		}
		if s[len(s)-1] == '.' {
			s = s[:len(s)-1]
		}
	}
	return s
}
