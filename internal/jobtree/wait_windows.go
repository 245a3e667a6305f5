package jobtree

import (
	"context"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime/internal/winapi"
)

// emptyPoll is how often WaitEmpty reads the job's count of running
// processes besides waiting for its message, for a system that does not
// post JOB_OBJECT_MSG_ACTIVE_PROCESS_ZERO (Wine's port may not).
const emptyPoll = 100 * time.Millisecond

// WaitEmpty waits, once the command has exited, up to limit for the job to
// hold no running process. Where the time runs out or ctx is done first,
// kill ends the processes left (TerminateJobObject): their times so far
// are in the job's totals. Call it before Finish, whose stop ends the
// watch of the job's messages.
func (t *Tree) WaitEmpty(ctx context.Context, limit time.Duration, kill bool) Wait {
	var w Wait
	if n, err := t.active(); err == nil && n == 0 {
		return w
	}
	start := time.Now()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	poll := time.NewTicker(emptyPoll)
	defer poll.Stop()
	for {
		select {
		case <-t.empty:
			w.Waited = time.Since(start)
			return w
		case <-poll.C:
			if n, err := t.active(); err == nil && n == 0 {
				w.Waited = time.Since(start)
				return w
			}
			continue
		case <-timer.C:
			w.TimedOut = true
		case <-ctx.Done():
		}
		break
	}
	w.Waited = time.Since(start)
	w.Left, _ = t.active()
	if kill && w.Left > 0 && windows.TerminateJobObject(t.job, 1) == nil {
		w.Killed, w.Left = w.Left, 0
	}
	return w
}

// active is the job's count of running processes.
func (t *Tree) active() (int, error) {
	var acct winapi.JOBOBJECT_BASIC_ACCOUNTING_INFORMATION
	err := windows.QueryInformationJobObject(t.job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&acct)), uint32(unsafe.Sizeof(acct)), nil)
	return int(acct.ActiveProcesses), err
}
