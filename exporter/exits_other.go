//go:build !linux

package exporter

import "github.com/cputime/cputime"

// openExitRecords: only Linux sends exit records; exits are seen by
// refreshes.
func openExitRecords() (exitSource, error) { return nil, cputime.ErrNotSupported }
