package taskstats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

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
