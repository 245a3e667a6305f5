package taskstats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

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
