package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/cputime/cputime/internal/cliflag"
	"github.com/cputime/cputime/internal/taskstats"
)

// ExitStream is where "cputime exits" gets the kernel's exit records: a
// taskstats.Listener (Env.Exits says otherwise).
type ExitStream interface {
	Next(ctx context.Context) (taskstats.Batch, error)
	Dropped() (uint64, error)
	Close() error
}

// openTaskstats opens the kernel's stream of exit records.
func openTaskstats() (ExitStream, error) {
	l, err := taskstats.Listen(taskstats.Options{})
	if err != nil {
		return nil, err
	}
	return l, nil
}

const exitsUsage = `usage: cputime exits [--json] [--pid P | --comm NAME] [--duration D]

Streams the final record of every task (thread or process) that exits on
this machine, as the kernel's taskstats interface reports it, until
interrupted or for duration D (e.g. 10s). Needs root (CAP_NET_ADMIN) in
the initial user and pid namespaces: not inside a container.

  --json        one JSON object per line
  --pid P       only tasks of process P (or the thread with id P)
  --comm NAME   only tasks named NAME
  --duration D  stop after D: a Go duration (300ms, 1.5s, 2m, 1h30m) or
                a number of seconds (10, 0.5)

Each line: the exit time (when the record was received: no earlier than
the exit, typically tens of microseconds after it; if the reader fell more
than a second behind, the end of the second the kernel dated the record
in), KIND, the process id, the thread id, the parent process id, USER,
KERNEL and TOTAL CPU time, the creation time (the exit time minus the
kernel's elapsed time), the exit status and the name. TOTAL is the
kernel's exact runtime of the task (sum_exec_runtime) at its last context
switch or scheduler tick before the record, so short of the truth by up
to one tick and, for a process, by the teardown of its address space,
which runs after the record (milliseconds for a large one); USER and
KERNEL split it in the ratio of the kernel's tick samples. KIND is
"thread" for one thread of a process that goes on, or had other threads;
"process" for a process whose only thread exited, and for the whole of a
multi-threaded process, which the kernel sends with its last thread's
record. Records the kernel had to drop (the reader fell behind) are
counted on stderr and in JSON, never silently lost.
`

// exitsCommand implements "cputime exits".
func exitsCommand(env Env, args []string) int {
	var o exitsOptions
	args, status, done := parseOptions(env, "exits", exitsUsage, o.flags(), args)
	if done {
		return status
	}
	if len(args) > 0 {
		return exitsUsageError(env, "exits: unexpected argument %s", sanitize(args[0]))
	}
	if o.pid != 0 && o.hasComm {
		return exitsUsageError(env, "exits: --pid and --comm cannot be combined")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	open := env.Exits
	if open == nil {
		open = openTaskstats
	}
	s, err := open()
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: exits: %s\n", programName, describeExitsErr(err))
		return exitFailed
	}
	defer s.Close()
	return streamExits(ctx, env, s, o)
}

// parseDuration reads a positive duration as Go writes them ("300ms",
// "1.5s", "1h30m") or as a bare number of seconds ("10", "0.5").
func parseDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		if s, ferr := strconv.ParseFloat(v, 64); ferr == nil && s > 0 && s < 1e9 {
			d, err = time.Duration(s*float64(time.Second)), nil
		}
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid duration %q: want a positive duration such as 300ms, 1.5s or 10 (seconds)", sanitize(v))
	}
	return d, nil
}

func exitsUsageError(env Env, format string, args ...any) int {
	fmt.Fprintf(env.Stderr, "%s: "+format+"\n%s", append([]any{programName}, append(args, exitsUsage)...)...)
	return exitUsage
}

// describeExitsErr is the one sentence for a stream that could not start:
// the taskstats errors name the cause (no CAP_NET_ADMIN, a namespace of
// its own, no taskstats) and say which.
func describeExitsErr(err error) string { return err.Error() }

type exitsOptions struct {
	json     bool
	pid      int
	comm     string
	hasComm  bool
	duration time.Duration
}

