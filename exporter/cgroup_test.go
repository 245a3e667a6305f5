package exporter

import (
	"errors"
	"testing"
	"time"

	"github.com/cputime/cputime"
)

func TestParseCgroup(t *testing.T) {
	const id = "3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899"
	for _, c := range []struct {
		file string
		want Cgroup
	}{
		{"0::/system.slice/nginx.service\n", Cgroup{Path: "/system.slice/nginx.service", Unit: "nginx.service"}},
		{"0::/user.slice/user-1000.slice/session-2.scope\n", Cgroup{Path: "/user.slice/user-1000.slice/session-2.scope", Unit: "session-2.scope"}},
		{"0::/system.slice/docker-" + id + ".scope\n", Cgroup{Path: "/system.slice/docker-" + id + ".scope", ContainerID: id, Unit: "docker-" + id + ".scope"}},
		{"0::/docker/" + id + "\n", Cgroup{Path: "/docker/" + id, ContainerID: id}},
		{"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cri-containerd-" + id + ".scope\n",
			Cgroup{Path: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cri-containerd-" + id + ".scope", ContainerID: id, Unit: "cri-containerd-" + id + ".scope"}},
		{"0::/kubepods/besteffort/pod1234/" + id + "\n", Cgroup{Path: "/kubepods/besteffort/pod1234/" + id, ContainerID: id}},
		{"0::/machine.slice/libpod-" + id + ".scope/container\n", Cgroup{Path: "/machine.slice/libpod-" + id + ".scope/container", ContainerID: id, Unit: "libpod-" + id + ".scope"}},
		{"0::/system.slice/crio-" + id + ".scope\n", Cgroup{Path: "/system.slice/crio-" + id + ".scope", ContainerID: id, Unit: "crio-" + id + ".scope"}},
		{"12:cpu:/\n1:name=systemd:/init.scope\n0::/init.scope\n", Cgroup{Path: "/init.scope", Unit: "init.scope"}},
		{"0::/\n", Cgroup{Path: "/"}},
		{"4:memory:/x\n1:cpu:/\n", Cgroup{}}, // cgroup v1 only
		{"0::/docker/" + id[:63] + "\n", Cgroup{Path: "/docker/" + id[:63]}},
		{"", Cgroup{}},
	} {
		if got := ParseCgroup(c.file); got != c.want {
			t.Errorf("ParseCgroup(%q) = %+v, want %+v", c.file, got, c.want)
		}
	}
}

func TestParseCPUStat(t *testing.T) {
	u, s, err := parseCPUStat("usage_usec 3000\nuser_usec 1000\nsystem_usec 2000\nnr_periods 0\n", "cpu.stat")
	if err != nil || u != time.Millisecond || s != 2*time.Millisecond {
		t.Errorf("got %v %v %v", u, s, err)
	}
	for _, bad := range []string{"usage_usec 1\n", "user_usec x\nsystem_usec 1\n", "user_usec 18446744073709551615\nsystem_usec 1\n"} {
		if _, _, err := parseCPUStat(bad, "cpu.stat"); !errors.Is(err, cputime.ErrInvalidData) {
			t.Errorf("%q: %v, want ErrInvalidData", bad, err)
		}
	}
}

func FuzzParseCgroup(f *testing.F) {
	f.Add("0::/system.slice/docker-0123.scope\n")
	f.Fuzz(func(t *testing.T, s string) {
		c := ParseCgroup(s)
		if c.ContainerID != "" && len(c.ContainerID) != 64 {
			t.Errorf("container id %q", c.ContainerID)
		}
	})
}
