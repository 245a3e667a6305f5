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

// buildTree looks like "run --timeline" of a go build: a long-lived root
// with many threads, and procs-1 short children in waves (compile, asm,
// link, vet), each with a few threads, threads in all. Deterministic.
func buildTree(procs, threads int) *Recording {
	r := &Recording{Start: at(0), End: at(10_000)}
	seed := uint32(7)
	rnd := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>8) % n }
	kinds := []string{"compile", "asm", "compile", "vet", "compile", "link"}
	perProc := make([]int, procs)
	for i := range perProc {
		perProc[i] = 1
	}
	for left := threads - procs; left > 0; left-- {
		perProc[rnd(procs)]++
	}
	perProc[0] += 6 // the root has the most
	for i := 0; i < procs; i++ {
		pid := 5000 + i*10
		p := Process{ID: pid, Parent: 5000, Name: kinds[i%len(kinds)], Creation: at(float64(40 + i*60)), Exit: at(float64(40 + i*60 + 300 + rnd(1500)))}
		if i == 0 {
			p = Process{ID: pid, Name: "go", Creation: at(0), Exit: at(10_000)}
		}
		life := p.Exit.Sub(p.Creation)
		for j := 0; j < perProc[i] && j < 9; j++ {
			c := p.Creation.Add(time.Duration(j) * life / 20)
			e := p.Exit.Add(-time.Duration(rnd(10)) * time.Millisecond)
			busy := time.Duration(float64(e.Sub(c)) * float64(10+rnd(90)) / 100)
			th := Thread{ID: pid + j, Name: p.Name, Creation: c, Exit: e, User: busy * 9 / 10, Kernel: busy / 10}
			if j > 0 {
				th.Name = fmt.Sprintf("%s-w%d", p.Name, j)
			}
			p.Threads = append(p.Threads, th)
			p.User += th.User
			p.Kernel += th.Kernel
		}
		r.Processes = append(r.Processes, p)
	}
	return r
}
