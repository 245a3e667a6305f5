// Package timeline turns a recorded process tree (every process and thread
// with its creation, exit and CPU times) into pictures people can open: a
// Chrome trace-event JSON file (Perfetto UI, chrome://tracing) and a
// self-contained HTML/SVG timeline.
//
// The recorder behind "cputime run --tree" fills a Recording; this package
// only draws it, so it has no Linux- or Windows-specific code.
package timeline

import "time"

// Recording is one recorded run: every process of the tree, parents before
// their children.
type Recording struct {
	// Start and End bound the recording: the moment the top process was
	// started and the moment the last task of the tree was seen to exit.
	Start, End time.Time
	Processes  []Process
}

// Process is one process of the tree.
type Process struct {
	ID     int
	Parent int // the parent's ID; 0 for the top process
	Name   string
	// Creation and Exit are the process's; Exit is zero if the process had
	// not exited when the recording ended.
	Creation, Exit time.Time
	// User and Kernel are the process's own final times: the sum over all
	// its threads, without its children.
	User, Kernel time.Duration
	Threads      []Thread
}

// Thread is one thread of a process, its main thread included.
type Thread struct {
	ID             int
	Name           string
	Creation, Exit time.Time // Exit zero if still running at End
	User, Kernel   time.Duration
	// Samples, where the recorder took them, are the thread's cumulative
	// CPU time (user+kernel) at moments between Creation and Exit, in
	// increasing order. They may be empty.
	Samples []Sample
	// Incomplete says the recorder saw the thread exit but not all of its
	// final count arrive: User and Kernel are then less than it used.
	Incomplete bool
	// NoTicks says no tick evidence of the thread's own split was seen
	// (it lived between two of the recorder's reads of its stat): its
	// User and Kernel are a share of what the tree's ticks leave over
	// (recorder.ShareSplit), or all User if that was not applied.
	NoTicks bool
	// Estimated is the part of User+Kernel that no per-task source gave:
	// the thread's share of what its process's or the tree's exact total
	// leaves over the exit records (the stretch after each thread's last
	// tick, the exits' last instants; recorder.FitTree).
	Estimated time.Duration
	// EstimateCap is the most the stretch after the thread's last tick
	// can be (recorder.FitTree shares within it).
	EstimateCap time.Duration
}

// Sample is a thread's cumulative CPU time at one moment.
type Sample struct {
	At  time.Time
	CPU time.Duration
}
