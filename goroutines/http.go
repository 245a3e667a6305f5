package goroutines

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"text/tabwriter"
	"time"
)

// MaxSeconds bounds the seconds parameter of Handler's requests.
const MaxSeconds = 600

// Handler serves a recording in the style of net/http/pprof's profile
// endpoint. Mount it where you like, e.g.
//
//	mux.Handle("/debug/cputime/goroutines", goroutines.Handler())
//
// GET ?seconds=N (default 5, at most MaxSeconds) records for N seconds and
// returns the gzipped pprof profile (go tool pprof http://HOST/debug/cputime/goroutines?seconds=10);
// with debug=1 it returns a text table instead. A recording that cannot
// start answers 409 Conflict when another execution trace is running, 501
// where the platform is not supported, 500 otherwise; a client that goes
// away ends the recording early and gets nothing.
func Handler() http.Handler { return http.HandlerFunc(serve) }

func serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	sec := 5.0
	if s := r.FormValue("seconds"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v > 0) || v > MaxSeconds {
			http.Error(w, fmt.Sprintf("seconds: %q is not a number of seconds between 0 and %d", s, MaxSeconds), http.StatusBadRequest)
			return
		}
		sec = v
	}
	rec, err := Start()
	if err != nil {
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, ErrTraceActive):
			code = http.StatusConflict
		case errors.Is(err, ErrNotSupported):
			code = http.StatusNotImplemented
		}
		http.Error(w, err.Error(), code)
		return
	}
	t := time.NewTimer(time.Duration(sec * float64(time.Second)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		rec.Stop()
		return
	}
	p, err := rec.Stop()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if r.FormValue("debug") == "1" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		p.WriteText(w)
		return
	}
	var buf bytes.Buffer
	if err := p.WritePprof(&buf); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="goroutines.pb.gz"`)
	w.Write(buf.Bytes())
}

// WriteText writes the Profile as a table: tasks by type, then goroutines.
func (p *Profile) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	mode := "exact (context-switch records)"
	if !p.Exact {
		mode = "estimate (sampled thread clocks)"
	}
	fmt.Fprintf(tw, "recording %v, %s\n", p.End.Sub(p.Start).Round(time.Millisecond), mode)
	for _, pr := range p.Problems {
		fmt.Fprintf(tw, "warning: %s\n", pr)
	}
	type agg struct {
		n   int
		cpu time.Duration
	}
	byType := map[string]*agg{}
	var types []string
	for _, k := range p.Tasks {
		a := byType[k.Type]
		if a == nil {
			a = &agg{}
			byType[k.Type] = a
			types = append(types, k.Type)
		}
		a.n++
		a.cpu += k.CPU
	}
	if len(types) > 0 {
		fmt.Fprintf(tw, "\ntasks\tCPU\ttask type\t\n")
		for _, t := range types {
			fmt.Fprintf(tw, "%d\t%v\t%s\t\n", byType[t].n, byType[t].cpu, t)
		}
	}
	fmt.Fprintf(tw, "\ngoroutine\tCPU\tfunction\t\n")
	for _, g := range p.Goroutines {
		fmt.Fprintf(tw, "%d\t%v\t%s\t\n", g.ID, g.CPU, g.Function)
	}
	fmt.Fprintf(tw, "-\t%v\t%s\t\n", p.Runtime, runtimeFrame)
	return tw.Flush()
}
