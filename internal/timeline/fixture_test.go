package timeline

import (
	"fmt"
	"time"
)

var base = time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)

func at(ms float64) time.Time { return base.Add(time.Duration(ms * float64(time.Millisecond))) }

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

const (
	hostileScript = "<script>alert(1)</script>"
	hostileBidi   = "worker\u202Eevil\x1b[31m\u2066x"
)

// sampleRecording is a small tree with the cases the writers must get
// right: a parent, a child and a grandchild; a thread still running at the
// end; a thread that lived no time at all; hostile names; samples on one
// exited and one running thread.
func sampleRecording() *Recording {
	return &Recording{
		Start: at(0), End: at(1000),
		Processes: []Process{
			{ID: 100, Parent: 0, Name: "make", Creation: at(0), Exit: at(1000), User: ms(130), Kernel: ms(60),
				Threads: []Thread{
					{ID: 100, Name: "make", Creation: at(0), Exit: at(1000), User: ms(30), Kernel: ms(10)},
					{ID: 101, Name: "make-io", Creation: at(100), Exit: at(300), User: ms(100), Kernel: ms(50),
						Samples: []Sample{{At: at(200), CPU: ms(60)}}},
				}},
			{ID: 200, Parent: 100, Name: "cc1", Creation: at(200), Exit: at(700), User: ms(551), Kernel: ms(40),
				Threads: []Thread{
					{ID: 200, Name: "cc1", Creation: at(200), Exit: at(700), User: ms(450), Kernel: ms(40)},
					{ID: 201, Name: hostileScript, Creation: at(300), Exit: at(310), User: ms(1), Kernel: 0},
					{ID: 202, Name: hostileBidi, Creation: at(400), User: ms(100), Kernel: 0,
						Samples: []Sample{{At: at(500), CPU: ms(10)}, {At: at(600), CPU: ms(60)}}},
				}},
			{ID: 300, Parent: 200, Name: "ld", Creation: at(750), Exit: at(950), User: ms(190), Kernel: ms(5),
				Threads: []Thread{
					{ID: 300, Name: "ld", Creation: at(750), Exit: at(950), User: ms(190), Kernel: ms(5)},
					{ID: 301, Name: "", Creation: at(800), Exit: at(800)},
				}},
		},
	}
}

// bigRecording has n threads spread over processes of per threads each.
func bigRecording(n, per int) *Recording {
	r := &Recording{Start: at(0), End: at(10_000)}
	for i := 0; i < n; i += per {
		pid := 1000 + i
		p := Process{ID: pid, Parent: 1000, Name: fmt.Sprintf("worker-%d", i/per), Creation: at(float64(i)), Exit: at(10_000)}
		if i == 0 {
			p.Parent = 0
		}
		for j := 0; j < per && i+j < n; j++ {
			c := float64(i + j)
			p.Threads = append(p.Threads, Thread{ID: pid + j, Name: fmt.Sprintf("t%d", i+j),
				Creation: at(c), Exit: at(c + 50), User: ms(20), Kernel: ms(5)})
			p.User += ms(20)
			p.Kernel += ms(5)
		}
		r.Processes = append(r.Processes, p)
	}
	return r
}
