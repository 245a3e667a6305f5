package engine

import "time"

// Times is cputime.Times as the engine reports it; package cputime copies it
// field by field into its own (fromEngine), which documents each field.
type Times struct {
	Creation   time.Time
	Exit       time.Time
	ExitSource ExitSource
	Kernel     time.Duration
	User       time.Duration
}

// Total is Kernel + User.
func (t Times) Total() time.Duration { return t.Kernel + t.User }

// ExitSource is cputime.ExitSource, with the same values.
type ExitSource uint8

const (
	ExitNone ExitSource = iota
	ExitObserved
	ExitScheduler
	ExitNoLaterThan
)

// ThreadInfo is cputime.ThreadInfo.
type ThreadInfo struct {
	ID        int
	ProcessID int
	Name      string
	Times     Times
}

// ProcessInfo is cputime.ProcessInfo.
type ProcessInfo struct {
	ID       int
	ParentID int
	Name     string
	Threads  int
	Times    Times
	Cycles   uint64
}
