//go:build !linux

package exporter

import "github.com/cputime/cputime"

// CheckExitRecords reports that only Linux sends exit records.
func CheckExitRecords() error { return cputime.ErrNotSupported }

// openExitRecords: only Linux sends exit records; exits are seen by
// refreshes.
func openExitRecords() (exitSource, error) { return nil, cputime.ErrNotSupported }
