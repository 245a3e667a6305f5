package cputime_test

import (
	"fmt"
	"time"

	"github.com/cputime/cputime"
)

// A creation or exit time from GetThreadTimes is an instant: 100 ns ticks
// since 1601-01-01 UTC, often handed over as its two 32-bit halves.
func ExampleFiletime() {
	created := cputime.FiletimeFromParts(0x580716b0, 0x01c2349b) // dwLowDateTime, dwHighDateTime
	fmt.Println(created)
	fmt.Println(created.Time().Format(time.DateTime))

	unix, _ := cputime.FiletimeFromTime(time.Unix(0, 0))
	fmt.Println(uint64(unix))
	// Output:
	// 2002-07-26T11:55:32.123Z
	// 2002-07-26 11:55:32
	// 116444736000000000
}

// Kernel and user times are amounts, not instants: convert them with
// Ticks, never as if they counted from 1601.
func ExampleTicks_Duration() {
	user := cputime.TicksFromParts(15_000_000, 0) // 1.5 s of user time
	d, err := user.Duration()
	fmt.Println(d, err)

	huge := cputime.Ticks(1 << 63) // past time.Duration's 292 years
	_, err = huge.Duration()
	fmt.Println(err != nil, huge)
	// Output:
	// 1.5s <nil>
	// true 9223372036854775808 ticks
}
