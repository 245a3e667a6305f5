//go:build !linux

package recorder

import (
	"context"
	"os"
	"time"
)

// waitOrphans: only Linux adopts orphans (Windows waits on CMD's job).
func waitOrphans(context.Context, int, time.Duration, bool, <-chan os.Signal, *Orphans) {}
