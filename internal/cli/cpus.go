package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/cputime/cputime"
	"github.com/cputime/cputime/internal/cliflag"
)

// Cycles is where the command gets the reference frequency and the idle
// cycles of each CPU: the live system, or fixed values in tests.
type Cycles interface {
	ReferenceFrequency() (cputime.CycleFrequency, error)
	IdleProcessorCycleTimes() ([]uint64, error)
}

// SystemCycles is the Cycles of the machine we run on.
type SystemCycles struct{}

func (SystemCycles) ReferenceFrequency() (cputime.CycleFrequency, error) {
	return cputime.ReferenceFrequency()
}

func (SystemCycles) IdleProcessorCycleTimes() ([]uint64, error) {
	return cputime.IdleProcessorCycleTimes()
}

func (env Env) cycleSource() Cycles {
	if env.Cycles == nil {
		return SystemCycles{}
	}
	return env.Cycles
}

// cycler converts the on-CPU times of the records into cycle times, as the
// library's CycleTime does (Times.Total × the reference frequency): the
// enumerations already hold the exact totals, so no second read of each
// task is needed. A process's own cycle count, where the enumeration has it
// (ProcessInfo.Cycles: Windows), is printed as it is. The frequency is asked
// for once, when the first cycle count that needs it is printed, so output
// that shows none costs no calibration. Without a reference frequency,
// derived cycles are left out.
type cycler struct{ *lazyFrequency }

type lazyFrequency struct {
	src   Cycles
	asked bool
	freq  cputime.CycleFrequency
	ok    bool
}

func newCycler(env Env) cycler {
	return cycler{&lazyFrequency{src: env.cycleSource()}}
}

func (c cycler) frequency() (cputime.CycleFrequency, bool) {
	if !c.asked {
		c.asked = true
		f, err := c.src.ReferenceFrequency()
		c.freq, c.ok = f, err == nil
	}
	return c.freq, c.ok
}

// json returns the cycles of on-CPU time d, or nil (JSON null) without a
// frequency.
func (c cycler) json(d time.Duration) *uint64 {
	f, ok := c.frequency()
	if !ok {
		return nil
	}
	n := f.Cycles(d)
	return &n
}

// text returns the cycles of on-CPU time d for a table, "-" without a
// frequency.
func (c cycler) text(d time.Duration) string {
	f, ok := c.frequency()
	if !ok {
		return "-"
	}
	return strconv.FormatUint(f.Cycles(d), 10)
}

// processJSON and processText are json and text for a process: its own
// cycle count where the system gave one.
func (c cycler) processJSON(p cputime.ProcessInfo) *uint64 {
	if p.Cycles != 0 {
		n := p.Cycles
		return &n
	}
	return c.json(p.Times.Total())
}

func (c cycler) processText(p cputime.ProcessInfo) string {
	if p.Cycles != 0 {
		return strconv.FormatUint(p.Cycles, 10)
	}
	return c.text(p.Times.Total())
}

const cpusUsage = `usage: cputime cpus [--json]

Shows the reference frequency that cycle times count, where it comes from,
and the cycles each logical CPU has spent idle since boot
(QueryIdleProcessorCycleTime). Reference cycles are on-CPU or idle time
scaled by the frequency, not core cycles; do not convert them to time.

  --json   print a JSON object
  -h       show this help
`

// runCPUs runs "cputime cpus".
// cpusOptions are cpus's options.
type cpusOptions struct{ json bool }

func (o *cpusOptions) flags() *cliflag.Set {
	s := &cliflag.Set{Interspersed: true}
	s.Bool(&o.json, "--json", "-json")
	return s
}

func runCPUs(env Env, args []string) int {
	var o cpusOptions
	args, status, done := parseOptions(env, "cpus", cpusUsage, o.flags(), args)
	if done {
		return status
	}
	if len(args) > 0 {
		fmt.Fprintf(env.Stderr, "%s: cpus: unexpected argument %s\n%s", programName, sanitize(args[0]), cpusUsage)
		return exitUsage
	}
	asJSON := o.json
	src := env.cycleSource()
	f, err := src.ReferenceFrequency()
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", programName, err)
		return exitFailed
	}
	idle, err := src.IdleProcessorCycleTimes()
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", programName, err)
		return exitFailed
	}
	out := bufio.NewWriter(env.Stdout)
	if asJSON {
		err = writeCPUsJSON(out, f, idle)
	} else {
		err = writeCPUsTable(out, f, idle)
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: writing output: %v\n", programName, err)
		return exitFailed
	}
	return exitOK
}

// JSON output of "cpus": field names are part of the command's interface.
type jsonCPUs struct {
	FrequencyHz     uint64    `json:"cycle_frequency_hz"`
	FrequencySource string    `json:"frequency_source"`
	CPUs            []jsonCPU `json:"cpus"`
}

type jsonCPU struct {
	CPU        int    `json:"cpu"`
	IdleCycles uint64 `json:"idle_cycles"`
}

func writeCPUsJSON(w io.Writer, f cputime.CycleFrequency, idle []uint64) error {
	out := jsonCPUs{FrequencyHz: f.Hz, FrequencySource: string(f.Source), CPUs: make([]jsonCPU, len(idle))}
	for i, c := range idle {
		out.CPUs[i] = jsonCPU{CPU: i, IdleCycles: c}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeCPUsTable(w io.Writer, f cputime.CycleFrequency, idle []uint64) error {
	fmt.Fprintf(w, "reference frequency: %d Hz, %s\n", f.Hz, f.Source)
	tw := newTable(w)
	fmt.Fprint(tw, "CPU\tIDLE CYCLES\t\n")
	for i, c := range idle {
		fmt.Fprintf(tw, "%d\t%d\t\n", i, c)
	}
	return tw.Flush()
}
