// Package jobtree runs a command in a Windows job object of its own and
// reports, once the command has exited, the whole tree's CPU times and a
// record of every process that was in the job: what "cputime run" says
// about CMD's descendants on Windows.
//
// On Windows, Start creates the command suspended (CREATE_SUSPENDED),
// assigns it to a new job before it runs one instruction, and only then
// resumes its main thread (found in a Toolhelp32 thread snapshot). Every
// process the command creates joins the job unless it breaks away. The
// job keeps, in JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, the user and
// kernel time of every process ever in it, terminated ones included: the
// tree's totals. The job lets a process leave it on request
// (JOB_OBJECT_LIMIT_BREAKAWAY_OK), as CMD's processes could without
// cputime; one that does (CREATE_BREAKAWAY_FROM_JOB) is then in neither the
// totals nor the record, as a daemon is not in time(1)'s. An I/O completion port associated with the job receives
// JOB_OBJECT_MSG_NEW_PROCESS for each process as it joins; a goroutine
// opens each one at once (PROCESS_QUERY_LIMITED_INFORMATION and
// SYNCHRONIZE) and keeps the handle, so that GetProcessTimes still answers
// for it after it exits. A process that exits and vanishes before its
// handle opens is counted as missed, with its id.
//
// Nested jobs exist since Windows 8: where the assignment fails (an older
// Windows, a job that forbids breakaway around cputime itself), Start says
// why and the command runs outside any job.
//
// Wine (8.0) delivers the job's messages but answers the job's accounting
// with zero times, and GetProcessTimes of another process with the
// caller's own times. Under Wine the tree's processes are therefore also
// sampled every SampleInterval from the process snapshot
// (NtQuerySystemInformation), which Wine fills from /proc while they run,
// and where the job's times are zero the totals are the sum over the
// processes' last samples: a lower bound, said so in Result.Precision.
//
// Elsewhere Start returns an error wrapping ErrNotSupported without
// starting the command.
package jobtree

import (
	"errors"
	"time"
)

// ErrNotSupported is wrapped by Start where the command cannot be run in
// a job: not Windows, or the system refused the job.
var ErrNotSupported = errors.New("running the command in a job object is not supported")

// SampleInterval is how often the tree's processes are sampled where the
// system's handles do not give their times (Wine).
const SampleInterval = 10 * time.Millisecond

// Wait is what Tree.WaitEmpty saw.
type Wait struct {
	// Waited is how long it waited for the job to empty; TimedOut says
	// the time ran out first.
	Waited   time.Duration
	TimedOut bool
	// Left is how many processes were still running in the job when the
	// wait ended, Killed how many of them it ended.
	Left, Killed int
}

// Process is one process that was in the job.
type Process struct {
	ID     int
	Parent int // the id of the process that created it
	Name   string
	// Creation and Exit are the process's; Exit is zero if it was still
	// running when the record was taken.
	Creation, Exit time.Time
	// User and Kernel are the process's own times (its threads', not its
	// children's), in 100 ns units charged a clock tick at a time; under
	// Wine, its last sample while it ran (see the package doc), a lower
	// bound, as Result.Precision says.
	User, Kernel time.Duration
}

// Result is what the job saw, read after the command exited.
type Result struct {
	// User and Kernel are the tree's totals: every process ever in the
	// job, those still running included (their times so far).
	User, Kernel time.Duration
	// Precision says where the totals come from and how exact they are.
	Precision string
	// Processes are the processes seen joining the job, the command
	// first, then in the order they joined.
	Processes []Process
	// Missed are the ids of processes that joined the job but were gone
	// before their handle opened: their times are in the totals only
	// where the job's accounting works.
	Missed []int
	// Joined is the job's own count of the processes ever in it.
	Joined int
	// Note, if not empty, says what the record lacks and why.
	Note string
}
