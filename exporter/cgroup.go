package exporter

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cputime/cputime"
)

// Cgroup says where a process runs: its cgroup v2 path, and what the path
// names where it is recognisable.
type Cgroup struct {
	// Path is the process's cgroup in the unified (v2) hierarchy, from the
	// "0::" line of /proc/PID/cgroup ("/system.slice/nginx.service"); empty
	// where the host has no unified hierarchy or the process is gone.
	Path string
	// ContainerID is the 64-hex-digit id of a docker, containerd, CRI-O or
	// podman container whose scope or directory is in Path; empty
	// otherwise.
	ContainerID string
	// Unit is the innermost systemd unit in Path (a .service or .scope, as
	// "nginx.service", "session-2.scope" or "docker-ID.scope"); empty
	// otherwise.
	Unit string
}

// containerID finds a container id in a cgroup path segment: docker's
// "docker-ID.scope" (systemd driver) or "/docker/ID" (cgroupfs driver),
// containerd's "cri-containerd-ID.scope", CRI-O's "crio-ID.scope" (and
// "crio-conmon-ID.scope", its monitor), podman's "libpod-ID.scope" and
// "libpod-conmon-ID.scope", and Kubernetes' cgroupfs layout
// "/kubepods/.../podUID/ID".
var containerID = regexp.MustCompile(`^(?:(?:docker|cri-containerd|crio|crio-conmon|libpod|libpod-conmon)-)?([0-9a-f]{64})(?:\.scope)?$`)

// ParseCgroup reads the unified-hierarchy line of a /proc/PID/cgroup file.
func ParseCgroup(file string) Cgroup {
	var c Cgroup
	for line := range strings.Lines(file) {
		if p, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "0::"); ok {
			c.Path = p
			break
		}
	}
	return cgroupAt(c.Path)
}

// cgroupAt is the Cgroup of a unified-hierarchy path.
func cgroupAt(path string) Cgroup {
	c := Cgroup{Path: path}
	if c.Path == "" {
		return c
	}
	for seg := range strings.SplitSeq(c.Path, "/") {
		if m := containerID.FindStringSubmatch(seg); m != nil {
			c.ContainerID = m[1]
		}
		if strings.HasSuffix(seg, ".service") || strings.HasSuffix(seg, ".scope") {
			c.Unit = seg
		}
	}
	return c
}

var descCgroupInfo = prometheus.NewDesc("cputime_process_cgroup_info",
	"1 for each process with its cgroup v2 path (cgroup), container id (docker, containerd, CRI-O, podman) and innermost systemd unit where the path names them; join on pid and start: cputime_process_cpu_seconds_total * on (pid, start) group_left (cgroup, container_id, systemd_unit) cputime_process_cgroup_info.",
	[]string{"pid", "start", "cgroup", "container_id", "systemd_unit"}, nil)

var descCgroupCPU = prometheus.NewDesc("cputime_cgroup_cpu_seconds_total",
	"CPU time of every task that ran in the cgroup (v2) or its descendants, exited ones included, in each mode: the kernel's cpu.stat (usage_usec exact, split by user_usec and system_usec), in seconds.",
	[]string{"cgroup", "container_id", "systemd_unit", "mode"}, nil)

// parseCPUStat reads user_usec and system_usec from a cgroup's cpu.stat.
func parseCPUStat(s, path string) (user, system time.Duration, err error) {
	found := 0
	for line := range strings.Lines(s) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || (k != "user_usec" && k != "system_usec") {
			continue
		}
		n, perr := strconv.ParseUint(v, 10, 63)
		if perr != nil || n > uint64(1<<63-1)/1000 {
			return 0, 0, fmt.Errorf("parsing %s: %s %q: %w", path, k, v, cputime.ErrInvalidData)
		}
		if k == "user_usec" {
			user = time.Duration(n) * time.Microsecond
		} else {
			system = time.Duration(n) * time.Microsecond
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("parsing %s: no user_usec and system_usec: %w", path, cputime.ErrInvalidData)
	}
	return user, system, nil
}
