package goroutines

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cputime/cputime/internal/kernel"
	"github.com/cputime/cputime/internal/perfring"
)

// BenchmarkServeCost: what watching costs a net/http server, and each of
// its parts, measured as goroutine-metrics measures it. The server is a
// process of its own (this test binary, TestServeCostServer) whose three
// routes spin 0.5, 1 and 2 ms of CPU; the benchmark is its client, on
// loopback, at 300 requests a second with up to 16 in flight.
// server-ns/req is the server's CPU time per request, read from its
// process CPU clock. outside-ns/req is that less the handlers' work, which
// each handler reads from its own thread's CPU clock (its thread locked,
// as goroutine-metrics' handlers do): what serving and watching cost
// beyond the work. Each server sizes its work when it starts (itersFor),
// and that moves server-ns/req by up to a few per cent from one server to
// the next, but not outside-ns/req, so the cost of watching is best read
// from outside-ns/req. csw/req is its threads' context switches per
// request (/proc/PID/task/*/status). The modes add one part at a time:
//
//	bare        the server alone
//	flight      a runtime/trace FlightRecorder, snapshot every second, as
//	            Watch runs it
//	middleware  the same, serving through Middleware (a task per request)
//	events      a perf event on every thread and CPU, as Watch opens them,
//	            without records
//	switches    the same events recording context switches, drained as
//	            Watch drains them (every watchDrain, 100 ms), unparsed
//	unparsed    middleware and switches together: all but the parser
//	watched     Watch and Middleware: all of the above, and the parser
//	cpuwide     instead of events on every thread, one per CPU recording
//	            every task's switches (root or CAP_PERFMON): the design not
//	            taken
//
// flight - bare is the tracer's share, middleware - flight Middleware's
// (with the tracer on), events - bare the events', switches - events their
// records', and watched - middleware - switches + bare the parser's and
// the engine's. -count repeats one mode before the next, and the machine
// drifts meanwhile, so run the binary several times instead, which
// interleaves the modes (docs/goroutines.md has the figures and the
// machine):
//
//	go test -c -o /tmp/g.test ./goroutines
//	for i in $(seq 8); do /tmp/g.test -test.run '^$' -test.bench ServeCost -test.benchtime 1500x; done > cost.txt
//	benchstat -col /mode cost.txt
//
// With GOROUTINES_SERVE_COST_PROFILES=DIR each server writes a CPU profile
// to DIR/server-MODE.prof (go tool pprof -top -focus 'goroutines\.\(\*engine\)'
// /tmp/g.test DIR/server-watched.prof shows the Watcher's share).
func BenchmarkServeCost(b *testing.B) {
	servers := map[string]*costServer{}
	b.Cleanup(func() {
		for _, s := range servers {
			s.stop()
		}
	})
	for _, mode := range []string{"bare", "flight", "middleware", "events", "switches", "unparsed", "watched", "cpuwide"} {
		b.Run("mode="+mode, func(b *testing.B) {
			for m, s := range servers { // an idle server still drains and snapshots
				if m != mode {
					s.stop()
					delete(servers, m)
				}
			}
			s := servers[mode]
			if s == nil {
				s = startCostServer(b, mode)
				servers[mode] = s
				s.load(b, 100) // connections, and the server's threads
			}
			work0, cpu0, csw0 := s.work(b), s.cpu(b), s.switches(b)
			s.load(b, b.N)
			cpu, work := s.cpu(b)-cpu0, s.work(b)-work0
			b.ReportMetric(float64(cpu)/float64(b.N), "server-ns/req")
			b.ReportMetric(float64(cpu-work)/float64(b.N), "outside-ns/req")
			b.ReportMetric(float64(s.switches(b)-csw0)/float64(b.N), "csw/req")
		})
	}
}

// serveCostEnv names the mode TestServeCostServer serves in.
const serveCostEnv = "GOROUTINES_SERVE_COST_MODE"

// serveCostProfileEnv, set by whoever runs BenchmarkServeCost, names a
// directory where each server writes a CPU profile of its life,
// server-MODE.prof: where its CPU goes, the Watcher's goroutines apart.
const serveCostProfileEnv = "GOROUTINES_SERVE_COST_PROFILES"

