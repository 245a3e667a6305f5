package cputime_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/testutil/seccomp"
)

// Rights the handle was not opened with fail with ErrAccessDenied, as on
// Windows; rights that are not a handle kind's are invalid.
func TestAccessRightsChecked(t *testing.T) {
	c := startChild(t, "idle")
	syncOnly, err := cputime.OpenProcessAccess(c.pid(), cputime.Synchronize)
	if err != nil {
		t.Fatal(err)
	}
	defer syncOnly.Close()
	if _, err := syncOnly.Times(); !errors.Is(err, cputime.ErrAccessDenied) {
		t.Errorf("Times without a query right: %v", err)
	}
	queryOnly, err := cputime.OpenProcessAccess(c.pid(), cputime.ProcessQueryInformation)
	if err != nil {
		t.Fatal(err) // our own child: we may read it as a debugger would
	}
	defer queryOnly.Close()
	if queryOnly.Access()&cputime.ProcessQueryLimitedInformation == 0 {
		t.Errorf("QUERY_INFORMATION must imply the limited right: %v", queryOnly.Access())
	}
	if _, err := queryOnly.Times(); err != nil {
		t.Errorf("Times with QUERY_INFORMATION: %v", err)
	}
	if err := queryOnly.Wait(waitCtx(t)); !errors.Is(err, cputime.ErrAccessDenied) {
		t.Errorf("Wait without SYNCHRONIZE: %v", err)
	}
	th, err := cputime.OpenThreadAccess(c.tid, cputime.Synchronize)
	if err != nil {
		t.Fatal(err)
	}
	defer th.Close()
	if _, err := th.Times(); !errors.Is(err, cputime.ErrAccessDenied) {
		t.Errorf("thread Times without a query right: %v", err)
	}
	for _, bad := range []cputime.Access{cputime.ThreadQueryInformation, 0x1, 0x1fffff} {
		if _, err := cputime.OpenProcessAccess(c.pid(), bad); !errors.Is(err, cputime.ErrInvalidArgument) {
			t.Errorf("OpenProcessAccess(%v): %v", bad, err)
		}
	}
	if _, err := cputime.OpenThreadAccess(c.tid, cputime.ProcessQueryLimitedInformation); !errors.Is(err, cputime.ErrInvalidArgument) {
		t.Errorf("OpenThreadAccess with a process right: %v", err)
	}
	if s := (cputime.ProcessQueryInformation | cputime.Synchronize).String(); s != "PROCESS_QUERY_INFORMATION|SYNCHRONIZE" {
		t.Errorf("String: %q", s)
	}
}

// An unprivileged user (nobody) may open another user's process with the
// limited right and read its times, but not with QUERY_INFORMATION: a test
// child dropped to nobody opens one of ours.
func TestAccessAsOtherUser(t *testing.T) {
	target := startChild(t, "idle") // runs as root
	out := runAsNobody(t, "access", fmt.Sprintf("%d:%d", target.pid(), target.tid), nil)
	want := map[string]string{
		"process-limited": "ok",
		"process-full":    "denied",
		"thread-limited":  "ok",
		"thread-full":     "denied",
		"times":           "ok",
		"init-full":       "denied",
		// kcmp's own denial (EPERM), not /proc/PID/io's EACCES: the check
		// is made with the real credentials.
		"full-denied-by": "EPERM",
	}
	checkChildReport(t, out, want)
}

// PROCESS_QUERY_INFORMATION is judged by the caller's real credentials, as
// the docs say, not its filesystem credentials: a root child with its fsuid
// set to nobody and CAP_SYS_PTRACE dropped from its effective set may still
// read another root process (kcmp: real uid 0), though /proc/PID/io, which
// checks the fsuid, refuses it.
func TestAccessRealCredentials(t *testing.T) {
	target := startChild(t, "idle") // runs as root
	out := runAsNobody(t, "access", fmt.Sprintf("fscreds:%d", target.pid()), &syscall.SysProcAttr{})
	checkChildReport(t, out, map[string]string{
		"io-read":      "denied", // the fs credentials are nobody's
		"process-full": "ok",     // the real ones are root's
	})
}

// hidepid: with /proc mounted hidepid=noaccess another user's processes are
// denied; with hidepid=invisible they do not exist for the caller.
func TestAccessHidepid(t *testing.T) {
	target := startChild(t, "idle")
	for opt, want := range map[string]string{"1": "denied", "2": "notfound", "0": "ok"} {
		out := runAsNobody(t, "hidepid", opt+":"+strconv.Itoa(target.pid()), &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS})
		checkChildReport(t, out, map[string]string{"process-limited": want})
	}
}

func checkChildReport(t *testing.T, out string, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		got[k] = v
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q (child said:\n%s)", k, got[k], w, out)
		}
	}
}

// runAsNobody runs a copy of the test binary in child mode kind:arg as user
// nobody (uid 65534), directly or, with attr.Unshareflags set, as root that
// drops to nobody itself after setting up its namespace. It skips where the
// test cannot change users.
func runAsNobody(t *testing.T, kind, arg string, attr *syscall.SysProcAttr) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("dropping to another user needs root")
	}
	// The test binary lives in a directory only root may enter: copy it.
	dir, err := os.MkdirTemp("", "cputime-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "child.test")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), childEnv+"="+kind+":"+arg)
	if attr == nil {
		attr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("cannot start a child as nobody or in its own mount namespace here: %v", err)
	}
	if err != nil {
		t.Fatalf("child %s:%s: %v\n%s", kind, arg, err, out)
	}
	if reason, ok := strings.CutPrefix(string(out), "skip "); ok {
		t.Skip(strings.TrimSpace(reason))
	}
	return string(out)
}

