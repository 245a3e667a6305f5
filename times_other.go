//go:build !linux && !windows

package cputime

import (
	"context"
	"fmt"
	"github.com/cputime/cputime/internal/account"
	"os"
	"runtime"
)

// The native Windows backend (GetProcessTimes, GetThreadTimes through
// kernel32) is not written yet; until it is, every query on a platform other
// than Linux fails with ErrNotSupported.

var errPlatform = fmt.Errorf("%s: %w (only Linux is implemented)", runtime.GOOS, ErrNotSupported)

func getpid() int { return os.Getpid() }
func gettid() int { return 0 }

type processSys struct{}

func (*processSys) open(*Process, int, bool) error       { return errPlatform }
func (*processSys) times(*Process) (Times, error)        { return Times{}, errPlatform }
func (*processSys) wait(context.Context, *Process) error { return errPlatform }
func (*processSys) close() error                         { return nil }
func (*processSys) finalExact() bool                     { return false }

type threadSys struct{}

func (*threadSys) open(*Thread, int) error             { return errPlatform }
func (*threadSys) times(*Thread) (Times, error)        { return Times{}, errPlatform }
func (*threadSys) wait(context.Context, *Thread) error { return errPlatform }
func (*threadSys) close() error                        { return nil }

func threads(_ int, yield func(ThreadInfo, error) bool) { yield(ThreadInfo{}, errPlatform) }
func allThreads(yield func(ThreadInfo, error) bool)     { yield(ThreadInfo{}, errPlatform) }
func processes(yield func(ProcessInfo, error) bool)     { yield(ProcessInfo{}, errPlatform) }
func processInfoOf(int) (ProcessInfo, error)            { return ProcessInfo{}, errPlatform }

func threadSample() (cpuSample, error) { return cpuSample{}, errPlatform }

type cpuSample = account.Evidence

func datingOffset() int64 { return 0 }

func oneShotProcessTimes(pid int) (Times, error) { return openedProcessTimes(pid) }
func oneShotThreadTimes(tid int) (Times, error)  { return openedThreadTimes(tid) }
