package recorder

import (
	"encoding/binary"
	"testing"
)

func record(typ uint32, body ...uint32) []byte {
	b := make([]byte, 8+4*len(body))
	binary.NativeEndian.PutUint32(b, typ)
	binary.NativeEndian.PutUint16(b[6:], uint16(len(b)))
	for i, v := range body {
		binary.NativeEndian.PutUint32(b[8+4*i:], v)
	}
	return b
}

// A record of any bytes (the kernel's, or garbage) never panics the reader.
func FuzzHandle(f *testing.F) {
	f.Add(record(recordFork, 10, 1, 11, 1, 5, 0, 10, 11, 5, 0))
	f.Add(record(recordComm, 10, 11, 0x656d616e, 0, 10, 11, 5, 0))
	f.Add(record(recordRead, 10, 11, 1000, 0, 10, 11, 6, 0))
	f.Add(record(recordExit, 10, 1, 11, 1, 7, 0, 10, 11, 7, 0))
	f.Add(record(recordLostSamples, 3, 0, 0, 0, 9, 0))
	f.Add(record(recordComm, 1, 2))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8 {
			return // drain never passes less than a header
		}
		r := &Recorder{tasks: map[int]*task{}, procs: map[int]*proc{}}
		r.handle(b)
	})
}

// FORK, COMM, EXIT and READ build one thread with its name, times and
// count; a LOST_SAMPLES record is counted (LOST records, the ring's).
func TestHandle(t *testing.T) {
	r := &Recorder{tasks: map[int]*task{}, procs: map[int]*proc{}}
	r.handle(record(recordFork, 10, 1, 11, 10, 5, 0, 10, 11, 5, 0))
	r.handle(record(recordComm, 10, 11, 0x656d616e, 0, 10, 11, 6, 0))
	r.handle(record(recordExit, 10, 10, 11, 10, 7, 0, 10, 11, 7, 0))
	r.handle(record(recordRead, 10, 11, 1000, 0, 10, 11, 8, 0))
	r.handle(record(recordRead, 10, 11, 234, 0, 10, 11, 8, 0))
	r.handle(record(recordLostSamples, 3, 0, 10, 11, 9, 0))
	th := r.tasks[11]
	if th == nil || th.pid != 10 || th.name != "name" || th.fork != 5 || th.exit != 7 || !th.exited || th.count != 1234 || th.reads != 2 {
		t.Fatalf("task %+v", th)
	}
	if r.lost != 3 {
		t.Errorf("lost %d", r.lost)
	}
}

// A FORK that arrives after the task's other records (through another CPU's
// buffer) completes that task: one task, one process, not two.
func TestHandleLateFork(t *testing.T) {
	r := &Recorder{tasks: map[int]*task{}, procs: map[int]*proc{}}
	r.handle(record(recordExit, 20, 10, 20, 10, 7, 0, 20, 20, 7, 0))
	r.handle(record(recordRead, 20, 20, 500, 0, 20, 20, 8, 0))
	r.handle(record(recordFork, 20, 10, 20, 10, 5, 0, 10, 10, 5, 0))
	if len(r.order) != 1 || len(r.order[0].tasks) != 1 {
		t.Fatalf("%d processes: %+v", len(r.order), r.order)
	}
	th := r.order[0].tasks[0]
	if r.order[0].ppid != 10 || th.fork != 5 || !th.exited || th.count != 500 {
		t.Errorf("process %+v, task %+v", r.order[0], th)
	}
}