// runAccessChild is the child side: it reports what it could open.
func runAccessChild(kind, arg string) {
	fields := strings.Split(arg, ":")
	switch fields[0] {
	case "fscreds":
		runFSCredsChild(fields[1])
		return
	case "seccomp":
		runSeccompChild(fields[1])
		return
	}
	report := func(what string, err error) {
		switch {
		case err == nil:
			fmt.Println(what, "ok")
		case errors.Is(err, cputime.ErrAccessDenied):
			fmt.Println(what, "denied")
		case errors.Is(err, cputime.ErrNotFound):
			fmt.Println(what, "notfound")
		default:
			fmt.Println(what, "error:", err)
		}
	}
	open := func(what string, pid int, access cputime.Access) {
		h, err := cputime.OpenProcessAccess(pid, access)
		report(what, err)
		if err == nil {
			h.Close()
		}
	}
	if kind == "hidepid" {
		if fields[0] != "0" {
			if err := unix.Mount("proc", "/proc", "proc", 0, "hidepid="+fields[0]); err != nil {
				fmt.Println("skip mounting /proc with hidepid:", err)
				return
			}
		}
		if err := syscall.Setgid(65534); err != nil {
			fmt.Println("setgid:", err)
		}
		if err := syscall.Setuid(65534); err != nil {
			fmt.Println("setuid:", err)
			return
		}
		pid, _ := strconv.Atoi(fields[1])
		open("process-limited", pid, cputime.ProcessQueryLimitedInformation)
		return
	}
	pid, _ := strconv.Atoi(fields[0])
	tid, _ := strconv.Atoi(fields[1])
	open("process-limited", pid, cputime.ProcessQueryLimitedInformation)
	open("process-full", pid, cputime.ProcessQueryInformation)
	open("init-full", 1, cputime.ProcessQueryInformation)
	if _, err := cputime.OpenProcessAccess(pid, cputime.ProcessQueryInformation); errors.Is(err, syscall.EPERM) {
		fmt.Println("full-denied-by EPERM")
	} else {
		fmt.Println("full-denied-by", err)
	}
	th, err := cputime.OpenThreadAccess(tid, cputime.ThreadQueryLimitedInformation)
	report("thread-limited", err)
	if err == nil {
		th.Close()
	}
	th, err = cputime.OpenThreadAccess(tid, cputime.ThreadQueryInformation)
	report("thread-full", err)
	if err == nil {
		th.Close()
	}
	_, err = cputime.ProcessTimes(pid)
	report("times", err)
}

// Where a seccomp filter forbids kcmp (it answers EPERM, as Docker's
// default profile does), the check falls back to /proc/PID/io instead of
// taking the filter's EPERM for a denial: a root child under such a filter
// still opens another root process with QUERY_INFORMATION.
func TestAccessKcmpFiltered(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("the test's seccomp filter checks no architecture; it is written for amd64 and arm64, not %s", runtime.GOARCH)
	}
	target := startChild(t, "idle")
	out := runAsNobody(t, "access", fmt.Sprintf("seccomp:%d", target.pid()), &syscall.SysProcAttr{})
	checkChildReport(t, out, map[string]string{
		"kcmp-self":    "EPERM", // the filter is in place
		"process-full": "ok",
	})
}

// runSeccompChild installs, on every thread, a filter that fails kcmp with
// EPERM, then opens pid with QUERY_INFORMATION.
func runSeccompChild(arg string) {
	pid, _ := strconv.Atoi(arg)
	if err := seccomp.Deny(unix.SYS_KCMP, unix.EPERM); err != nil {
		fmt.Println("skip", err)
		return
	}
	_, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(os.Getpid()), uintptr(os.Getpid()), 1, 0, 0, 0)
	if e == unix.EPERM {
		fmt.Println("kcmp-self EPERM")
	} else {
		fmt.Println("kcmp-self", e)
	}
	h, err := cputime.OpenProcessAccess(pid, cputime.ProcessQueryInformation)
	if err != nil {
		fmt.Println("process-full error:", err)
		return
	}
	fmt.Println("process-full ok")
	h.Close()
}

// runFSCredsChild runs as root on one locked thread (credentials and
// capabilities are per thread): fsuid nobody, CAP_SYS_PTRACE out of the
// effective set, then opens pid with QUERY_INFORMATION.
func runFSCredsChild(arg string) {
	runtime.LockOSThread()
	pid, _ := strconv.Atoi(arg)
	unix.Setfsuid(65534)
	if prev, _ := unix.SetfsuidRetUid(-1); prev != 65534 {
		fmt.Println("skip setfsuid(65534) did not take: fsuid", prev)
		return
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		fmt.Println("skip capget:", err)
		return
	}
	data[0].Effective &^= 1 << unix.CAP_SYS_PTRACE
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		fmt.Println("skip capset:", err)
		return
	}
	_, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	switch {
	case err == nil:
		fmt.Println("io-read ok")
	case errors.Is(err, os.ErrPermission):
		fmt.Println("io-read denied")
	default:
		fmt.Println("io-read error:", err)
	}
	h, err := cputime.OpenProcessAccess(pid, cputime.ProcessQueryInformation)
	switch {
	case err == nil:
		fmt.Println("process-full ok")
		h.Close()
	case errors.Is(err, cputime.ErrAccessDenied):
		fmt.Println("process-full denied:", err)
	default:
		fmt.Println("process-full error:", err)
	}
}
