package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cputime/cputime/internal/taskstats"
)

// fakeExits replays fixed batches, then waits for the end of the run.
type fakeExits struct {
	batches []taskstats.Batch
	errs    map[int]error
	i       int
	dropped uint64
	closed  bool
}

func (f *fakeExits) Next(ctx context.Context) (taskstats.Batch, error) {
	if f.i < len(f.batches) {
		f.i++
		return f.batches[f.i-1], f.errs[f.i-1]
	}
	<-ctx.Done()
	return taskstats.Batch{}, ctx.Err()
}

func (f *fakeExits) Dropped() (uint64, error) { return f.dropped, nil }
func (f *fakeExits) Close() error             { f.closed = true; return nil }

// runExits runs the command line with s (or err) as the stream of exit
// records, and a clock that reads a second after exitsT0.
func runExits(t *testing.T, s ExitStream, err error, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	return runEnv(t, Env{Source: fake{}, Cycles: fakeCycles{},
		Exits: func() (ExitStream, error) { return s, err },
		Now:   func() time.Time { return exitsT0.Add(time.Second) }}, args...)
}

var exitsT0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func exitsFixture() *fakeExits {
	st := func(pid, tgid, ppid uint32, comm string, etimeUs, utimeUs, stimeUs, runNs uint64, flag uint8, code uint32) taskstats.Stats {
		return taskstats.Stats{
			Version: 16, Size: 560, PID: pid, TGID: tgid, PPID: ppid, Comm: comm,
			ETime: etimeUs, TGETime: etimeUs + 1000, UTime: utimeUs, STime: stimeUs,
			CPURunRealTotal: (utimeUs + stimeUs) * 1000, CPURunVirtualTotal: runNs,
			Flag: flag, ExitCode: code, ExeDev: 1, ExeInode: 2, NVCSW: 3, NIVCSW: 4,
		}
	}
	rec := func(kind taskstats.Kind, id uint32, s taskstats.Stats) taskstats.Record {
		return taskstats.Record{Kind: kind, ID: id, Stats: s}
	}
	at := func(ms int) time.Time { return exitsT0.Add(time.Duration(ms) * time.Millisecond) }
	return &fakeExits{
		batches: []taskstats.Batch{
			// A single-threaded process that exited with status 3.
			{Received: at(100), Records: []taskstats.Record{
				rec(taskstats.Thread, 500, st(500, 500, 1, "sh", 50000, 40000, 8000, 49_123_456, taskstats.AGROUP, 3<<8)),
			}},
			// A multi-threaded one: the leader exits first (killed by
			// SIGSEGV, core dumped), a worker with a hostile name last.
			{Received: at(200), Records: []taskstats.Record{
				rec(taskstats.Thread, 600, st(600, 600, 1, "app", 90000, 4000, 0, 5_000_000, taskstats.AXSIG, 0x80|11)),
			}},
			{Received: at(210), Records: []taskstats.Record{
				rec(taskstats.Thread, 601, func() taskstats.Stats {
					s := st(601, 600, 1, "w\x1b[2Jorker", 80000, 8000, 4000, 12_345_678, taskstats.AGROUP, 0)
					s.TGETime = 100000 // the leader's start
					return s
				}()),
				rec(taskstats.Process, 600, taskstats.Stats{Version: 16, Size: 560, UTime: 12000, STime: 4000,
					CPURunRealTotal: 16_000_000, CPURunVirtualTotal: 17_345_678, ETime: 170000}),
			}},
			// The reader fell behind.
			{Received: at(300), Dropped: 7, DroppedExact: true},
			// A kernel thread: never in user mode.
			{Received: at(400), Records: []taskstats.Record{
				rec(taskstats.Thread, 700, func() taskstats.Stats {
					s := st(700, 700, 2, "kworker/0:1", 1000, 0, 0, 250_000, taskstats.AGROUP, 0)
					s.ExeDev, s.ExeInode = 0, 0
					return s
				}()),
			}},
			// A record that waited in the queue for 2 s: the kernel dated
			// it within the second after 10:00:00 (ac_btime 09:59:59 +
			// 1.5 s of life, whole seconds), so it exited by 10:00:01.
			{Received: at(3000), Records: []taskstats.Record{
				rec(taskstats.Thread, 900, func() taskstats.Stats {
					s := st(900, 900, 1, "late", 1_500_000, 0, 0, 1000, taskstats.AGROUP, 0)
					s.BTime = uint64(exitsT0.Unix() - 1)
					return s
				}()),
			}},
			// A thread that ran longer than it lived: said, not printed.
			{Received: at(450), Records: []taskstats.Record{
				rec(taskstats.Thread, 801, st(801, 800, 1, "liar", 1000, 0, 0, 900_000_000, 0, 0)),
			}},
			// A message that did not decode: said, and the stream goes on.
			{Received: at(500)},
		},
		errs:    map[int]error{7: fmt.Errorf("%w: attribute at offset 4 claims 200 bytes of 8", taskstats.ErrMalformed)},
		dropped: 9, // two more dropped after the last report
	}
}

func TestExitsGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"exits.txt", []string{"exits", "--duration", "50ms"}},
		{"exits.json", []string{"exits", "--json", "--duration=50ms"}},
		{"exits-pid.txt", []string{"exits", "--pid", "600", "--duration", "0.05"}}, // seconds, as a number
		{"exits-comm.json", []string{"exits", "--json", "--comm", "sh", "--duration", "50ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := exitsFixture()
			stdout, stderr, status := runExits(t, f, nil, tc.args...)
			if status != exitFailed { // the malformed message
				t.Errorf("status %d, want %d", status, exitFailed)
			}
			if !f.closed {
				t.Error("stream not closed")
			}
			golden(t, tc.name, stdout+"--- stderr\n"+stderr)
		})
	}
}

// The split follows the project's rule, and the parts add up to the total.
func TestExitsSplit(t *testing.T) {
	f := exitsFixture()
	stdout, _, _ := runExits(t, f, nil, "exits", "--json", "--duration", "50ms")
	for line := range strings.Lines(stdout) {
		if !strings.Contains(line, `"kind":"thread"`) && !strings.Contains(line, `"kind":"process"`) {
			continue
		}
		var r exitRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.UserNs == nil || r.KernelNs == nil || *r.UserNs+*r.KernelNs != r.TotalNs {
			t.Errorf("pid %d: user %v + kernel %v != total %d", r.PID, r.UserNs, r.KernelNs, r.TotalNs)
		}
	}
}

func TestExitsErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: this process does not have it (run as root)", taskstats.ErrPermission), "needs CAP_NET_ADMIN"},
		{fmt.Errorf("%w: this process is in a user namespace of its own (a container?)", taskstats.ErrNamespace), "only given to the initial user and pid namespaces"},
		{fmt.Errorf("%w on windows: it is a Linux interface", taskstats.ErrNotSupported), "not supported on windows"},
	} {
		_, stderr, status := runExits(t, nil, tc.err, "exits")
		if status != exitFailed || !strings.HasPrefix(stderr, "cputime: exits: ") || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: status %d, stderr %q; want one line with %q", tc.err, status, stderr, tc.want)
		}
	}
	for _, args := range [][]string{
		{"exits", "--pid"}, {"exits", "--pid", "0"}, {"exits", "--duration", "-1s"},
		{"exits", "--duration", "soon"}, {"exits", "--bogus"}, {"exits", "--pid", "1", "--comm", "x"},
	} {
		_, stderr, status := runExits(t, nil, errors.New("the stream was opened"), args...)
		if status != exitUsage || !strings.HasPrefix(stderr, "cputime: exits: ") {
			t.Errorf("%q: status %d, stderr %q", args, status, stderr)
		}
	}
}

// A record received within the second the kernel dated it keeps its
// arrival as the exit time.
func TestExitsKernelSecond(t *testing.T) {
	s := taskstats.Stats{BTime: uint64(exitsT0.Unix()), ETime: 2_300_000}
	var row exitRow
	in := exitsT0.Add(2900 * time.Millisecond)
	row.exit, row.ExitTimeSource = in, "received"
	row.setExit(in, s)
	if !row.exit.Equal(in) || row.ExitTimeSource != "received" {
		t.Errorf("in the second: %v %s", row.exit, row.ExitTimeSource)
	}
	row.setExit(exitsT0.Add(3001*time.Millisecond), s)
	if !row.exit.Equal(exitsT0.Add(3*time.Second)) || row.ExitTimeSource != "kernel_second" {
		t.Errorf("after it: %v %s", row.exit, row.ExitTimeSource)
	}
}
