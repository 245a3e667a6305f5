package taskstats

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// check is Check, except in the tests that ask the kernel itself.
var check = Check

// Inode numbers of the initial namespaces (PROC_USER_INIT_INO,
// PROC_PID_INIT_INO in include/linux/proc_ns.h; fixed since Linux 3.8).
const (
	initUserNSIno = 0xEFFFFFFD
	initPIDNSIno  = 0xEFFFFFFC
)

const capNetAdmin = 12 // CAP_NET_ADMIN, include/uapi/linux/capability.h

// Check reports whether this process may receive exit records: it needs
// CAP_NET_ADMIN (the kernel's GENL_ADMIN_PERM on TASKSTATS_CMD_GET) in the
// initial user and pid namespaces (add_del_listener refuses others). The
// error wraps ErrPermission or ErrNamespace and says which.
func Check() error {
	if err := checkNamespace("user", initUserNSIno); err != nil {
		return err
	}
	if err := checkNamespace("pid", initPIDNSIno); err != nil {
		return err
	}
	eff, err := effectiveCaps()
	if err != nil {
		return nil // no /proc: let the kernel decide
	}
	if eff&(1<<capNetAdmin) == 0 {
		return fmt.Errorf("%w: this process does not have it (run as root)", ErrPermission)
	}
	return nil
}

func checkNamespace(name string, want uint64) error {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/"+name, &st); err != nil {
		return nil // no /proc or no namespaces: let the kernel decide
	}
	if st.Ino != want {
		return fmt.Errorf("%w: this process is in a %s namespace of its own (a container?)", ErrNamespace, name)
	}
	return nil
}

func effectiveCaps() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff in /proc/self/status")
}

// possibleCPUs is the kernel's list of possible CPUs, which the listener
// registers for: a CPU brought online later is already covered.
func possibleCPUs() string {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if s := strings.TrimSpace(string(b)); err == nil && s != "" {
		return s
	}
	if n := runtime.NumCPU(); n > 1 {
		return "0-" + strconv.Itoa(n-1)
	}
	return "0"
}

// conn is a generic netlink socket driven by the runtime's poller, so that
// a receive can be woken by a deadline.
type conn struct {
	f   *os.File
	rc  syscall.RawConn
	seq uint32
	buf []byte
}

// dial opens a taskstats socket. An unpolled one is blocking and kept out
// of the Go runtime's poller: no thread is woken when a message arrives
// (TryNext takes them with MSG_DONTWAIT), and Next cannot be cancelled.
func dial(rcvbuf int, unpolled bool) (*conn, error) {
	typ := unix.SOCK_RAW | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK
	if unpolled {
		typ &^= unix.SOCK_NONBLOCK
	}
	fd, err := unix.Socket(unix.AF_NETLINK, typ, unix.NETLINK_GENERIC)
	if err != nil {
		if errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EPROTONOSUPPORT) {
			return nil, fmt.Errorf("%w: no generic netlink: %v", ErrNotSupported, err)
		}
		return nil, os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	if rcvbuf > 0 {
		// The kernel doubles the value for its bookkeeping, as for SO_RCVBUF.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf); err != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf)
		}
	}
	f := os.NewFile(uintptr(fd), "taskstats")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &conn{f: f, rc: rc, buf: make([]byte, 64<<10)}, nil
}

func (c *conn) send(msg []byte) error {
	var serr error
	err := c.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		return serr != unix.EAGAIN
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return os.NewSyscallError("sendto", err)
	}
	return nil
}

// recv reads one datagram; the slice is valid until the next recv.
func (c *conn) recv() ([]byte, error) {
	var n int
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), c.buf, unix.MSG_TRUNC)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	if n > len(c.buf) {
		c.buf = make([]byte, 2*n)
		return nil, fmt.Errorf("%w: a message of %d bytes, more than the %d-byte buffer", ErrMalformed, n, len(c.buf)/2)
	}
	return c.buf[:n], nil
}

// request sends a generic netlink request with an acknowledgement asked
// for and returns its sequence number.
func (c *conn) request(family uint16, cmd, version uint8, attrs []byte) (uint32, error) {
	c.seq++
	msg := appendMessage(nil, family, nlmFRequest|nlmFAck, c.seq, cmd, version, attrs)
	return c.seq, c.send(msg)
}