// TestServeCostServer is BenchmarkServeCost's server process: it serves
// in the mode the benchmark gives, writes its port, and stops when its
// standard input closes.
func TestServeCostServer(t *testing.T) {
	mode := os.Getenv(serveCostEnv)
	if mode == "" {
		t.Skip("the server of BenchmarkServeCost, which starts it")
	}
	if dir := os.Getenv(serveCostProfileEnv); dir != "" {
		f, err := os.Create(filepath.Join(dir, "server-"+mode+".prof"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	unit := itersFor(500 * time.Microsecond)
	var work atomic.Int64 // the handlers' CPU, each read from its own thread's clock
	app := http.NewServeMux()
	for _, units := range costRoutes {
		app.HandleFunc("GET /work/"+strconv.Itoa(units), func(w http.ResponseWriter, r *http.Request) {
			runtime.LockOSThread()
			c0 := ownThreadCPU()
			x := spin(units*unit, 7)
			work.Add(ownThreadCPU() - c0)
			runtime.UnlockOSThread()
			fmt.Fprintln(w, x&1)
		})
	}
	var h http.Handler = app
	switch mode {
	case "bare":
	case "flight":
		defer startFlight(t)()
	case "middleware":
		defer startFlight(t)()
		h = Middleware(app)
	case "events", "switches", "cpuwide":
		defer openSwitchEvents(t, mode)()
	case "unparsed":
		defer startFlight(t)()
		defer openSwitchEvents(t, "switches")()
		h = Middleware(app)
	case "watched":
		w, err := Watch()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if s := w.Snapshot(); !s.Exact {
			t.Skipf("watching from sampled clocks, not the perf source: %s", s.Fallback)
		}
		h = Middleware(app)
	default:
		t.Fatalf("mode %q", mode)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	outer := http.NewServeMux() // the same for every mode
	outer.HandleFunc("GET /handlers-cpu", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, work.Load())
	})
	outer.Handle("/", h)
	srv := &http.Server{Handler: outer}
	go srv.Serve(ln)
	defer srv.Close()
	fmt.Printf("port %d\n", ln.Addr().(*net.TCPAddr).Port)
	io.Copy(io.Discard, os.Stdin)
}

// startFlight runs a flight recorder as Watch does by default: a window of
// 3 periods, a snapshot each period (1 s).
func startFlight(t *testing.T) (stop func()) {
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 3 * time.Second, MaxBytes: 64 << 20})
	if err := fr.Start(); err != nil {
		t.Fatal(err)
	}
	return every(time.Second, func() { fr.WriteTo(io.Discard) }, func() { fr.Stop() })
}

// every calls f every d until stop is called, then calls end, once f is
// done.
func every(d time.Duration, f, end func()) (stop func()) {
	tick := time.NewTicker(d)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				f()
			}
		}
	}()
	return func() {
		tick.Stop()
		close(quit)
		<-done
		end()
	}
}

// openSwitchEvents opens the perf source's event (switchAttr) in the
// server of a mode:
//
//	events    on every thread and CPU, without its context-switch records
//	switches  on every thread and CPU, as the perf source opens them
//	cpuwide   one event per CPU for every task on it (root or CAP_PERFMON),
//	          the alternative the perf source does not take
func openSwitchEvents(t *testing.T, mode string) (stop func()) {
	attr := switchAttr()
	if mode == "events" {
		attr.Bits &^= unix.PerfBitContextSwitch
	}
	tids, err := liveOwnThreads()
	if err != nil {
		t.Fatal(err)
	}
	if mode == "cpuwide" {
		attr.Bits &^= unix.PerfBitInherit
		tids = []int{-1}
	}
	return switchEvents(t, attr, tids)
}

// switchEvents opens attr on each of tids (-1: every task) and each CPU,
// with one ring per CPU, the first event's, which the others write to
// (PERF_EVENT_IOC_SET_OUTPUT, as the perf source shares them). A
// goroutine drains the rings as Watch does, every watchDrain, and drops
// the records. stop closes it all.
func switchEvents(tb testing.TB, attr unix.PerfEventAttr, tids []int) (stop func()) {
	cpus, err := onlineCPUs()
	if err != nil {
		tb.Fatal(err)
	}
	var fds []int
	var rings []*perfring.Ring
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
		for _, r := range rings {
			r.Close()
		}
	}
	first := map[int]int{}
	for _, tid := range tids {
		for _, c := range cpus {
			fd, err := unix.PerfEventOpen(&attr, tid, c, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if errors.Is(err, unix.ESRCH) {
				break // the thread ended
			}
			if err != nil {
				closeAll()
				tb.Skipf("perf events: %v", err)
			}
			fds = append(fds, fd)
			if f, ok := first[c]; ok {
				err = unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, f)
			} else {
				var r *perfring.Ring
				if r, err = perfring.Map(fd, perfPages); err == nil {
					first[c], rings = fd, append(rings, r)
				}
			}
			if err != nil {
				closeAll()
				tb.Fatal(err)
			}
		}
	}
	return every(watchDrain, func() {
		for _, r := range rings {
			r.Read(func([]byte) bool { return true })
		}
	}, closeAll)
}

