package cputime_test

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/cputime/cputime/internal/winapi"
)

// The Windows side of the test helpers (the Linux side is
// child_linux_test.go; the shared ones are in helpers_test.go): TestMain,
// the child modes the portable tests need, and the thread's own CPU clock.

const childEnv = "CPUTIME_TEST_CHILD"

func init() {
	underWine = windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		runChild(mode)
		return
	}
	os.Exit(m.Run())
}

func runChild(mode string) {
	kind, arg, _ := strings.Cut(mode, ":")
	runtime.LockOSThread()
	switch kind {
	case "burn": // burn arg of CPU, then idle
		d, _ := time.ParseDuration(arg)
		burnCPU(d)
	case "idle":
	}
	fmt.Printf("ready %d\n", gettidForChild())
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func gettidForChild() int { return int(windows.GetCurrentThreadId()) }

// threadRusage is the calling thread's CPU time as Windows reports it,
// read directly (not through the package under test).
func threadRusage() time.Duration {
	var c, e, k, u windows.Filetime
	if err := winapi.GetThreadTimes(windows.CurrentThread(), &c, &e, &k, &u); err != nil {
		panic(err)
	}
	ticks := func(f windows.Filetime) time.Duration {
		return time.Duration(uint64(f.HighDateTime)<<32|uint64(f.LowDateTime)) * 100
	}
	return ticks(k) + ticks(u)
}
