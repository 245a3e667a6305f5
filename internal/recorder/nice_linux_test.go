package recorder

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// With Background, every thread of the recording process runs at nice 19
// while CMD runs, CMD keeps the nice value it was started with, and Stop
// gives the process's threads their value back: as the kernel's stat files
// (field 19, nice) say.
func TestBackgroundNice(t *testing.T) {
	was := niceOf(t, "/proc/self/stat")
	cmd := exec.Command("sh", "-c", "read x") // runs until its stdin closes
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Start(cmd, Options{Background: true})
	if errors.Is(err, ErrNotSupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := niceOf(t, "/proc/"+strconv.Itoa(cmd.Process.Pid)+"/stat"); got != was {
		t.Errorf("CMD runs at nice %d; the recorder's caller was at %d", got, was)
	}
	for tid, nice := range threadNices(t) {
		if nice != 19 {
			t.Errorf("thread %d of the recording process at nice %d while CMD runs, want 19", tid, nice)
		}
	}
	stdin.Close()
	exitedNotReaped(t, cmd.Process.Pid)
	if _, _, err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for tid, nice := range threadNices(t) {
		if nice != was {
			t.Errorf("thread %d at nice %d after Stop, want %d back", tid, nice, was)
		}
	}
}

// niceOf reads the nice field (19) of a stat file.
func niceOf(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+2:])
	n, err := strconv.Atoi(string(f[19-3]))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

// threadNices is the nice value of each thread of this process.
func threadNices(t *testing.T) map[int]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]int{}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+2:])
		n, _ := strconv.Atoi(string(f[19-3]))
		m[tid] = n
	}
	return m
}