// costServer is a running TestServeCostServer and its client.
type costServer struct {
	cmd   *exec.Cmd
	stdin io.Closer
	base  string
	c     *http.Client
}

func startCostServer(b *testing.B, mode string) *costServer {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestServeCostServer$", "-test.v")
	cmd.Env = append(os.Environ(), serveCostEnv+"="+mode, "GOMAXPROCS=2")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &costServer{cmd: cmd, stdin: stdin, c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	sc := bufio.NewScanner(out)
	var said []string
	for sc.Scan() {
		if port, ok := strings.CutPrefix(sc.Text(), "port "); ok {
			s.base = "http://127.0.0.1:" + port
			break
		}
		said = append(said, sc.Text())
	}
	if s.base == "" {
		s.stop()
		if text := strings.Join(said, "\n"); strings.Contains(text, "--- SKIP") {
			b.Skipf("the %s server skipped:\n%s", mode, text)
		} else {
			b.Fatalf("the %s server ended without serving:\n%s", mode, text)
		}
	}
	go io.Copy(io.Discard, out)
	return s
}

func (s *costServer) stop() {
	s.stdin.Close()
	s.cmd.Wait()
}

// costRoutes: the server's routes spin 1, 2 and 4 units of 0.5 ms of CPU,
// as goroutine-metrics' do; the client takes them in turn.
var costRoutes = []int{1, 2, 4}

// load sends n requests at 300 a second, up to 16 in flight.
func (s *costServer) load(b *testing.B, n int) {
	tick := time.NewTicker(time.Second / 300)
	defer tick.Stop()
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	var failed sync.Once
	for i := range n {
		<-tick.C
		sem <- struct{}{}
		path := "/work/" + strconv.Itoa(costRoutes[i%len(costRoutes)])
		wg.Go(func() {
			defer func() { <-sem }()
			resp, err := s.c.Get(s.base + path)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				failed.Do(func() { b.Errorf("GET %s: %v %v", path, err, resp) })
			}
		})
	}
	wg.Wait()
}

// work reads the CPU its handlers have spent in their work, each read from
// its thread's clock.
func (s *costServer) work(b *testing.B) uint64 {
	resp, err := s.c.Get(s.base + "/handlers-cpu")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	ns, err := strconv.ParseUint(strings.TrimSpace(string(body)), 10, 64)
	if err != nil {
		b.Fatalf("the server's handler CPU: %q: %v", body, err)
	}
	return ns
}

// cpu reads the server's process CPU clock.
func (s *costServer) cpu(b *testing.B) uint64 {
	ns, e := kernel.ReadClock(kernel.ProcessClock(s.cmd.Process.Pid, kernel.ClockSched))
	if e != 0 {
		b.Fatalf("the server's CPU clock: %v", e)
	}
	return ns
}

// switches sums the context switches of the server's threads.
func (s *costServer) switches(b *testing.B) uint64 {
	dir := "/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var n uint64
	for _, task := range tasks {
		st, err := os.ReadFile(dir + "/" + task.Name() + "/status")
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.Lines(string(st)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				x, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				n += x
			}
		}
	}
	return n
}

// BenchmarkContextSwitch: what the perf source costs each context switch,
// the unit BenchmarkServeCost's figures are made of. Two goroutines, each
// locked to a thread of its own and both threads held to one CPU, hand a
// byte back and forth over pipes, so that each handoff is one switch from
// one thread to the other. cpu-ns/switch is the process's CPU time per
// switch:
//
//	none       no perf event
//	events     switchAttr's event on both threads and every CPU, without records
//	switches   the same, recording context switches, drained every watchDrain
//	neighbour  no event here, while another process (BenchmarkServeCost's
//	           switches server) holds them on its threads: what watching costs
//	           the other programs on the machine
//	neighbour-cpuwide  the same beside BenchmarkServeCost's cpuwide server
//	switches-64cpus  switches, with the events each thread would have on a
//	           64-CPU machine: one per CPU, the others for CPUs these
//	           threads are never on, which the kernel passes over at each
//	           switch
//
//	go test -run '^$' -bench ContextSwitch -count 6 ./goroutines | benchstat -col /mode -
func BenchmarkContextSwitch(b *testing.B) {
	for _, mode := range []string{"none", "events", "switches", "switches-64cpus", "neighbour", "neighbour-cpuwide"} {
		b.Run("mode="+mode, func(b *testing.B) {
			switch mode {
			case "neighbour":
				s := startCostServer(b, "switches")
				defer s.stop()
			case "neighbour-cpuwide":
				s := startCostServer(b, "cpuwide")
				defer s.stop()
			}
			cpus := 0 // as many as there are
			if mode == "switches-64cpus" {
				cpus = 64
			}
			pingPong(b, mode == "events" || strings.HasPrefix(mode, "switches"), strings.HasPrefix(mode, "switches"), cpus)
		})
	}
}

