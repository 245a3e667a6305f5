package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/cliflag"
	"github.com/cputime/cputime/internal/recorder"
)

// waitOptions are wait's options.
type waitOptions struct{ json bool }

func (o *waitOptions) flags() *cliflag.Set {
	s := &cliflag.Set{Interspersed: true}
	s.Bool(&o.json, "--json", "-json")
	return s
}

// waitCommand implements "cputime wait [--json] PID".
func waitCommand(env Env, args []string) int {
	var o waitOptions
	args, status, done := parseOptions(env, "wait", waitUsage, o.flags(), args)
	if done {
		return status
	}
	asJSON := o.json
	var pids []int
	for _, a := range args {
		pid, err := parsePID(a)
		if err != nil {
			return usageError(env, "wait: %v", err)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 1 {
		return usageError(env, "wait: want one PID")
	}
	// The tree, as far as a non-parent can see it: the process's reaped
	// descendants' times, which the kernel keeps in its stat (cutime,
	// cstime) until its own parent reaps it. The file is opened before the
	// wait, so it stays bound to this process.
	var atExit func() tree
	info, exact, err := recorder.FinalRecord(pids[0], func(h *cputime.Process) error {
		atExit = openTree(pids[0])
		return waitRefreshing(h)
	})
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %s\n", programName, describeErr(pids[0], explainID(pids[0], err)))
		return exitFailed
	}
	rec := runRecord{record: record{ProcessInfo: info}, treeNote: "10ms", notFinal: !exact}
	if atExit != nil {
		rec.tree = atExit()
	}
	if err := writeRunRecord(env.Stdout, rec, asJSON, env.Location, newCycler(env)); err != nil {
		fmt.Fprintf(env.Stderr, "%s: writing output: %v\n", programName, err)
		return exitFailed
	}
	return exitOK
}

// waitRefreshInterval is how often wait reads the times of the process it
// waits for.
const waitRefreshInterval = 10 * time.Millisecond

// waitRefreshing waits for the process of h, reading its times every
// refreshInterval meanwhile. The library's Wait reads nothing while it
// waits, and a process that is not ours may be reaped by its parent before
// its final times can be read: then the last times read stand, so they must
// be recent. One handle, one read every 10 ms: a few µs each.
func waitRefreshing(h *cputime.Process) error {
	const refreshInterval = waitRefreshInterval
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.Wait(ctx) }()
	tick := time.NewTicker(refreshInterval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			h.Times() // an error here is Wait's to report
		}
	}
}

func writeRecord(w io.Writer, r record, asJSON bool, loc *time.Location, cyc cycler) error {
	if asJSON {
		p := toJSON(r, cyc)
		return encodeJSON(w, &p)
	}
	t := r.Times
	_, err := fmt.Fprintf(w, "process %d (%s): created %s, exited %s, elapsed %s, user %s, kernel %s, cycles %s\n",
		r.ID, sanitize(r.Name), formatInstant(t.Creation, loc), formatInstant(t.Exit, loc),
		formatDuration(t.Exit.Sub(t.Creation)), formatDuration(t.User), formatDuration(t.Kernel), cyc.text(t.Total()))
	return err
}