func (o *exitsOptions) flags() *cliflag.Set {
	s := &cliflag.Set{Interspersed: true}
	s.Bool(&o.json, "--json", "-json")
	s.Func("a process id", "pid", func(v string) error {
		pid, err := parsePID(v)
		o.pid = pid
		return err
	}, "--pid", "-pid")
	s.Func("a name", "", func(v string) error {
		o.comm, o.hasComm = v, true
		return nil
	}, "--comm", "-comm")
	s.Func("a duration such as 10s", "", func(v string) error {
		d, err := parseDuration(v)
		o.duration = d
		return err
	}, "--duration", "-duration")
	return s
}

func streamExits(ctx context.Context, env Env, s ExitStream, o exitsOptions) int {
	out := bufio.NewWriterSize(env.Stdout, 64<<10)
	defer out.Flush()
	if !o.json {
		fmt.Fprintf(out, "%-26s  %-7s %7s %7s %7s %12s %12s %12s  %-26s  %-12s %s\n",
			"EXITED", "KIND", "PID", "TID", "PPID", "USER", "KERNEL", "TOTAL", "CREATED", "STATUS", "NAME")
		out.Flush()
	}
	var st exitsState
	var dropped uint64
	status := exitOK
	for {
		b, err := s.Next(ctx)
		if err != nil && ctx.Err() != nil {
			break
		}
		if err != nil && !errors.Is(err, taskstats.ErrMalformed) {
			fmt.Fprintf(env.Stderr, "%s: exits: %v\n", programName, err)
			status = exitFailed
			break
		}
		if err != nil { // one bad message: say so, go on
			fmt.Fprintf(env.Stderr, "%s: exits: %v\n", programName, err)
			status = exitFailed
		}
		if b.Dropped > 0 {
			dropped += b.Dropped
			reportDrops(env, out, o, b, dropped)
		}
		for _, row := range st.rows(b) {
			if !o.match(row) {
				continue
			}
			if row.err != nil {
				fmt.Fprintf(env.Stderr, "%s: exits: %v\n", programName, row.err)
				status = exitFailed
				continue
			}
			if werr := writeExitRow(out, row, o.json, env.Location); werr != nil {
				fmt.Fprintf(env.Stderr, "%s: writing output: %v\n", programName, werr)
				return exitFailed
			}
		}
		if err := out.Flush(); err != nil {
			fmt.Fprintf(env.Stderr, "%s: writing output: %v\n", programName, err)
			return exitFailed
		}
	}
	// Drops after the last report (the kernel counts them without a new
	// ENOBUFS until the queue empties).
	if total, err := s.Dropped(); err == nil && total > dropped {
		now := env.Now
		if now == nil {
			now = time.Now
		}
		reportDrops(env, out, o, taskstats.Batch{Dropped: total - dropped, DroppedExact: true, Received: now()}, total)
		dropped = total
	}
	if dropped > 0 {
		fmt.Fprintf(env.Stderr, "%s: exits: %d exit records dropped by the kernel in all\n", programName, dropped)
	}
	return status
}

func reportDrops(env Env, out *bufio.Writer, o exitsOptions, b taskstats.Batch, total uint64) {
	least := ""
	if !b.DroppedExact {
		least = "at least "
	}
	fmt.Fprintf(env.Stderr, "%s: exits: warning: %s%d exit records dropped by the kernel (the reader fell behind)\n", programName, least, b.Dropped)
	if o.json {
		encodeJSONLine(out, exitDrop{Kind: "dropped", Time: jsonTime(b.Received), Dropped: b.Dropped, DroppedTotal: total, Exact: b.DroppedExact})
	}
}

func (o exitsOptions) match(r exitRow) bool {
	switch {
	case o.pid != 0:
		return r.PID == uint32(o.pid) || r.TID != nil && *r.TID == uint32(o.pid)
	case o.hasComm:
		return r.Name == o.comm
	}
	return true
}
