package timeline_test

import (
	"log"
	"os"
	"time"

	"github.com/cputime/cputime/internal/timeline"
)

// A recording of one process with two threads, written as a trace for
// Perfetto and as a page for a browser.
func Example() {
	start := time.Now()
	ms := func(n int) time.Time { return start.Add(time.Duration(n) * time.Millisecond) }
	rec := &timeline.Recording{
		Start: start, End: ms(120),
		Processes: []timeline.Process{{
			ID: 4242, Name: "worker", Creation: ms(0), Exit: ms(120),
			User: 90 * time.Millisecond, Kernel: 10 * time.Millisecond,
			Threads: []timeline.Thread{
				{ID: 4242, Name: "worker", Creation: ms(0), Exit: ms(120), User: 20 * time.Millisecond, Kernel: 5 * time.Millisecond},
				{ID: 4243, Name: "crunch", Creation: ms(10), Exit: ms(100), User: 70 * time.Millisecond, Kernel: 5 * time.Millisecond},
			},
		}},
	}
	trace, err := os.Create("run.trace.json") // open in ui.perfetto.dev
	if err != nil {
		log.Fatal(err)
	}
	if err := timeline.WriteTrace(trace, rec); err != nil {
		log.Fatal(err)
	}
	trace.Close()

	page, err := os.Create("run.html") // open in any browser
	if err != nil {
		log.Fatal(err)
	}
	if err := timeline.WriteHTML(page, rec); err != nil {
		log.Fatal(err)
	}
	page.Close()
}
