package sampler_test

import (
	"fmt"
	"log"
	"time"

	"github.com/cputime/cputime/sampler"
)

// Refresh every process's threads twice and print each thread's share of a
// CPU over the interval, as top -H does.
func Example() {
	s, err := sampler.New(sampler.Options{Threads: true})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	if _, err := s.Refresh(); err != nil { // the first refresh has no interval
		log.Fatal(err)
	}
	time.Sleep(time.Second)
	sample, err := s.Refresh()
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range sample.Threads {
		if t.Delta > 0 {
			fmt.Printf("%d/%d %-15s %5.1f%% user %v kernel %v\n", t.PID, t.TID, t.Name,
				100*t.Delta.Seconds()/sample.Interval.Seconds(), t.Times.User, t.Times.Kernel)
		}
	}
	for _, e := range sample.ExitedThreads {
		fmt.Printf("%d/%d %s exited between %v and %v\n", e.PID, e.TID, e.Name, e.LastSeen, e.GoneAt)
	}
}

// Watch two processes by pid, reusing the sample's storage between
// refreshes.
func ExampleSampler_RefreshInto() {
	s, err := sampler.New(sampler.Options{PIDs: []int{1, 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	var sample sampler.Sample
	for range 3 {
		if err := s.RefreshInto(&sample); err != nil {
			log.Fatal(err)
		}
		for _, p := range sample.Processes {
			fmt.Println(p.PID, p.Name, p.Times.Total(), p.Delta)
		}
		for _, e := range sample.ExitedProcesses {
			fmt.Println(e.PID, "exited", e.Times.Exit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
