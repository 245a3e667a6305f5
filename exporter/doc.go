// Package exporter is a Prometheus collector for cputime.
package exporter
