package recorder

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// The launcher's image, read back by debug/elf: a static executable for
// the machine this test binary was built for (the kernel's own copy of
// it, /proc/self/exe, says which), whose entry point is the first byte of
// launcherCode inside the one loadable segment, mapped read and execute
// and not writable, with a stack that is not executable.
func TestLauncherImageParses(t *testing.T) {
	if launcherCode == nil {
		t.Skip("no launcher for this architecture")
	}
	self, err := elf.Open("/proc/self/exe")
	if err != nil {
		t.Fatalf("reading this test binary's ELF header: %v", err)
	}
	defer self.Close()
	img := launcherImage()
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		t.Fatalf("debug/elf cannot read the launcher: %v", err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Data != self.Data || f.Machine != self.Machine {
		t.Errorf("launcher is %v %v %v, this binary %v %v %v", f.Class, f.Data, f.Machine, self.Class, self.Data, self.Machine)
	}
	if f.Type != elf.ET_EXEC || f.Version != elf.EV_CURRENT || f.OSABI != elf.ELFOSABI_NONE {
		t.Errorf("launcher type %v version %v ABI %v, want a System V executable", f.Type, f.Version, f.OSABI)
	}
	if len(f.Sections) != 0 {
		t.Errorf("launcher has %d sections, want none", len(f.Sections))
	}
	var loads, stacks int
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_LOAD:
			loads++
			if p.Flags != elf.PF_R|elf.PF_X {
				t.Errorf("loadable segment flags %v, want PF_R+PF_X", p.Flags)
			}
			if p.Off != 0 || p.Filesz != uint64(len(img)) || p.Memsz != p.Filesz {
				t.Errorf("loadable segment at offset %d of %d bytes (%d in memory), want the whole %d-byte file", p.Off, p.Filesz, p.Memsz, len(img))
			}
			if p.Align == 0 || p.Vaddr%p.Align != p.Off%p.Align {
				t.Errorf("loadable segment at %#x is not aligned to %#x with its offset %d", p.Vaddr, p.Align, p.Off)
			}
			if f.Entry < p.Vaddr || f.Entry >= p.Vaddr+p.Memsz {
				t.Fatalf("entry point %#x outside the segment [%#x, %#x)", f.Entry, p.Vaddr, p.Vaddr+p.Memsz)
			}
			code := make([]byte, len(launcherCode))
			if _, err := p.ReadAt(code, int64(f.Entry-p.Vaddr)); err != nil {
				t.Fatalf("reading the code at the entry point: %v", err)
			}
			if !bytes.Equal(code, launcherCode) {
				t.Errorf("the entry point %#x is not the start of launcherCode", f.Entry)
			}
			if end := f.Entry - p.Vaddr + uint64(len(launcherCode)); end != p.Filesz {
				t.Errorf("launcherCode ends at %d, the segment at %d", end, p.Filesz)
			}
		case elf.PT_GNU_STACK:
			stacks++
			if p.Flags != elf.PF_R|elf.PF_W {
				t.Errorf("stack flags %v, want PF_R+PF_W (not executable)", p.Flags)
			}
		default:
			t.Errorf("unexpected segment %v", p.Type)
		}
	}
	if loads != 1 || stacks != 1 {
		t.Errorf("%d loadable segments and %d stack headers, want 1 of each", loads, stacks)
	}
}

// The launcher runs: released, it execs CMD, whose exit status wait4
// reports; never released, it exits with launcherExit and CMD never runs.
func TestLauncherRuns(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 7")
	h, err := startHeld(cmd)
	if errors.Is(err, ErrNotSupported) {
		t.Skipf("the launcher cannot run here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := h.release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := cmd.Wait(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("CMD through the launcher: %v, want exit status 7", err)
	}

	marker := t.TempDir() + "/ran"
	cmd = exec.Command("sh", "-c", "echo > "+marker)
	if h, err = startHeld(cmd); err != nil {
		t.Fatal(err)
	}
	h.abort()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != launcherExit {
		t.Errorf("launcher never released ended %v, want exit status %d", cmd.ProcessState, launcherExit)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("CMD ran although the launcher was never released")
	}
}
