package procfs

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestFileReadAt0(t *testing.T) {
	f, err := OpenFile(FS{}.Path(strconv.Itoa(os.Getpid()), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1024)
	var first Stat
	for i := range 3 { // each read is a fresh snapshot from offset 0
		n, err := f.ReadAt0(buf)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseStat(buf[:n])
		if err != nil {
			t.Fatalf("ParseStat(%q): %v", buf[:n], err)
		}
		if i == 0 {
			first = s
			first.Comm = append([]byte(nil), s.Comm...)
		} else if s.PID != first.PID || string(s.Comm) != string(first.Comm) || s.StartTime != first.StartTime {
			t.Errorf("read %d: %+v, first read %+v", i, s, first)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = f.ReadAt0(buf) }); n != 0 {
		t.Errorf("ReadAt0 allocates %v times, want 0", n)
	}

	if _, err := f.ReadAt0(buf[:10]); !errors.Is(err, io.ErrShortBuffer) {
		t.Errorf("ReadAt0 into 10 bytes: %v, want io.ErrShortBuffer", err)
	}
	if _, err := f.ReadAt0(nil); !errors.Is(err, io.ErrShortBuffer) {
		t.Errorf("ReadAt0(nil): %v, want io.ErrShortBuffer", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt0(buf); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ReadAt0 after Close: %v, want os.ErrClosed", err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close: %v, want os.ErrClosed", err)
	}
}

func TestFileFixture(t *testing.T) {
	want := readFixture(t, "26231/stat")
	f, err := OpenFile(fixtureFS().Path("26231", "stat"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, len(want)+1)
	if n, err := f.ReadAt0(buf); err != nil || string(buf[:n]) != string(want) {
		t.Errorf("ReadAt0 = %q, %v; want %q", buf[:n], err, want)
	}
	// A buffer exactly the size of the file cannot tell it is whole.
	if _, err := f.ReadAt0(buf[:len(want)]); !errors.Is(err, io.ErrShortBuffer) {
		t.Errorf("ReadAt0 into a buffer the file's size: %v, want io.ErrShortBuffer", err)
	}
	if _, err := OpenFile(fixtureFS().Path("26260", "task", "26262", "stat")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenFile of a vanished thread: %v, want fs.ErrNotExist", err)
	}
}

// TestFileESRCH shows what a kept-open stat descriptor answers across the
// life of a task: the live task, its zombie (exited, not yet waited for),
// then, once reaped, ESRCH: the descriptor refers to the task, not to the
// pid, so it can never read a process that reuses the pid.
func TestFileESRCH(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	pid := cmd.Process.Pid
	f, err := OpenFile(FS{}.Path(strconv.Itoa(pid), "stat"))
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1024)
	read := func() (Stat, error) {
		n, err := f.ReadAt0(buf)
		if err != nil {
			return Stat{}, err
		}
		return ParseStat(buf[:n])
	}
	if s, err := read(); err != nil || s.PID != pid || string(s.Comm) != "sleep" {
		t.Fatalf("live child: %+v, %v", s, err)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Until it is waited for, the child is a zombie and still readable.
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := read()
		if err != nil {
			t.Fatalf("killed, not yet reaped child: %v", err)
		}
		if s.State == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("killed child still in state %c", s.State)
		}
		time.Sleep(time.Millisecond)
	}

	cmd.Wait()
	_, err = read()
	if !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("reading the stat of a reaped child: %v, want ESRCH", err)
	}
	t.Logf("after the child was reaped: %v", err)
	// Opening the path again fails differently: the directory is gone.
	if _, err := OpenFile(FS{}.Path(strconv.Itoa(pid), "stat")); !errors.Is(err, os.ErrNotExist) {
		t.Logf("reopening %d/stat: %v (pid reused?)", pid, err)
	}
}

// TestFileESRCHThread does the same for a thread: a thread is reaped as it
// exits, so its kept-open stat goes straight from readable to ESRCH.
func TestFileESRCHThread(t *testing.T) {
	tid, _, exit := newThread(t)
	f, err := OpenFile(FS{}.Path(strconv.Itoa(os.Getpid()), "task", strconv.Itoa(tid), "stat"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1024)
	n, err := f.ReadAt0(buf)
	var s Stat
	if err == nil {
		s, err = ParseStat(buf[:n])
	}
	if err != nil || s.PID != tid {
		t.Fatalf("live thread %d: %+v, %v", tid, s, err)
	}
	exit()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := f.ReadAt0(buf)
		if err != nil {
			if !errors.Is(err, syscall.ESRCH) {
				t.Fatalf("reading the stat of an exited thread: %v, want ESRCH", err)
			}
			break
		}
		if s, err = ParseStat(buf[:n]); err != nil || s.PID != tid {
			t.Fatalf("thread %d read as %q", tid, buf[:n])
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d still readable (state %c) 5 s after its goroutine ended", tid, s.State)
		}
		time.Sleep(time.Millisecond)
	}
}

func BenchmarkFileReadAt0(b *testing.B) {
	f, err := OpenFile("/proc/self/stat")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1024)
	b.ReportAllocs()
	for b.Loop() {
		n, err := f.ReadAt0(buf)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(n))
	}
}

// BenchmarkFileReadAt0ParseStat is the hot path: one pread, one parse.
func BenchmarkFileReadAt0ParseStat(b *testing.B) {
	f, err := OpenFile("/proc/thread-self/stat")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1024)
	b.ReportAllocs()
	for b.Loop() {
		n, err := f.ReadAt0(buf)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ParseStat(buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFileInto(b *testing.B) {
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = ReadFileInto("/proc/self/stat", buf); err != nil {
			b.Fatal(err)
		}
	}
}