// ackOf reports whether datagram b is the acknowledgement (or error) for
// request seq, and the error it carries.
func ackOf(b []byte, seq uint32) (bool, error) {
	if len(b) < nlmsgHdrLen+4 {
		return false, nil
	}
	ne := binary.NativeEndian
	if ne.Uint16(b[4:]) != nlmsgError || ne.Uint32(b[8:]) != seq {
		return false, nil
	}
	n := min(int(ne.Uint32(b)), len(b))
	if n < nlmsgHdrLen+4 {
		return true, fmt.Errorf("%w: netlink error message of %d bytes", ErrMalformed, n)
	}
	return true, decodeNlError(b[nlmsgHdrLen:n])
}

func (c *conn) familyID() (uint16, error) {
	name := append([]byte(familyName), 0)
	seq, err := c.request(genlIDCtrl, ctrlCmdGetFamily, 1, appendAttr(nil, ctrlAttrFamilyName, name))
	if err != nil {
		return 0, err
	}
	c.f.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.f.SetReadDeadline(time.Time{})
	var id uint16
	for {
		b, err := c.recv()
		if err != nil {
			return 0, fmt.Errorf("resolving the taskstats family: %w", err)
		}
		if ok, err := ackOf(b, seq); ok {
			if errors.Is(err, unix.ENOENT) {
				return 0, fmt.Errorf("%w: the kernel has no TASKSTATS family (CONFIG_TASKSTATS)", ErrNotSupported)
			}
			if err != nil {
				return 0, fmt.Errorf("resolving the taskstats family: %w", err)
			}
			if id == 0 {
				return 0, fmt.Errorf("%w: no family id before the acknowledgement", ErrMalformed)
			}
			return id, nil
		}
		if id, err = decodeFamilyID(b); err != nil {
			return 0, fmt.Errorf("resolving the taskstats family: %w", err)
		}
	}
}

// Listener receives the exit records of every task on the machine. Its
// methods are for one goroutine at a time, except Close.
type Listener struct {
	c       *conn
	family  uint16
	cpus    string
	ino     uint64
	pending []Batch

	dropsSeen   uint64 // sk_drops last reported
	congested   bool   // an ENOBUFS was seen; drops may still be counting
	lastDropChk time.Time

	wakeMu  sync.Mutex
	wakeGen uint64

	closeOnce sync.Once
	closeErr  error

	// Drain's buffers for recvmmsg.
	mbuf []byte
	iovs []unix.Iovec
	msgs []unix.Mmsghdr
}

// Listen opens a socket registered for the exit records of every possible
// CPU. It fails with an error wrapping ErrPermission, ErrNamespace or
// ErrNotSupported when the kernel would not give them.
func Listen(o Options) (*Listener, error) {
	if err := check(); err != nil {
		return nil, err
	}
	if o.ReceiveBuffer == 0 {
		o.ReceiveBuffer = DefaultReceiveBuffer
	}
	if o.CPUs == "" {
		o.CPUs = possibleCPUs()
	}
	c, err := dial(o.ReceiveBuffer, o.Unpolled)
	if err != nil {
		return nil, err
	}
	l := &Listener{c: c, cpus: o.CPUs}
	if l.family, err = c.familyID(); err != nil {
		c.f.Close()
		return nil, err
	}
	var st unix.Stat_t
	if unix.Fstat(int(c.f.Fd()), &st) == nil {
		l.ino = st.Ino
	}
	if err := l.register(cmdAttrRegisterCPUMask); err != nil {
		c.f.Close()
		return nil, err
	}
	return l, nil
}

