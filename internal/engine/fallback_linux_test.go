package engine

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Without schedstat files (a kernel without CONFIG_SCHED_INFO), threads of
// other processes report their stat file's tick counts: checked here by
// pretending the files are missing, against stat read directly.
func TestNoSchedstatFallback(t *testing.T) {
	t.Parallel()
	eng := New(Config{NoSchedstat: true})

	// A shell that spends some CPU, then sleeps.
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exec sleep 30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	statPath := "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/stat"
	// In its sleep: sleep's state S with the same ticks in two reads 20
	// ms apart. State S alone can be seen while sleep still has a tick
	// of its start to run (under -race), and the handle would then read
	// a tick more than stat said.
	var fields []string
	var ticks string
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(statPath)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		fields = strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields[0] is field 3
		now := fields[14-3] + " " + fields[15-3]
		if strings.Contains(s, "(sleep)") && fields[0] == "S" && now == ticks {
			break
		}
		ticks = now
		if time.Now().After(deadline) {
			t.Fatalf("child never reached its sleep: %s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	utime, _ := strconv.ParseUint(fields[14-3], 10, 64)
	stime, _ := strconv.ParseUint(fields[15-3], 10, 64)
	want := time.Duration(utime+stime) * time.Second / time.Duration(userHZ())

	h, err := eng.OpenThread(pid, false)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got, err := h.Times()
	if err != nil {
		t.Fatal(err)
	}
	if got.Total() != want {
		t.Errorf("handle: total %v, stat ticks give %v", got.Total(), want)
	}
	n := 0
	eng.Threads(pid, func(info ThreadInfo, err error) bool {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if info.Times.Total() != want {
			t.Errorf("enumeration: total %v, stat ticks give %v", info.Times.Total(), want)
		}
		return true
	})
	if n != 1 {
		t.Errorf("%d threads listed, want 1", n)
	}
}
