package freq

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// coldEnv makes the test binary a child that finds the frequency once, in
// a fresh process, and exits: "reference" (the whole chain), "calibrate"
// (what every process paid before the kernel sources), or "none" (the
// process alone, to subtract).
const coldEnv = "CPUTIME_FREQ_COLD"

func TestMain(m *testing.M) {
	switch os.Getenv(coldEnv) {
	case "":
		os.Exit(m.Run())
	case "reference":
		if _, err := reference(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "calibrate":
		if _, err := calibrateTSC(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "none":
	}
	os.Exit(0)
}

// BenchmarkReferenceCold is the wall time of a fresh process that finds
// the frequency once: the cost a command such as `cputime cpus` pays. The
// "none" case is the process alone.
//
//	go test -run '^$' -bench ReferenceCold -count 5 ./internal/freq/
func BenchmarkReferenceCold(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Skip(err)
	}
	for _, mode := range []string{"none", "reference", "calibrate"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(exe)
				cmd.Env = append(os.Environ(), coldEnv+"="+mode)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