// register sends the CPU mask as attr (register or deregister) and waits
// for the kernel's answer, keeping the exit records that arrive first.
func (l *Listener) register(attr uint16) error {
	mask := append([]byte(l.cpus), 0)
	seq, err := l.c.request(l.family, cmdGet, genlVersion, appendAttr(nil, attr, mask))
	if err != nil {
		return err
	}
	l.c.f.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer l.c.f.SetReadDeadline(time.Time{})
	for {
		b, err := l.c.recv()
		if errors.Is(err, unix.ENOBUFS) {
			l.congested = true
			continue
		}
		if err != nil {
			return fmt.Errorf("registering for exits on CPUs %s: %w", l.cpus, err)
		}
		if ok, err := ackOf(b, seq); ok {
			switch {
			case errors.Is(err, unix.EPERM):
				return fmt.Errorf("%w: the kernel refused the registration: %v", ErrPermission, err)
			case errors.Is(err, unix.EINVAL) && attr == cmdAttrRegisterCPUMask:
				return fmt.Errorf("registering for exits on CPUs %s: %w (outside the initial namespaces, or CPUs that are not possible)", l.cpus, err)
			case err != nil:
				return fmt.Errorf("registering for exits on CPUs %s: %w", l.cpus, err)
			}
			return nil
		}
		if attr == cmdAttrRegisterCPUMask {
			recs, err := Decode(b, l.family)
			if err != nil {
				return err
			}
			l.pending = append(l.pending, Batch{Records: recs, Received: time.Now()})
		}
	}
}

// Next blocks until the next message or drop report, or until ctx is done
// (then the error wraps ctx.Err()). A message that does not decode is an
// error wrapping ErrMalformed; the listener stays usable.
func (l *Listener) Next(ctx context.Context) (Batch, error) {
	if len(l.pending) > 0 {
		b := l.pending[0]
		l.pending = l.pending[1:]
		return b, nil
	}
	if l.congested && time.Since(l.lastDropChk) > 50*time.Millisecond {
		if b, ok := l.dropReport(); ok {
			return b, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return Batch{}, err
	}
	// A cancel wakes the receive through a deadline in the past. The
	// generation keeps a cancel that fires as this call returns from
	// setting the deadline for the next call.
	l.wakeMu.Lock()
	gen := l.wakeGen
	l.wakeMu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		l.wakeMu.Lock()
		defer l.wakeMu.Unlock()
		if l.wakeGen == gen {
			l.c.f.SetReadDeadline(time.Unix(1, 0))
		}
	})
	defer func() {
		if !stop() {
			l.wakeMu.Lock()
			l.wakeGen++
			l.c.f.SetReadDeadline(time.Time{})
			l.wakeMu.Unlock()
		}
	}()
	for {
		msg, err := l.c.recv()
		now := time.Now()
		switch {
		case errors.Is(err, unix.ENOBUFS):
			l.congested = true
			b, ok := l.dropReport()
			if !ok {
				b = Batch{Dropped: 1, Received: now}
			}
			return b, nil
		case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
			return Batch{}, fmt.Errorf("receiving exit records: %w", ctx.Err())
		case err != nil:
			return Batch{}, fmt.Errorf("receiving exit records: %w", err)
		}
		recs, err := Decode(msg, l.family)
		if err != nil {
			return Batch{Records: recs, Received: now}, err
		}
		if len(recs) == 0 {
			continue // an acknowledgement
		}
		return Batch{Records: recs, Received: now}, nil
	}
}

// dropReport reads the socket's drop count and returns a report of the
// new drops, if any.
func (l *Listener) dropReport() (Batch, bool) {
	l.lastDropChk = time.Now()
	total, err := l.Dropped()
	if err != nil {
		return Batch{}, false
	}
	if total <= l.dropsSeen {
		l.congested = false // counted all of this episode
		return Batch{}, false
	}
	b := Batch{Dropped: total - l.dropsSeen, DroppedExact: true, Received: l.lastDropChk}
	l.dropsSeen = total
	return b, true
}

// Dropped returns how many messages the kernel has dropped for this
// socket since it was opened: the Drops column of /proc/net/netlink for
// its inode.
func (l *Listener) Dropped() (uint64, error) {
	f, err := os.Open("/proc/net/netlink")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseNetlinkDrops(f, l.ino)
}

