package taskstats

import (
	"encoding/binary"
	"fmt"
	"syscall"
)

// Decode decodes the netlink messages in b (one datagram, as received)
// sent by the taskstats family whose id is family: exit records
// (TASKSTATS_CMD_NEW) and replies to queries. A netlink error message
// becomes an error wrapping its syscall.Errno; NOOP and DONE messages are
// skipped. Anything truncated or inconsistent is an error wrapping
// ErrMalformed; Decode never panics.
func Decode(b []byte, family uint16) ([]Record, error) {
	return decodeAppend(nil, b, family, nil)
}

// decodeAppend is Decode appending to out, its names from names where it
// holds them (see nameCache).
func decodeAppend(out []Record, b []byte, family uint16, names *nameCache) ([]Record, error) {
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < nlmsgHdrLen {
			return out, fmt.Errorf("%w: %d bytes after the last message, less than a netlink header", ErrMalformed, len(rest))
		}
		ne := binary.NativeEndian
		n := int(ne.Uint32(rest))
		typ := ne.Uint16(rest[4:])
		if n < nlmsgHdrLen || n > len(rest) {
			return out, fmt.Errorf("%w: netlink message at offset %d claims %d bytes of %d", ErrMalformed, off, n, len(rest))
		}
		payload := rest[nlmsgHdrLen:n]
		off += align4(n)
		switch {
		case typ == nlmsgNoop || typ == nlmsgDone:
			continue
		case typ == nlmsgError:
			if err := decodeNlError(payload); err != nil {
				return out, err
			}
			continue // an acknowledgement
		case typ != family:
			return out, fmt.Errorf("%w: netlink message of type %d, not the taskstats family %d", ErrMalformed, typ, family)
		}
		var err error
		if out, err = appendGenl(out, payload, names); err != nil {
			return out, err
		}
	}
	return out, nil
}

func align4(n int) int { return (n + 3) &^ 3 }

// decodeNlError returns the error an NLMSG_ERROR payload carries, nil for
// an acknowledgement.
func decodeNlError(p []byte) error {
	if len(p) < 4 {
		return fmt.Errorf("%w: netlink error message of %d bytes", ErrMalformed, len(p))
	}
	code := int32(binary.NativeEndian.Uint32(p))
	if code == 0 {
		return nil
	}
	if code > 0 {
		return fmt.Errorf("%w: netlink error code %d", ErrMalformed, code)
	}
	return fmt.Errorf("taskstats request refused by the kernel: %w", syscall.Errno(-code))
}

// appendGenl appends the records of one generic netlink message to out.
func appendGenl(out []Record, p []byte, names *nameCache) ([]Record, error) {
	if len(p) < genlHdrLen {
		return out, fmt.Errorf("%w: generic netlink message of %d bytes", ErrMalformed, len(p))
	}
	if cmd := p[0]; cmd != cmdNew {
		return out, fmt.Errorf("%w: taskstats command %d, want TASKSTATS_CMD_NEW", ErrMalformed, cmd)
	}
	err := walkAttrs(p[genlHdrLen:], func(typ uint16, v []byte) error {
		var kind Kind
		switch typ {
		case typeAggrPID:
			kind = Thread
		case typeAggrTGID:
			kind = Process
		default: // TASKSTATS_TYPE_NULL padding, or a later kernel's addition
			return nil
		}
		r, err := decodeAggr(kind, v, names)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

func decodeAggr(kind Kind, v []byte, names *nameCache) (Record, error) {
	r := Record{Kind: kind}
	var haveID, haveStats bool
	wantID := uint16(typePID)
	if kind == Process {
		wantID = typeTGID
	}
	err := walkAttrs(v, func(typ uint16, a []byte) error {
		switch typ {
		case wantID:
			if len(a) < 4 {
				return fmt.Errorf("%w: %s id attribute of %d bytes", ErrMalformed, kind, len(a))
			}
			r.ID, haveID = binary.NativeEndian.Uint32(a), true
		case typeStats:
			s, err := decodeStats(a, names)
			if err != nil {
				return err
			}
			r.Stats, haveStats = s, true
		}
		return nil
	})
	if err != nil {
		return Record{}, err
	}
	if !haveID || !haveStats {
		return Record{}, fmt.Errorf("%w: %s record without its id or statistics", ErrMalformed, kind)
	}
	return r, nil
}

// walkAttrs calls fn with the type (flags masked off) and value of each
// netlink attribute in b.
func walkAttrs(b []byte, fn func(typ uint16, v []byte) error) error {
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < nlaHdrLen {
			return fmt.Errorf("%w: %d bytes after the last attribute, less than an attribute header", ErrMalformed, len(rest))
		}
		n := int(binary.NativeEndian.Uint16(rest))
		if n < nlaHdrLen || n > len(rest) {
			return fmt.Errorf("%w: attribute at offset %d claims %d bytes of %d", ErrMalformed, off, n, len(rest))
		}
		typ := binary.NativeEndian.Uint16(rest[2:]) & nlaTypeMask
		if err := fn(typ, rest[nlaHdrLen:n]); err != nil {
			return err
		}
		off += align4(n)
	}
	return nil
}

// appendAttr appends a netlink attribute, padded to 4 bytes.
func appendAttr(b []byte, typ uint16, v []byte) []byte {
	ne := binary.NativeEndian
	b = ne.AppendUint16(b, uint16(nlaHdrLen+len(v)))
	b = ne.AppendUint16(b, typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// appendMessage appends a netlink message of type typ carrying a generic
// netlink header (cmd, version) and the attributes attrs.
func appendMessage(b []byte, typ, flags uint16, seq uint32, cmd, version uint8, attrs []byte) []byte {
	ne := binary.NativeEndian
	b = ne.AppendUint32(b, uint32(nlmsgHdrLen+genlHdrLen+len(attrs)))
	b = ne.AppendUint16(b, typ)
	b = ne.AppendUint16(b, flags)
	b = ne.AppendUint32(b, seq)
	b = ne.AppendUint32(b, 0) // port: the kernel's
	b = append(b, cmd, version, 0, 0)
	return append(b, attrs...)
}

// decodeFamilyID returns CTRL_ATTR_FAMILY_ID from a reply to
// CTRL_CMD_GETFAMILY.
func decodeFamilyID(b []byte) (uint16, error) {
	for off := 0; off < len(b); {
		rest := b[off:]
		if len(rest) < nlmsgHdrLen {
			break
		}
		ne := binary.NativeEndian
		n := int(ne.Uint32(rest))
		if n < nlmsgHdrLen || n > len(rest) {
			return 0, fmt.Errorf("%w: controller reply claims %d bytes of %d", ErrMalformed, n, len(rest))
		}
		typ := ne.Uint16(rest[4:])
		p := rest[nlmsgHdrLen:n]
		off += align4(n)
		switch typ {
		case nlmsgError:
			if err := decodeNlError(p); err != nil {
				return 0, err
			}
			continue
		case genlIDCtrl:
		default:
			continue
		}
		if len(p) < genlHdrLen {
			return 0, fmt.Errorf("%w: controller reply of %d bytes", ErrMalformed, len(p))
		}
		var id uint16
		err := walkAttrs(p[genlHdrLen:], func(t uint16, v []byte) error {
			if t == ctrlAttrFamilyID && len(v) >= 2 {
				id = binary.NativeEndian.Uint16(v)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		if id != 0 {
			return id, nil
		}
	}
	return 0, fmt.Errorf("%w: controller reply without a family id", ErrMalformed)
}
