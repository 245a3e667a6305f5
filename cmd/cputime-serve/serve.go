package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cputime/cputime/exporter"
	"github.com/cputime/cputime/internal/cli"
)

// defaultAddress is the exporter's port: past the range 9100-9999 of
// Prometheus's default port allocations (full since 2023) and the first
// ports allocated after it, and clear of the well-known services near it
// (Zabbix 10050/10051, Kubernetes 10250-10259).
const defaultAddress = ":10641"

const serveHelp = `usage: cputime serve [--web.listen-address ADDR] [--threads] [--threads.max N]
                     [--name REGEXP] [--sample-interval D] [PID...]

serve exports the CPU times of every process (or the PIDs given, or those
whose name matches REGEXP) as Prometheus metrics on /metrics (Prometheus
text or OpenMetrics, as the scraper asks), until SIGTERM or SIGINT.

  --web.listen-address ADDR  where to listen (default ` + defaultAddress + `)
  --web.telemetry-path PATH  the metrics' path (default /metrics)
  --threads                  also export each thread (cputime_thread_*)
  --threads.max N            at most N thread series per scrape, the threads
                             that used the most CPU since the previous
                             scrape (default 1000; -1: no cap)
  --name REGEXP              only processes whose name matches (RE2)
  --sample-interval D        refresh processes every D between scrapes to
                             catch short-lived ones (default 100ms; 0: only
                             at scrapes)
`

func init() { cli.Register("serve", serve, serveHelp) }

type serveOptions struct {
	addr, path string
	opts       exporter.Options
}

func parseServe(args []string) (serveOptions, error) {
	var so serveOptions
	fs := flag.NewFlagSet("cputime serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&so.addr, "web.listen-address", defaultAddress, "")
	fs.StringVar(&so.path, "web.telemetry-path", "/metrics", "")
	fs.BoolVar(&so.opts.Threads, "threads", false, "")
	fs.IntVar(&so.opts.MaxThreads, "threads.max", exporter.DefaultMaxThreads, "")
	name := fs.String("name", "", "")
	interval := fs.Duration("sample-interval", exporter.DefaultSampleInterval, "")
	// Options and PIDs in any order.
	for {
		if err := fs.Parse(args); err != nil {
			return so, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			args = args[1:]
			continue
		}
		pid, err := strconv.ParseInt(args[0], 10, 32)
		if err != nil || pid <= 0 {
			return so, fmt.Errorf("invalid PID %q: want a positive decimal number", args[0])
		}
		so.opts.PIDs = append(so.opts.PIDs, int(pid))
		args = args[1:]
	}
	if *name != "" {
		re, err := regexp.Compile(*name)
		if err != nil {
			return so, fmt.Errorf("--name: %w", err)
		}
		so.opts.Name = re
	}
	switch {
	case *interval < 0:
		return so, fmt.Errorf("--sample-interval %v: want 0 or more", *interval)
	case *interval == 0:
		so.opts.SampleInterval = -1
	default:
		so.opts.SampleInterval = *interval
	}
	if so.opts.MaxThreads == 0 || so.opts.MaxThreads < -1 {
		return so, fmt.Errorf("--threads.max %d: want a positive number, or -1 for no cap", so.opts.MaxThreads)
	}
	if !strings.HasPrefix(so.path, "/") || so.path == "/" {
		return so, fmt.Errorf("--web.telemetry-path %q: want a path other than / starting with /", so.path)
	}
	return so, nil
}

func serve(env cli.Env, args []string) int {
	so, err := parseServe(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(env.Stdout, serveHelp)
		return 0
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "cputime: serve: %v\n%s", err, serveHelp)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runServer(ctx, so, env.Stderr); err != nil {
		fmt.Fprintf(env.Stderr, "cputime: serve: %v\n", err)
		return 1
	}
	return 0
}

// runServer serves until ctx is done, then lets the scrapes in progress
// finish (up to 5 s).
func runServer(ctx context.Context, so serveOptions, logw io.Writer) error {
	c, err := exporter.New(so.opts)
	if err != nil {
		return err
	}
	defer c.Close()
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(so.path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		ErrorHandling:     promhttp.ContinueOnError,
		// Scrapes are served one after the other (each refreshes the
		// samplers): a few may wait, more are refused with 503.
		MaxRequestsInFlight: 4,
		Timeout:             30 * time.Second,
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		p := html.EscapeString(so.path)
		fmt.Fprintf(w, `<!DOCTYPE html>
<html><head><title>cputime exporter</title></head>
<body><h1>cputime exporter</h1>
<p>Exact per-process and per-thread CPU times (user, system), creation and exit times.</p>
<p><a href="%s">Metrics</a></p>
</body></html>
`, p)
	})
	ln, err := net.Listen("tcp", so.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(logw, "cputime: serve: listening on %s\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shut)
}