// parseNetlinkDrops finds the Drops column of the socket with inode ino in
// the text of /proc/net/netlink.
func parseNetlinkDrops(r interface{ Read([]byte) (int, error) }, ino uint64) (uint64, error) {
	sc := bufio.NewScanner(r)
	dropsCol, inodeCol := -1, -1
	want := []byte(strconv.FormatUint(ino, 10))
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if dropsCol < 0 {
			for i, f := range fields {
				switch string(f) {
				case "Drops":
					dropsCol = i
				case "Inode":
					inodeCol = i
				}
			}
			if dropsCol < 0 || inodeCol < 0 {
				return 0, errors.New("/proc/net/netlink: no Drops and Inode columns")
			}
			continue
		}
		if len(fields) > max(dropsCol, inodeCol) && bytes.Equal(fields[inodeCol], want) {
			return strconv.ParseUint(string(fields[dropsCol]), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/net/netlink: no socket with inode %d", ino)
}

// Close deregisters the listener and closes its socket.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		// Best effort: the kernel also forgets a closed socket's
		// registration at the next exit it fails to deliver.
		mask := append([]byte(l.cpus), 0)
		_, _ = l.c.request(l.family, cmdGet, genlVersion, appendAttr(nil, cmdAttrDeregisterCPUMask, mask))
		l.closeErr = l.c.f.Close()
	})
	return l.closeErr
}

// Query asks for the statistics of one live task now: a thread (Thread,
// id a thread id) or a whole process (Process, id a process id), through a
// socket of its own. The task's CPU times so far; for a process, those of
// its exited threads included. Same privileges as Listen.
func Query(kind Kind, id int) (Record, error) {
	if err := Check(); err != nil {
		return Record{}, err
	}
	if id <= 0 || id > 1<<22 {
		return Record{}, fmt.Errorf("taskstats query: invalid id %d", id)
	}
	c, err := dial(0, false)
	if err != nil {
		return Record{}, err
	}
	defer c.f.Close()
	family, err := c.familyID()
	if err != nil {
		return Record{}, err
	}
	attr := uint16(cmdAttrPID)
	if kind == Process {
		attr = cmdAttrTGID
	}
	seq, err := c.request(family, cmdGet, genlVersion, appendAttr(nil, attr, binary.NativeEndian.AppendUint32(nil, uint32(id))))
	if err != nil {
		return Record{}, err
	}
	c.f.SetReadDeadline(time.Now().Add(5 * time.Second))
	var rec *Record
	for {
		b, err := c.recv()
		if errors.Is(err, unix.ENOBUFS) {
			continue
		}
		if err != nil {
			return Record{}, fmt.Errorf("taskstats query of %s %d: %w", kind, id, err)
		}
		if ok, err := ackOf(b, seq); ok {
			switch {
			case errors.Is(err, unix.ESRCH):
				return Record{}, fmt.Errorf("taskstats query of %s %d: no such task: %w", kind, id, err)
			case errors.Is(err, unix.EPERM):
				return Record{}, fmt.Errorf("%w: the kernel refused the query: %v", ErrPermission, err)
			case err != nil:
				return Record{}, fmt.Errorf("taskstats query of %s %d: %w", kind, id, err)
			case rec == nil:
				return Record{}, fmt.Errorf("%w: taskstats query of %s %d: no record before the acknowledgement", ErrMalformed, kind, id)
			}
			return *rec, nil
		}
		recs, err := Decode(b, family)
		if err != nil {
			return Record{}, fmt.Errorf("taskstats query of %s %d: %w", kind, id, err)
		}
		for i := range recs {
			if recs[i].Kind == kind {
				rec = &recs[i]
			}
		}
	}
}

