// Command modproxy publishes the repository's modules, as they are in the
// work tree's tracked files, into a file-system Go module proxy
// (GOPROXY=file://DIR), so that CI can do what a user does after a release:
// go install the commands at a version and build programs that import the
// library. Each module is published at every -version given; the requires
// between the repository's modules are set to that version, and a module's
// go.sum gets the hashes of the ones published before it, as docs/releasing.md
// has a release do. List the modules in the order of their requirements.
//
//	go run ./.ci/modproxy -out DIR -version V [-version V2] MODDIR...
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

type versions []string

func (v *versions) String() string     { return strings.Join(*v, ",") }
func (v *versions) Set(s string) error { *v = append(*v, s); return nil }

func main() {
	out := flag.String("out", "", "the proxy's directory")
	var vs versions
	flag.Var(&vs, "version", "a version to publish each module at (repeatable)")
	flag.Parse()
	if *out == "" || len(vs) == 0 || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -out DIR -version V [-version V]... MODDIR...")
		os.Exit(2)
	}
	if err := run(*out, vs, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

type mod struct {
	dir  string
	path string
	file *modfile.File
}

func run(out string, vs []string, dirs []string) error {
	var mods []mod
	ours := map[string]bool{}
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err != nil {
			return err
		}
		f, err := modfile.Parse(filepath.Join(d, "go.mod"), data, nil)
		if err != nil {
			return err
		}
		mods = append(mods, mod{dir: d, path: f.Module.Mod.Path, file: f})
		ours[f.Module.Mod.Path] = true
	}
	for _, v := range vs {
		var sums []string // go.sum lines of the modules published so far
		for _, m := range mods {
			gomod, err := rewrite(m, ours, v)
			if err != nil {
				return err
			}
			files, err := tracked(m.dir, gomod, sums)
			if err != nil {
				return err
			}
			mv := module.Version{Path: m.path, Version: v}
			line, err := publish(out, mv, gomod, files)
			if err != nil {
				return fmt.Errorf("%s@%s: %w", m.path, v, err)
			}
			sums = append(sums, line...)
			fmt.Printf("published %s@%s (%d files)\n", m.path, v, len(files))
		}
	}
	return nil
}

// rewrite returns m's go.mod with the requires of the repository's modules
// at version v.
func rewrite(m mod, ours map[string]bool, v string) ([]byte, error) {
	f := m.file
	for _, r := range f.Require {
		if ours[r.Mod.Path] {
			if err := f.AddRequire(r.Mod.Path, v); err != nil {
				return nil, err
			}
		}
	}
	f.Cleanup()
	return f.Format()
}

// file is one file of a module's zip.
type file struct {
	name string
	fi   os.FileInfo
	open func() (io.ReadCloser, error)
}

func (f file) Path() string                 { return f.name }
func (f file) Lstat() (os.FileInfo, error)  { return f.fi, nil }
func (f file) Open() (io.ReadCloser, error) { return f.open() }

type memInfo struct {
	name string
	size int64
}

func (m memInfo) Name() string       { return m.name }
func (m memInfo) Size() int64        { return m.size }
func (m memInfo) Mode() os.FileMode  { return 0o644 }
func (m memInfo) ModTime() time.Time { return time.Time{} }
func (m memInfo) IsDir() bool        { return false }
func (m memInfo) Sys() any           { return nil }

func mem(name string, data []byte) file {
	return file{name, memInfo{filepath.Base(name), int64(len(data))}, func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}}
}

// tracked lists the git-tracked files of the module in dir, without those
// of modules nested in it, with go.mod replaced by gomod and go.sum given
// the lines in sums.
func tracked(dir string, gomod []byte, sums []string) ([]zip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--", ".")
	cmd.Dir = dir
	lsOut, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", dir, err)
	}
	names := strings.Split(strings.TrimRight(string(lsOut), "\x00"), "\x00")
	nested := map[string]bool{}
	for _, n := range names {
		if filepath.Base(n) == "go.mod" && n != "go.mod" {
			nested[filepath.Dir(n)] = true
		}
	}
	inNested := func(n string) bool {
		for d := filepath.Dir(n); d != "."; d = filepath.Dir(d) {
			if nested[d] {
				return true
			}
		}
		return false
	}
	var files []zip.File
	var gosum []byte
	for _, n := range names {
		switch {
		case n == "" || inNested(n):
			continue
		case n == "go.mod":
			files = append(files, mem(n, gomod))
			continue
		case n == "go.sum":
			if gosum, err = os.ReadFile(filepath.Join(dir, n)); err != nil {
				return nil, err
			}
			continue
		}
		p := filepath.Join(dir, n)
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree, not yet committed
		}
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		files = append(files, file{filepath.ToSlash(n), fi, func() (io.ReadCloser, error) { return os.Open(p) }})
	}
	if gosum != nil || len(sums) > 0 {
		var b bytes.Buffer
		b.Write(gosum)
		for _, l := range sums {
			b.WriteString(l + "\n")
		}
		files = append(files, mem("go.sum", b.Bytes()))
	}
	return files, nil
}

// publish writes mv's .info, .mod and .zip into the proxy at out and
// returns its go.sum lines.
func publish(out string, mv module.Version, gomod []byte, files []zip.File) ([]string, error) {
	ep, err := module.EscapePath(mv.Path)
	if err != nil {
		return nil, err
	}
	ev, err := module.EscapeVersion(mv.Version)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(out, ep, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	zpath := filepath.Join(dir, ev+".zip")
	z, err := os.Create(zpath)
	if err != nil {
		return nil, err
	}
	if err := zip.Create(z, mv, files); err != nil {
		z.Close()
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ev+".mod"), gomod, 0o644); err != nil {
		return nil, err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{mv.Version, time.Now().UTC().Truncate(time.Second)})
	if err := os.WriteFile(filepath.Join(dir, ev+".info"), info, 0o644); err != nil {
		return nil, err
	}
	list, _ := os.ReadFile(filepath.Join(dir, "list"))
	if !bytes.Contains(list, []byte(mv.Version+"\n")) {
		list = append(list, mv.Version+"\n"...)
		if err := os.WriteFile(filepath.Join(dir, "list"), list, 0o644); err != nil {
			return nil, err
		}
	}
	zh, err := dirhash.HashZip(zpath, dirhash.Hash1)
	if err != nil {
		return nil, err
	}
	mh, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
	if err != nil {
		return nil, err
	}
	return []string{
		fmt.Sprintf("%s %s %s", mv.Path, mv.Version, zh),
		fmt.Sprintf("%s %s/go.mod %s", mv.Path, mv.Version, mh),
	}, nil
}
