package recorder

import (
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

// The start-up stub. CMD must be counted from its first instruction, so the
// counters are opened on its process before it execs CMD, and a process
// that Go's os/exec starts runs no code of ours between its fork and its
// exec. So the process execs a stub first: a static program of 160 bytes
// on amd64, 192 on arm64 (testdata/stub_*.s), held in a memfd, that
//
//   - reads one byte from the pipe whose fd is its argv[0] (in decimal):
//     cputime writes it once the counters are open;
//   - on that byte closes the pipe, marks the pipe after it (fd+1) close-on-
//     exec and execs argv[1] with argv[2:] and its environment: CMD, with
//     exactly the fds, signal dispositions and mask, limits, directory and
//     process group os/exec gave it;
//   - if that exec fails, writes its errno (4 bytes) to fd+1 and exits 127;
//   - at end-of-file, which is what it reads when cputime died before
//     writing (the kernel closes a dead process's fds, at any moment, SIGKILL
//     included), exits 125 without running CMD.
//
// Nothing stops: no ptrace, no signal to deliver. Under PTRACE_TRACEME the
// exec's SIGTRAP killed CMD when cputime died between the exec and the
// detach, and a tracer killed at the wrong instant left it stopped for good
// (issue 20: 4 and 1 in 100 kills). PTRACE_O_EXITKILL would not have
// closed that: options can be set only once the tracee has stopped, so a
// tracer that dies between the child's PTRACE_TRACEME and that first stop
// still leaves the exec's SIGTRAP to kill it, and afterwards EXITKILL kills
// CMD instead of leaving it stopped. PR_SET_PDEATHSIG was not needed: it
// fires at the death of the forking thread, not the process, and the pipe
// already says when the process is gone. Once CMD runs, a SIGKILL of
// cputime leaves it running, unrecorded (its counters go with cputime's
// fds), as time(1) leaves its command. A signal that kills the stub (a ^C
// during the start-up) ends CMD's process before CMD ran: run reports that
// end as CMD's (see release).
//
// The stub costs CMD's process one more exec and three system calls, in
// CMD's own totals (the stub is CMD's process before its exec, as the
// forked child always was). BenchmarkStub, 6 runs of 300 /bin/true on the
// 2-vCPU test VM: 0.75-0.91 ms of CPU started directly, 0.93-1.23 ms
// through the stub (medians 0.82 and 1.07 ms); 0.4-1.6 ms more wall time
// to start. (Under PTRACE_TRACEME the same measure was within the direct
// start's spread.) The arm64 stub has run under qemu-aarch64 only (the
// release, end-of-file, a failing exec, the pipes closed for CMD), not yet
// on arm64 hardware. Where no stub exists for the architecture, or memfds
// cannot be executed (vm.memfd_noexec = 2), Start returns ErrNotSupported
// and run runs CMD unrecorded.

// stubExit is the stub's exit status when cputime died before CMD could
// start: CMD did not run.
const stubExit = 125

var stub struct {
	once sync.Once
	file *os.File
	err  error
}

// stubFile returns the memfd holding the stub's executable image, created
// once per process.
func stubFile() (*os.File, error) {
	stub.once.Do(func() { stub.file, stub.err = newStubFile() })
	return stub.file, stub.err
}

func newStubFile() (*os.File, error) {
	if stubCode == nil {
		return nil, fmt.Errorf("%w: no start-up stub for this architecture", ErrNotSupported)
	}
	const mfdExec = 0x10 // MFD_EXEC, Linux 6.3: executable even under vm.memfd_noexec = 1
	fd, err := unix.MemfdCreate("cputime-start", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|mfdExec)
	if err == unix.EINVAL { // before 6.3
		fd, err = unix.MemfdCreate("cputime-start", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: creating the start-up stub: %v", ErrNotSupported, os.NewSyscallError("memfd_create", err))
	}
	// Above the fds os/exec dup2s into the child (3 onwards), which would
	// overwrite it there before the child's exec opens it.
	if high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 64); err == nil {
		unix.Close(fd)
		fd = high
	}
	f := os.NewFile(uintptr(fd), "cputime-start")
	img := stubImage()
	if _, err := f.Write(img); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the start-up stub: %w", err)
	}
	if err := unix.Fchmod(fd, 0o500); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: creating the start-up stub: %v", ErrNotSupported, os.NewSyscallError("fchmod", err))
	}
	// Sealed: nothing can change the program between two runs.
	unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE)
	return f, nil
}

