package recorder

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The launcher. CMD must be counted from its first instruction, so the
// counters are opened on its process before it execs CMD, and a process
// that Go's os/exec starts runs no code of ours between its fork and its
// exec. So the process execs the launcher first: a static program of under
// 200 bytes (testdata/launcher_*.s), held in a memfd, that
//
//   - reads one byte from the pipe whose fd is its argv[0] (in decimal):
//     cputime writes it once the counters are open;
//   - on that byte closes the pipe, marks the pipe after it (fd+1)
//     close-on-exec and execs argv[1] with argv[2:] and its environment:
//     CMD, with exactly the fds, signal dispositions and mask, limits,
//     directory and process group os/exec gave it;
//   - if that exec fails, writes its errno (4 bytes) to fd+1 and exits 127;
//   - at end-of-file, which is what it reads when cputime died before
//     writing (the kernel closes a dead process's fds, at any moment,
//     SIGKILL included), exits 125 without running CMD.
//
// Nothing stops: no ptrace, no signal to deliver. Under PTRACE_TRACEME the
// exec's SIGTRAP kills CMD when cputime dies between the exec and the
// detach, and a tracer killed at the wrong instant leaves it stopped for
// good. PTRACE_O_EXITKILL would not close that: options can be set only
// once the tracee has stopped, so a tracer that dies between the child's
// PTRACE_TRACEME and that first stop still leaves the exec's SIGTRAP to
// kill it, and afterwards EXITKILL kills CMD instead of leaving it
// stopped. PR_SET_PDEATHSIG is not needed: it fires at the death of the
// forking thread, not the process, and the pipe already says when the
// process is gone. Once CMD runs, a SIGKILL of cputime leaves it running,
// unrecorded (its counters go with cputime's fds), as time(1) leaves its
// command. A signal that kills the launcher (a ^C during the start-up)
// ends CMD's process before CMD ran: run reports that end as CMD's (see
// release).
//
// The launcher costs CMD's process one more exec and three system calls,
// in CMD's own totals (the launcher is CMD's process before its exec, as
// the forked child is); BenchmarkLauncher measures it (docs/figures.md).
// The arm64 launcher has run under qemu-aarch64 only (the release,
// end-of-file, a failing exec, the pipes closed for CMD), not on arm64
// hardware. Where no launcher exists for the architecture, or memfds
// cannot be executed (vm.memfd_noexec = 2), Start returns ErrNotSupported
// and run runs CMD unrecorded.

// launcherExit is the launcher's exit status when cputime died before CMD could
// start: CMD did not run.
const launcherExit = 125

var launcher struct {
	once sync.Once
	file *os.File
	err  error
}

// launcherFile returns the memfd holding the launcher's executable image, created
// once per process.
func launcherFile() (*os.File, error) {
	launcher.once.Do(func() { launcher.file, launcher.err = newLauncherFile() })
	return launcher.file, launcher.err
}

func newLauncherFile() (*os.File, error) {
	if launcherCode == nil {
		return nil, fmt.Errorf("%w: no launcher for this architecture", ErrNotSupported)
	}
	const mfdExec = 0x10 // MFD_EXEC, Linux 6.3: executable even under vm.memfd_noexec = 1
	fd, err := unix.MemfdCreate("cputime-launcher", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|mfdExec)
	if err == unix.EINVAL { // before 6.3
		fd, err = unix.MemfdCreate("cputime-launcher", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: creating the launcher: %v", ErrNotSupported, os.NewSyscallError("memfd_create", err))
	}
	// Above the fds os/exec dup2s into the child (3 onwards), which would
	// overwrite it there before the child's exec opens it.
	if high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 64); err == nil {
		unix.Close(fd)
		fd = high
	}
	f := os.NewFile(uintptr(fd), "cputime-launcher")
	img := launcherImage()
	if _, err := f.Write(img); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the launcher: %w", err)
	}
	if err := unix.Fchmod(fd, 0o500); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: creating the launcher: %v", ErrNotSupported, os.NewSyscallError("fchmod", err))
	}
	// Sealed: nothing can change the program between two runs.
	unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE)
	return f, nil
}

// held is a started launcher, waiting for its release.
type held struct {
	cmd       *exec.Cmd
	path      string // CMD's
	goW, errR *os.File
}

