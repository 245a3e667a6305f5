package taskstats_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cputime/cputime/internal/taskstats"
)

// Print every task that exits in the next second, with its exact CPU time.
func ExampleListen() {
	l, err := taskstats.Listen(taskstats.Options{})
	if errors.Is(err, taskstats.ErrPermission) || errors.Is(err, taskstats.ErrNamespace) {
		fmt.Println("not here:", err) // not root, or in a container
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for {
		b, err := l.Next(ctx)
		if err != nil {
			break // the second is over
		}
		if b.Dropped > 0 {
			fmt.Printf("%d records dropped\n", b.Dropped)
		}
		for _, r := range b.Records {
			fmt.Printf("%s %d (%s): %v on CPU, exited about %v\n", r.Kind, r.ID, r.Comm,
				time.Duration(r.CPURunVirtualTotal), b.Received.Format(time.StampMicro))
		}
	}
}
