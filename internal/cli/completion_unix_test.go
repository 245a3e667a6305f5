//go:build unix

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The zsh script, loaded by compinit in a real interactive zsh in tmux,
// completes what a user types and presses Tab after.
func TestZshCompletionInteractive(t *testing.T) {
	for _, tool := range []string{"zsh", "tmux"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found (apt-get install %s): zsh completion not tried interactively", tool, tool)
		}
	}
	stdout, _, _ := runCLI(t, fixture(), "completion", "zsh")
	dir := t.TempDir()
	script := filepath.Join(dir, "_cputime")
	os.WriteFile(script, []byte(stdout), 0o644)
	sock := fmt.Sprintf("cputime-zsh-test-%d", os.Getpid())
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-L", sock, "kill-server").Run() })
	tmux("new-session", "-d", "-x", "150", "-y", "20", "-s", "z", "env", "HOME="+dir, "zsh", "-f", "-i")
	waitFor := func(what string, cond func(string) bool) string {
		t.Helper()
		var s string
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if s = tmux("capture-pane", "-p", "-t", "z"); cond(s) {
				return s
			}
		}
		t.Fatalf("timed out waiting for %s:\n%s", what, s)
		return s
	}
	tmux("send-keys", "-t", "z", fmt.Sprintf(`autoload -Uz compinit; compinit -u -d %s/zcd; source %s; PS1="READY> "`, dir, script), "Enter")
	waitFor("the prompt", func(s string) bool { return strings.Contains(s, "READY> ") })
	for _, c := range []struct{ typed, want string }{
		{"cputime to", "READY> cputime top"},
		{"cputime exits --du", "READY> cputime exits --duration"},
		{"cputime help comp", "READY> cputime help completion"},
		{"cputime completion z", "READY> cputime completion zsh"},
	} {
		tmux("send-keys", "-t", "z", "C-u")
		tmux("send-keys", "-t", "z", "-l", c.typed)
		waitFor("the typed line", func(s string) bool { return strings.Contains(s, "READY> "+c.typed) })
		tmux("send-keys", "-t", "z", "Tab")
		waitFor(fmt.Sprintf("%q<Tab> to give %q", c.typed, c.want), func(s string) bool { return strings.Contains(s, c.want) })
	}
	tmux("send-keys", "-t", "z", "C-u")
	tmux("send-keys", "-t", "z", "-l", "cputime top -")
	tmux("send-keys", "-t", "z", "Tab")
	s := waitFor("top's options listed", func(s string) bool { return strings.Contains(s, "--json") && strings.Contains(s, "-H") })
	for _, o := range []string{"-b", "-n", "-d", "-p"} {
		if !strings.Contains(s, o) {
			t.Errorf("top's option %s not offered:\n%s", o, s)
		}
	}
}
