// Package procfs reads and parses the Linux proc files that cputime needs:
// /proc/[pid]/stat, /proc/[pid]/status, /proc/[pid]/task/[tid]/stat and
// schedstat, and /proc/stat.
//
// Reading is separate from parsing. The Parse functions take the bytes of one
// file and never touch the file system, so they are tested against fixture
// bytes and fuzzed; [FS] reads files below a mount point given to [NewFS], so
// tests point it at the fixture tree in testdata/fixtures/proc. Every parse
// error wraps [ErrFileParse]; every malformed id wraps [ErrInvalidID]; errors
// from the operating system keep their errno (errors.Is(err, fs.ErrNotExist),
// syscall.ESRCH, syscall.EACCES) and the path.
//
// The parsers and [FS] build on every platform, so that packages importing
// procfs still compile on Windows. [File], the kept-open descriptor read with
// pread(2) on hot paths, works only on Linux; elsewhere [OpenFile] returns an
// error wrapping errors.ErrUnsupported.
//
// Clock ticks: the times in stat files are in USER_HZ ticks (sysconf
// _SC_CLK_TCK, 100 on every architecture Go supports on Linux), not in the
// kernel's internal HZ.
package procfs
