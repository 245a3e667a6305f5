package engine

import (
	"sync"

	"github.com/cputime/cputime/internal/account"
	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/procfs"
)

// Config is what an Engine reads and how. The zero Config is the system's:
// the proc file system at /proc, pidfds and exit probes where the kernel
// has them, and the process's clocks (account.System).
type Config struct {
	// ProcRoot is where the proc file system is mounted; "" is /proc.
	// Under another root (a hidepid instance, a fixture tree), the paths
	// that need /proc to be the kernel's own and the clocks' (the pidfd
	// one-shots, cycle times by clock) are not taken.
	ProcRoot string
	// NoPidfd makes handles do without pidfds, as on kernels that have
	// none: a kept-open stat file binds a handle to its task, and the
	// exit poller finds its exit.
	NoPidfd bool
	// NoExitProbe makes handles poll their pidfd to tell whether their
	// task has exited, rather than ask an exit probe (kernel.OpenExitProbe).
	NoExitProbe bool
	// NoSchedstat makes threads of other processes read their stat
	// file's tick counts, as on kernels without schedstat files.
	NoSchedstat bool
	// Clocks date creations and check run times; nil is account.System.
	Clocks *account.Clocks
}

// Engine answers the queries of package cputime over one Config. Its
// methods are safe for concurrent use. The exit watcher and poller are the
// process's, shared by every Engine; what an Engine learns of tasks (the
// pidfd one-shots' memory) is its own.
type Engine struct {
	proc   procfs.FS
	native bool // proc is /proc: the kernel's own, whose ids are the clocks'
	pidfd  bool
	probe  bool
	clocks *account.Clocks
	// useSchedstat: schedstat files where the kernel has them.
	useSchedstat bool

	asked      askedSet
	identities identityCache
}

// New returns an Engine over c.
func New(c Config) *Engine {
	root := c.ProcRoot
	if root == "" {
		root = "/proc"
	}
	clocks := c.Clocks
	if clocks == nil {
		clocks = account.System
	}
	return &Engine{
		proc:   procfs.NewFS(root),
		native: root == "/proc",
		pidfd:  !c.NoPidfd,
		probe:  !c.NoExitProbe,
		clocks: clocks,

		useSchedstat: !c.NoSchedstat,
	}
}

// Default is the Engine over the zero Config, which package cputime's
// functions use.
var Default = New(Config{})

// ProcRoot returns where the Engine reads the proc file system.
func (eng *Engine) ProcRoot() string { return eng.proc.Root() }

// UsesPidfd reports whether the Engine binds tasks with pidfds where the
// kernel has them.
func (eng *Engine) UsesPidfd() bool { return eng.pidfd }

// Clocks returns the clocks the Engine dates and checks with.
func (eng *Engine) Clocks() *account.Clocks { return eng.clocks }

// PidfdIdentities reports whether the Engine's one-shots can know a task
// by the pidfs inode of its pidfd (oneshot_pidfd_linux.go): pidfds in use,
// pidfs (Linux 6.9, 64-bit), and a /proc that is the clocks'.
func (eng *Engine) PidfdIdentities() bool {
	return eng.pidfd && eng.native && clockIsProc() && kernel.PidfsIdentities()
}

// sysProc is the kernel's /proc, which the calling process's own reads
// (its pseudo-handles, its threads' schedulers) take whatever an Engine's
// root: they are facts of this process, not of a proc tree.
var sysProc = procfs.NewFS("/proc")

// askedSet is the ids asked about once (oneshot_pidfd_linux.go).
type askedSet struct {
	sync.Mutex
	m map[taskKey]struct{}
}

// identityCache maps pidfs inode numbers to what was learned of their task
// (oneshot_pidfd_linux.go).
type identityCache struct {
	sync.Mutex
	m map[identityKey]identity
}