// TryNext returns the next message or drop report if one is queued, and
// ok false at once if none is: a caller that drains the queue every few
// milliseconds is not woken at every exit on the machine, as a caller
// blocked in Next is. A message that does not decode is an error wrapping
// ErrMalformed, with ok true; the listener stays usable.
func (l *Listener) TryNext() (b Batch, ok bool, err error) {
	if len(l.pending) > 0 {
		b = l.pending[0]
		l.pending = l.pending[1:]
		return b, true, nil
	}
	if l.congested && time.Since(l.lastDropChk) > 50*time.Millisecond {
		if b, ok := l.dropReport(); ok {
			return b, true, nil
		}
	}
	for {
		var n int
		var rerr error
		if err := l.c.rc.Read(func(fd uintptr) bool {
			n, _, rerr = unix.Recvfrom(int(fd), l.c.buf, unix.MSG_TRUNC|unix.MSG_DONTWAIT)
			return true
		}); err != nil {
			return Batch{}, false, fmt.Errorf("receiving exit records: %w", err)
		}
		now := time.Now()
		switch {
		case rerr == unix.EAGAIN:
			return Batch{}, false, nil
		case rerr == unix.ENOBUFS:
			l.congested = true
			b, ok := l.dropReport()
			if !ok {
				b = Batch{Dropped: 1, Received: now}
			}
			return b, true, nil
		case rerr != nil:
			return Batch{}, false, fmt.Errorf("receiving exit records: %w", os.NewSyscallError("recvfrom", rerr))
		case n > len(l.c.buf):
			l.c.buf = make([]byte, 2*n)
			return Batch{Received: now}, true, fmt.Errorf("%w: a message of %d bytes, more than the %d-byte buffer", ErrMalformed, n, len(l.c.buf)/2)
		}
		recs, err := Decode(l.c.buf[:n], l.family)
		if err != nil {
			return Batch{Records: recs, Received: now}, true, err
		}
		if len(recs) == 0 {
			continue // an acknowledgement
		}
		return Batch{Records: recs, Received: now}, true, nil
	}
}

// drainBatch is how many messages Drain asks recvmmsg for at once, and
// drainMsgSize the room for each (an exit message is under 1 KiB).
const (
	drainBatch   = 64
	drainMsgSize = 4 << 10
)

// Drain passes every message queued now to fn, as TryNext would one at a
// time, but takes up to 64 with each system call (recvmmsg): in a virtual
// machine one receive costs about as much as a recording's other work for
// that exit. Messages that do not decode are skipped; a message larger
// than 4 KiB is an error wrapping ErrMalformed after the rest are passed.
func (l *Listener) Drain(fn func(Batch)) error {
	for len(l.pending) > 0 {
		b := l.pending[0]
		l.pending = l.pending[1:]
		fn(b)
	}
	if l.congested && time.Since(l.lastDropChk) > 50*time.Millisecond {
		if b, ok := l.dropReport(); ok {
			fn(b)
		}
	}
	if l.mbuf == nil {
		l.mbuf = make([]byte, drainBatch*drainMsgSize)
		l.iovs = make([]unix.Iovec, drainBatch)
		l.msgs = make([]unix.Mmsghdr, drainBatch)
		for i := range l.msgs {
			l.iovs[i].Base = &l.mbuf[i*drainMsgSize]
			l.iovs[i].SetLen(drainMsgSize)
			l.msgs[i].Hdr.Iov = &l.iovs[i]
			l.msgs[i].Hdr.SetIovlen(1)
		}
	}
	var truncated bool
	for {
		var n uintptr
		var errno unix.Errno
		if err := l.c.rc.Read(func(fd uintptr) bool {
			n, _, errno = unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&l.msgs[0])), drainBatch, unix.MSG_DONTWAIT, 0, 0)
			return true
		}); err != nil {
			return fmt.Errorf("receiving exit records: %w", err)
		}
		now := time.Now()
		switch {
		case errno == unix.EAGAIN:
			if truncated {
				return fmt.Errorf("%w: a message over %d bytes", ErrMalformed, drainMsgSize)
			}
			return nil
		case errno == unix.ENOBUFS:
			l.congested = true
			b, ok := l.dropReport()
			if !ok {
				b = Batch{Dropped: 1, Received: now}
			}
			fn(b)
			continue
		case errno != 0:
			return fmt.Errorf("receiving exit records: %w", os.NewSyscallError("recvmmsg", errno))
		}
		for i := range int(n) {
			m := &l.msgs[i]
			if m.Hdr.Flags&unix.MSG_TRUNC != 0 {
				truncated = true
				continue
			}
			recs, err := Decode(l.mbuf[i*drainMsgSize:i*drainMsgSize+int(m.Len)], l.family)
			if err != nil || len(recs) == 0 {
				continue
			}
			fn(Batch{Records: recs, Received: now})
		}
	}
}