// startHeld starts cmd's process as the launcher, waiting to exec CMD.
func startHeld(cmd *exec.Cmd) (*held, error) {
	l, err := launcherFile()
	if err != nil {
		return nil, err
	}
	if int(l.Fd()) < 3+len(cmd.ExtraFiles)+2 { // os/exec would dup2 over it
		return nil, fmt.Errorf("%w: %d extra files", ErrNotSupported, len(cmd.ExtraFiles))
	}
	goR, goW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		goR.Close()
		goW.Close()
		return nil, err
	}
	path, args, extra := cmd.Path, cmd.Args, cmd.ExtraFiles
	cmd.Path = launcherPath(l)
	cmd.Args = append([]string{strconv.Itoa(3 + len(extra)), path}, args...)
	cmd.ExtraFiles = append(extra[:len(extra):len(extra)], goR, errW)
	err = cmd.Start()
	cmd.Path, cmd.Args, cmd.ExtraFiles = path, args, extra
	goR.Close()
	errW.Close()
	if err != nil {
		goW.Close()
		errR.Close()
		return nil, fmt.Errorf("%w: starting the launcher: %v", ErrNotSupported, err)
	}
	return &held{cmd: cmd, path: path, goW: goW, errR: errR}, nil
}

// release lets the launcher exec CMD and returns once it has: nil, or the
// exec's error as os/exec gives it, once the launcher has been reaped. A launcher
// already gone (a ^C from the terminal reaches CMD's process group during
// the start-up) is not an error: CMD's process ended before CMD ran, and
// its zombie says how, as it would had CMD started.
func (h *held) release() error {
	defer h.errR.Close()
	var errno [4]byte
	h.goW.Write(errno[:1]) // EPIPE: the launcher is gone
	h.goW.Close()
	if n, _ := io.ReadFull(h.errR, errno[:]); n == 4 { // else end-of-file: the exec (or the end) closed it
		h.cmd.Wait()
		return &fs.PathError{Op: "fork/exec", Path: h.path, Err: syscall.Errno(binary.NativeEndian.Uint32(errno[:]))}
	}
	return nil
}

// abort ends the launcher without running CMD, and reaps it.
func (h *held) abort() {
	h.goW.Close() // end-of-file: the launcher exits 125
	h.errR.Close()
	h.cmd.Wait()
}

// launcherPath is the path os/exec runs the launcher by: the memfd, as the child
// sees it before its exec closes it.
func launcherPath(f *os.File) string { return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) }

// launcherImage is the launcher's ELF executable: a header, a PT_LOAD of
// the whole file (read and execute), a PT_GNU_STACK (so that the stack is
// not executable and no personality flag reaches CMD), then the code. No
// section headers: the kernel loads by segments alone. Both launchers'
// architectures are little-endian.
func launcherImage() []byte {
	const (
		base = 0x400000 // the customary load address of a static executable
		// The largest page size the segment may be loaded with (arm64's
		// 64 KiB pages); the address and offset agree modulo it.
		pageAlign  = 0x10000
		stackAlign = 16
	)
	order := binary.LittleEndian
	ehdrSize := binary.Size(elf.Header64{})
	phdrSize := binary.Size(elf.Prog64{})
	codeOff := ehdrSize + 2*phdrSize
	size := uint64(codeOff + len(launcherCode))
	hdr := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(launcherMachine),
		Version:   uint32(elf.EV_CURRENT),
		Entry:     base + uint64(codeOff),
		Phoff:     uint64(ehdrSize),
		Ehsize:    uint16(ehdrSize),
		Phentsize: uint16(phdrSize),
		Phnum:     2,
		Shentsize: uint16(binary.Size(elf.Section64{})),
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	hdr.Ident[elf.EI_OSABI] = byte(elf.ELFOSABI_NONE)
	load := elf.Prog64{
		Type:   uint32(elf.PT_LOAD),
		Flags:  uint32(elf.PF_R | elf.PF_X),
		Off:    0,
		Vaddr:  base,
		Paddr:  base,
		Filesz: size,
		Memsz:  size,
		Align:  pageAlign,
	}
	stack := elf.Prog64{
		Type:  uint32(elf.PT_GNU_STACK),
		Flags: uint32(elf.PF_R | elf.PF_W),
		Align: stackAlign,
	}
	b := make([]byte, 0, size)
	b, _ = binary.Append(b, order, hdr) // fixed-size structs: no error
	b, _ = binary.Append(b, order, load)
	b, _ = binary.Append(b, order, stack)
	return append(b, launcherCode...)
}
