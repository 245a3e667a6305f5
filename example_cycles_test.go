package cputime_test

import (
	"fmt"
	"log"

	"github.com/cputime/cputime"
)

// Cycle times of the calling process and of each CPU's idle time, with the
// reference frequency they count and where it comes from.
func ExampleReferenceFrequency() {
	f, err := cputime.ReferenceFrequency()
	if err != nil {
		log.Fatal(err) // wraps ErrNotSupported where no reference clock is known
	}
	used, err := cputime.CurrentProcess().CycleTime()
	if err != nil {
		log.Fatal(err)
	}
	idle, err := cputime.IdleProcessorCycleTimes()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("reference clock: %s\n", f)
	fmt.Printf("this process: %d cycles\n", used)
	for cpu, c := range idle {
		fmt.Printf("CPU %d idle: %d cycles\n", cpu, c)
	}
}
