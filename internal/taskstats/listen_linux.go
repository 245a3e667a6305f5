package taskstats

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
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

	// Drain's buffers for recvmmsg, the records it passes (reused from
	// message to message) and the task names seen.
	recs  []Record
	names nameCache
	mbuf  []byte
	iovs  []unix.Iovec
	msgs  []unix.Mmsghdr
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
// A batch's Records are reused once fn returns: fn copies what it keeps.
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
			// Raw: it never blocks (MSG_DONTWAIT), and a system call
			// entered through the scheduler wakes the runtime's sysmon
			// thread from its deep sleep, which then polls every 20 µs
			// for a millisecond and more (see recorder's waiter).
			n, _, errno = unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&l.msgs[0])), drainBatch, unix.MSG_DONTWAIT, 0, 0)
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
			recs, err := decodeAppend(l.recs[:0], l.mbuf[i*drainMsgSize:i*drainMsgSize+int(m.Len)], l.family, &l.names)
			l.recs = recs
			if err != nil || len(recs) == 0 {
				continue
			}
			fn(Batch{Records: recs, Received: now})
			clear(recs)
		}
	}
}
