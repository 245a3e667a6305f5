package sampler

// SetProcRoot points the samplers created after it at another proc mount
// (a test's hidepid=1 instance).
func SetProcRoot(root string) { procRoot = root }

// SetAfterProcClock has f called with a process's pid right after each
// read of its CPU clock, before its state is looked at (nil: none).
func SetAfterProcClock(f func(pid int)) { afterProcClock = f }