// held is a started stub, waiting for its release.
type held struct {
	cmd       *exec.Cmd
	path      string // CMD's
	goW, errR *os.File
}

// startHeld starts cmd's process as the stub, waiting to exec CMD.
func startHeld(cmd *exec.Cmd) (*held, error) {
	stub, err := stubFile()
	if err != nil {
		return nil, err
	}
	if int(stub.Fd()) < 3+len(cmd.ExtraFiles)+2 { // os/exec would dup2 over it
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
	cmd.Path = stubPath(stub)
	cmd.Args = append([]string{strconv.Itoa(3 + len(extra)), path}, args...)
	cmd.ExtraFiles = append(extra[:len(extra):len(extra)], goR, errW)
	err = cmd.Start()
	cmd.Path, cmd.Args, cmd.ExtraFiles = path, args, extra
	goR.Close()
	errW.Close()
	if err != nil {
		goW.Close()
		errR.Close()
		return nil, fmt.Errorf("%w: starting the start-up stub: %v", ErrNotSupported, err)
	}
	return &held{cmd: cmd, path: path, goW: goW, errR: errR}, nil
}

// release lets the stub exec CMD and returns once it has: nil, or the
// exec's error as os/exec gives it, once the stub has been reaped. A stub
// already gone (a ^C from the terminal reaches CMD's process group during
// the start-up) is not an error: CMD's process ended before CMD ran, and
// its zombie says how, as it would had CMD started.
func (h *held) release() error {
	defer h.errR.Close()
	var errno [4]byte
	h.goW.Write(errno[:1]) // EPIPE: the stub is gone
	h.goW.Close()
	if n, _ := io.ReadFull(h.errR, errno[:]); n == 4 { // else end-of-file: the exec (or the end) closed it
		h.cmd.Wait()
		return &fs.PathError{Op: "fork/exec", Path: h.path, Err: syscall.Errno(binary.NativeEndian.Uint32(errno[:]))}
	}
	return nil
}

// abort ends the stub without running CMD, and reaps it.
func (h *held) abort() {
	h.goW.Close() // end-of-file: the stub exits 125
	h.errR.Close()
	h.cmd.Wait()
}

// stubPath is the path os/exec runs the stub by: the memfd, as the child
// sees it before its exec closes it.
func stubPath(f *os.File) string { return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) }

// stubImage is the stub's ELF executable: a header, a PT_LOAD of the whole
// file (read and execute), a PT_GNU_STACK (so that the stack is not
// executable and no personality flag reaches CMD), then the code.
func stubImage() []byte {
	const (
		ehdrSize = 64
		phdrSize = 56
		base     = 0x400000
		code     = ehdrSize + 2*phdrSize
	)
	b := make([]byte, code+len(stubCode))
	le := binary.LittleEndian
	copy(b, "\x7fELF\x02\x01\x01") // 64-bit, little-endian, version 1, System V ABI
	le.PutUint16(b[16:], 2)        // ET_EXEC
	le.PutUint16(b[18:], stubMachine)
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[24:], base+code) // entry
	le.PutUint64(b[32:], ehdrSize)  // program headers
	le.PutUint16(b[52:], ehdrSize)
	le.PutUint16(b[54:], phdrSize)
	le.PutUint16(b[56:], 2)
	le.PutUint16(b[58:], 64) // section header size; there are none
	load := b[ehdrSize:]
	le.PutUint32(load[0:], 1) // PT_LOAD
	le.PutUint32(load[4:], 5) // PF_R|PF_X
	le.PutUint64(load[16:], base)
	le.PutUint64(load[24:], base)
	le.PutUint64(load[32:], uint64(len(b)))
	le.PutUint64(load[40:], uint64(len(b)))
	le.PutUint64(load[48:], 0x10000) // up to 64 KiB pages (arm64)
	stack := b[ehdrSize+phdrSize:]
	le.PutUint32(stack[0:], 0x6474e551) // PT_GNU_STACK
	le.PutUint32(stack[4:], 6)          // PF_R|PF_W
	le.PutUint64(stack[48:], 16)
	copy(b[code:], stubCode)
	return b
}
