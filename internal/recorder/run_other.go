//go:build !linux

package recorder

import (
	"os"
	"time"
)

// adoptOrphans: only Linux has child subreapers. (On Windows CMD's job
// object holds its whole tree, orphans included.)
func adoptOrphans() (bool, func()) { return false, func() {} }

func notifyChild() (<-chan os.Signal, func()) { return nil, func() {} }

func reapOrphans(int, *Orphans) {}

func childCount() int { return 0 }

// terminalSent: outside Linux, SIGTERM and SIGHUP alone are passed on.
func terminalSent(int) bool { return true }

// treeTimes: outside Linux, wait gives no tree's times (a job object does).
func treeTimes(*os.ProcessState) (bool, time.Duration, time.Duration, *Usage) {
	return false, 0, 0, nil
}
