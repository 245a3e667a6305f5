//go:build !linux

package exporter

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cputime/cputime"
)

func readCgroup(int) Cgroup { return Cgroup{} }

// UnifiedMount fails off Linux: there are no cgroups.
func UnifiedMount() (string, error) {
	return "", fmt.Errorf("cgroups: %w", cputime.ErrNotSupported)
}

// CgroupCollector is not available off Linux.
type CgroupCollector struct{}

// NewCgroupCollector fails off Linux.
func NewCgroupCollector(string) (*CgroupCollector, error) {
	return nil, fmt.Errorf("exporter: cgroups: %w", cputime.ErrNotSupported)
}

// Describe sends nothing.
func (*CgroupCollector) Describe(chan<- *prometheus.Desc) {}

// Collect sends nothing.
func (*CgroupCollector) Collect(chan<- prometheus.Metric) {}