// pingPong runs b.N switches between two threads held to one CPU, with
// or without perf events on them (cpus > 0: as many events on each as a
// machine of that many CPUs would give it), and reports cpu-ns/switch.
func pingPong(b *testing.B, events, records bool, cpus int) {
	var ab, ba [2]int
	if err := unix.Pipe2(ab[:], unix.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	if err := unix.Pipe2(ba[:], unix.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, fd := range []int{ab[0], ab[1], ba[0], ba[1]} {
			unix.Close(fd)
		}
	}()
	var cpu unix.CPUSet
	cpu.Set(0)
	type started struct {
		tid int
		err error
	}
	echoed := make(chan started, 1)
	go1 := make(chan struct{})
	done := make(chan error, 1)
	rounds := b.N / 2
	go func() { // the echo; it ends locked, taking its pinned thread with it
		runtime.LockOSThread()
		err := unix.SchedSetaffinity(0, &cpu)
		echoed <- started{unix.Gettid(), err}
		if err != nil {
			return
		}
		<-go1
		var x [1]byte
		for range rounds {
			if _, err := unix.Read(ab[0], x[:]); err != nil {
				done <- err
				return
			}
			if _, err := unix.Write(ba[1], x[:]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		b.Fatal(err)
	}
	if err := unix.SchedSetaffinity(0, &cpu); err != nil {
		b.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &old)
	echo := <-echoed
	if echo.err != nil {
		b.Fatal(echo.err)
	}
	defer close(go1) // on a Fatal below: the echo ends with its pipes
	if events {
		attr := switchAttr()
		if !records {
			attr.Bits &^= unix.PerfBitContextSwitch
		}
		tids := []int{unix.Gettid(), echo.tid}
		defer switchEvents(b, attr, tids)()
		online, err := onlineCPUs()
		if err != nil {
			b.Fatal(err)
		}
		if cpus > len(online) {
			other := slices.IndexFunc(online, func(c int) bool { return c != 0 })
			if other < 0 {
				b.Skip("one CPU: no other to give the events for")
			}
			for _, tid := range tids {
				for range cpus - len(online) {
					fd, err := unix.PerfEventOpen(&attr, tid, online[other], -1, unix.PERF_FLAG_FD_CLOEXEC)
					if err != nil {
						b.Fatal(err)
					}
					defer unix.Close(fd)
				}
			}
		}
	}
	go1 <- struct{}{}
	var x [1]byte
	c0 := processCPU()
	b.ResetTimer()
	for range rounds {
		if _, err := unix.Write(ab[1], x[:]); err != nil {
			b.Fatal(err)
		}
		if _, err := unix.Read(ba[0], x[:]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(processCPU()-c0)/float64(2*max(rounds, 1)), "cpu-ns/switch")
}

// BenchmarkPerfEventMemory: the kernel memory each of the perf source's
// events holds. Each operation opens switchAttr's event on this thread,
// once per CPU; the figures come from /proc/slabinfo (readable by root
// alone), which counts the kernel's perf_event objects and gives their
// size: slab-bytes/event is that size, objects/event how many objects
// one event added.
//
//	sudo go test -run '^$' -bench PerfEventMemory -benchtime 1000x ./goroutines
func BenchmarkPerfEventMemory(b *testing.B) {
	size, n0, err := perfEventSlab()
	if err != nil {
		b.Skipf("/proc/slabinfo: %v", err)
	}
	cpus, err := onlineCPUs()
	if err != nil {
		b.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	attr := switchAttr()
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i := range b.N {
		fd, err := unix.PerfEventOpen(&attr, unix.Gettid(), cpus[i%len(cpus)], -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			b.Skipf("perf events: %v", err)
		}
		fds = append(fds, fd)
	}
	b.StopTimer()
	_, n1, err := perfEventSlab()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(size), "slab-bytes/event")
	b.ReportMetric(float64(n1-n0)/float64(b.N), "objects/event")
}

// perfEventSlab reads the perf_event line of /proc/slabinfo: the objects'
// size and how many are in use.
func perfEventSlab() (size, active int, err error) {
	b, err := os.ReadFile("/proc/slabinfo")
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		// name <active_objs> <num_objs> <objsize> ...
		if len(f) >= 4 && f[0] == "perf_event" {
			active, err1 := strconv.Atoi(f[1])
			size, err2 := strconv.Atoi(f[3])
			if err1 != nil || err2 != nil {
				return 0, 0, fmt.Errorf("perf_event line %q", line)
			}
			return size, active, nil
		}
	}
	return 0, 0, errors.New("no perf_event line")
}
