package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"go.opentelemetry.io/otel"

	"github.com/cputime/cputime/exporter"
	"github.com/cputime/cputime/exporter/otlp"
	"github.com/cputime/cputime/internal/buildinfo"
	"github.com/cputime/cputime/internal/cliflag"
)

// defaultAddress is the exporter's port: past the range 9100-9999 of
// Prometheus's default port allocations (full since 2023) and the first
// ports allocated after it, and clear of the well-known services near it
// (Zabbix 10050/10051, Kubernetes 10250-10259). Every interface, as every
// Prometheus exporter listens: the scraper is on another host. Secure it
// with --web.config.file (TLS, basic auth) or bind it to one address.
const defaultAddress = ":10641"

const serveHelp = `usage: cputime_exporter [--web.listen-address ADDR]... [--web.config.file FILE]
                        [--web.systemd-socket] [--threads] [--threads.max N]
                        [--name REGEXP] [--exited.keep D] [PID...]
       cputime serve [the same options and PIDs]

cputime_exporter exports the CPU times of every process (or the PIDs given, or those
whose name matches REGEXP) as Prometheus metrics on /metrics (Prometheus
text or OpenMetrics, as the scraper asks), until SIGTERM or SIGINT
(SIGHUP checks --web.config.file, read again whenever it changes, and goes
on). Each series carries the task's start time (label start), so a reused
pid is a new series; an exited task's final values stay for --exited.keep.
Scrapes that come together share one collection.

  --web.listen-address ADDR  where to listen, repeatable (default ` + defaultAddress + `)
  --web.config.file FILE     TLS and basic auth (bcrypt) configuration, the
                             Prometheus exporter-toolkit's web config file;
                             failed logins are logged, counted, and limited
                             per client (429 after 10, then one a second)
  --web.systemd-socket       use the sockets systemd passes (socket
                             activation) instead of --web.listen-address
  --web.telemetry-path PATH  the metrics' path (default /metrics)
  --web.max-connections N    open connections kept at most; beyond them
                             the longest idle is closed (default 64)
  --threads                  also export each thread (cputime_thread_*)
  --threads.max N            at most N live thread series per scrape, the
                             threads that used the most CPU since the
                             previous scrape (default 1000; -1: no cap)
  --name REGEXP              only processes whose name matches (RE2)
  --cgroup                   add cputime_process_cgroup_info: each process's
                             cgroup v2 path, container id, systemd unit
  --cgroup.aggregate         export each cgroup's CPU time (the kernel's
                             cpu.stat) instead of series per process
  --exited.keep D            how long an exited task's final series stay
                             (default 2m; each is in at least one scrape)
  --exited.max N             at most N exited tasks kept (default 10000)
  --sample-interval D        refresh every task every D between scrapes;
                             default: never where the kernel's exit records
                             catch exits (root), else 100ms; 0: only at scrapes
  --otlp.endpoint URL        also push OTLP metrics (process.cpu.time, ...)
                             to this OpenTelemetry Collector URL
                             (http://HOST:4318 for HTTP; default: the
                             OTEL_EXPORTER_OTLP_*ENDPOINT variables; none)
  --otlp.protocol P          http/protobuf (default) or grpc
  --otlp.interval D          push every D (default 1m, or
                             OTEL_METRIC_EXPORT_INTERVAL)
  --version                  print the version and exit
`

type serveOptions struct {
	addrs    []string
	config   string
	systemd  bool
	path     string
	maxConns int
	version  bool
	cgroups  bool // --cgroup.aggregate
	opts     exporter.Options
	otlp     otlp.Options
}

func parseServe(args []string) (serveOptions, error) {
	so := serveOptions{path: "/metrics", maxConns: 64}
	so.opts.MaxThreads, so.opts.ExitedKeep, so.opts.MaxExited = exporter.DefaultMaxThreads, exporter.DefaultExitedKeep, exporter.DefaultMaxExited
	var addrs []string
	var name string
	var interval time.Duration
	intervalSet := false
	integer := func(p *int) func(string) error {
		return func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return errors.New("want a whole number")
			}
			*p = n
			return nil
		}
	}
	duration := func(p *time.Duration) func(string) error {
		return func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return errors.New("want a duration such as 30s")
			}
			*p = d
			return nil
		}
	}
	str := func(p *string) func(string) error { return func(v string) error { *p = v; return nil } }
	s := &cliflag.Set{Interspersed: true} // options and PIDs in any order
	s.Func("an address", "", func(v string) error { addrs = append(addrs, v); return nil }, "--web.listen-address", "-web.listen-address")
	s.Path(&so.config, "--web.config.file", "-web.config.file")
	s.Bool(&so.systemd, "--web.systemd-socket", "-web.systemd-socket")
	s.Func("a path", "", str(&so.path), "--web.telemetry-path", "-web.telemetry-path")
	s.Func("a number", "", integer(&so.maxConns), "--web.max-connections", "-web.max-connections")
	s.Bool(&so.opts.Threads, "--threads", "-threads")
	s.Func("a number", "", integer(&so.opts.MaxThreads), "--threads.max", "-threads.max")
	s.Func("a duration", "", duration(&so.opts.ExitedKeep), "--exited.keep", "-exited.keep")
	s.Func("a number", "", integer(&so.opts.MaxExited), "--exited.max", "-exited.max")
	s.Bool(&so.version, "--version", "-version")
	s.Bool(&so.opts.Cgroups, "--cgroup", "-cgroup")
	s.Bool(&so.cgroups, "--cgroup.aggregate", "-cgroup.aggregate")
	s.Func("a URL", "", str(&so.otlp.Endpoint), "--otlp.endpoint", "-otlp.endpoint")
	s.Func("a protocol", "", str(&so.otlp.Protocol), "--otlp.protocol", "-otlp.protocol")
	s.Func("a duration", "", duration(&so.otlp.Interval), "--otlp.interval", "-otlp.interval")
	s.Func("a regular expression", "", str(&name), "--name", "-name")
	s.Func("a duration", "", func(v string) error { intervalSet = true; return duration(&interval)(v) }, "--sample-interval", "-sample-interval")
	rest, err := s.Parse(args)
	if err != nil {
		return so, err
	}
	for _, a := range rest {
		pid, err := strconv.ParseInt(a, 10, 32)
		if err != nil || pid <= 0 {
			return so, fmt.Errorf("invalid PID %q: want a positive decimal number", a)
		}
		so.opts.PIDs = append(so.opts.PIDs, int(pid))
	}
	so.addrs = addrs
	if len(so.addrs) == 0 {
		so.addrs = []string{defaultAddress}
	}
	if name != "" {
		re, err := regexp.Compile(name)
		if err != nil {
			return so, fmt.Errorf("--name: %w", err)
		}
		so.opts.Name = re
	}
	switch {
	case interval < 0:
		return so, fmt.Errorf("--sample-interval %v: want 0 or more", interval)
	case !intervalSet:
	case interval == 0:
		so.opts.SampleInterval = -1
	default:
		so.opts.SampleInterval = interval
	}
	if so.opts.MaxThreads == 0 || so.opts.MaxThreads < -1 {
		return so, fmt.Errorf("--threads.max %d: want a positive number, or -1 for no cap", so.opts.MaxThreads)
	}
	if so.opts.ExitedKeep <= 0 {
		return so, fmt.Errorf("--exited.keep %v: want more than 0", so.opts.ExitedKeep)
	}
	if so.opts.MaxExited <= 0 {
		return so, fmt.Errorf("--exited.max %d: want a positive number", so.opts.MaxExited)
	}
	if so.maxConns < 4 {
		return so, fmt.Errorf("--web.max-connections %d: want 4 or more", so.maxConns)
	}
	if so.cgroups && (so.opts.Threads || len(so.opts.PIDs) > 0 || so.opts.Name != nil || so.otlp.Endpoint != "") {
		return so, errors.New("--cgroup.aggregate exports cgroups, not processes: it goes with none of --threads, --name, PIDs, --otlp.endpoint")
	}
	if so.otlp.Interval < 0 {
		return so, fmt.Errorf("--otlp.interval %v: want more than 0", so.otlp.Interval)
	}
	if p := so.otlp.Protocol; p != "" && p != "http/protobuf" && p != "grpc" {
		return so, fmt.Errorf("--otlp.protocol %q: want http/protobuf or grpc", p)
	}
	if !strings.HasPrefix(so.path, "/") || so.path == "/" {
		return so, fmt.Errorf("--web.telemetry-path %q: want a path other than / starting with /", so.path)
	}
	return so, nil
}

func serve(env stdio, args []string) int {
	so, err := parseServe(args)
	if errors.Is(err, cliflag.ErrHelp) {
		fmt.Fprint(env.Stdout, serveHelp)
		return 0
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "cputime: serve: %v\n%s", err, serveHelp)
		return 2
	}
	if so.version {
		fmt.Fprintln(env.Stdout, buildinfo.Read())
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runServer(ctx, so, env.Stderr); err != nil {
		fmt.Fprintf(env.Stderr, "cputime: serve: %v\n", err)
		return 1
	}
	return 0
}

// reserveFiles is what the budget leaves to the Go runtime, the exit
// records' socket, the web config's reads and the logs.
const reserveFiles = 64

// runServer serves until ctx is done, then lets the scrapes in progress
// finish (up to 5 s).
func runServer(ctx context.Context, so serveOptions, logw io.Writer) error {
	logger := slog.New(slog.NewTextHandler(logw, nil))
	logs := newLimitedLog(logger)
	if so.config != "" {
		if err := web.Validate(so.config); err != nil {
			return fmt.Errorf("--web.config.file %s: %w", so.config, err)
		}
	}
	// One descriptor budget, sized once: the connections and a reserve
	// first, the sampler's kept-open files the rest.
	limit := raiseFileLimit()
	so.opts.MaxFiles = limit - so.maxConns - reserveFiles
	if so.opts.MaxFiles < 16 {
		return fmt.Errorf("open-file limit %d leaves no room beside %d connections: raise it (ulimit -n) or lower --web.max-connections", limit, so.maxConns)
	}
	info := buildinfo.Read()
	var col prometheus.Collector
	if so.cgroups {
		cc, err := exporter.NewCgroupCollector("")
		if err != nil {
			return err
		}
		col = cc
	} else {
		if err := exporter.CheckExitRecords(); err != nil {
			logger.Info("no exit records from the kernel: exits are caught by the refreshes of --sample-interval (100ms by default)", "reason", err.Error())
		}
		c, err := exporter.New(so.opts)
		if err != nil {
			return err
		}
		defer c.Close()
		col = c
		if so.otlp.Endpoint != "" || otlp.Configured() {
			so.otlp.Version = info.Version
			// The SDK reports failed pushes to the process-wide error
			// handler (by default the standard log package, in its own
			// format among these lines); this command owns the process.
			otel.SetLogger(logr.FromSlogHandler(logger.Handler()))
			otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
				logs.log(slog.LevelError, "otlp", "OTLP push failed", "err", err.Error())
			}))
			p, err := otlp.New(ctx, c, so.otlp)
			if err != nil {
				return err
			}
			endpoint := p.Endpoint()
			if endpoint == "" {
				endpoint = "the SDK's default (localhost)"
			}
			interval := "OTEL_METRIC_EXPORT_INTERVAL or 1m"
			if so.otlp.Interval > 0 {
				interval = so.otlp.Interval.String()
			}
			logger.Info("pushing OTLP metrics", "endpoint", endpoint, "protocol", p.Protocol(), "interval", interval)
			defer func() {
				shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := p.Shutdown(shut); err != nil {
					logger.Error("OTLP: the last push failed", "err", err.Error())
				}
			}()
		}
	}
	reg := prometheus.NewRegistry()
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "cputime_build_info",
		Help:        "A metric with a constant '1' value labeled by the version, revision and Go version of the cputime that serves.",
		ConstLabels: prometheus.Labels{"version": info.Version, "revision": info.Revision, "goversion": info.GoVersion},
	})
	buildInfo.Set(1)
	for _, col := range []prometheus.Collector{col, buildInfo,
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector()} {
		if err := reg.Register(col); err != nil {
			return err
		}
	}
	mux := http.NewServeMux()
	front, err := newWebFront(so.config, mux, logs)
	if err != nil {
		return fmt.Errorf("--web.config.file %s: %w", so.config, err)
	}
	if so.config != "" {
		if err := reg.Register(front); err != nil {
			return err
		}
	}
	mux.Handle(so.path, scrapeTimeout(promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		EnableOpenMetrics: true,
		ErrorHandling:     promhttp.ContinueOnError,
		ErrorLog:          printer{logs, "gather"},
		// Scrapes that come while a collection is in progress wait for it
		// and share its result, so any number of scrapers cost one
		// collection at a time. The connections bound the scrapes
		// waiting (HTTP/2 allows several per connection: so does this).
		CoalesceGather:      true,
		MaxRequestsInFlight: so.maxConns,
	})))
	landing, err := web.NewLandingPage(web.LandingConfig{
		Name:        "cputime",
		Description: "Exact per-process and per-thread CPU times (user, system), creation and exit times.",
		Version:     info.String(),
		Links:       []web.LandingLinks{{Address: so.path, Text: "Metrics"}},
	})
	if err != nil {
		return err
	}
	mux.Handle("/", landing)

	var lns []net.Listener
	if so.systemd {
		lns, err = activation.Listeners()
		if err == nil && len(lns) == 0 {
			err = errors.New("no sockets passed by systemd (LISTEN_FDS)")
		}
		if err != nil {
			return fmt.Errorf("--web.systemd-socket: %w", err)
		}
	} else {
		for _, a := range so.addrs {
			ln, err := net.Listen("tcp", a)
			if err != nil {
				for _, l := range lns {
					l.Close()
				}
				return fmt.Errorf("--web.listen-address: %w", err)
			}
			lns = append(lns, ln)
		}
	}
	bound := newConnBound(so.maxConns)
	for i, ln := range lns {
		lns[i] = bound.listener(ln)
	}
	srv := &http.Server{
		Handler:           front,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ConnState:         bound.state,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	// SIGHUP asks a daemon to reload its configuration. The web config
	// file is read again whenever it changes (looked at every request)
	// and at every TLS handshake already, so the signal only checks it
	// and says so; the flags are fixed for the process's life.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	errc := make(chan error, 1)
	go func() { errc <- serveWeb(lns, srv, so.config, logger) }()
	for done := false; !done; {
		select {
		case err := <-errc:
			return err
		case <-hup:
			reloaded(logger, so.config)
		case <-ctx.Done():
			done = true
		}
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		// Connections still busy (or opened without a request yet) after
		// 5 s: closed, and serve has still ended as asked.
		logger.Warn("connections still open 5 s after the signal: closed", "err", err.Error())
		srv.Close()
	}
	return nil
}

// reloaded answers a SIGHUP: the web config file in use is read again
// whenever it changes, so it is checked now, for the operator to see a
// mistake at once rather than as failed scrapes.
func reloaded(logger *slog.Logger, config string) {
	if config == "" {
		logger.Info("SIGHUP: no --web.config.file to reload; the other settings are flags, fixed until restart")
		return
	}
	if err := web.Validate(config); err != nil {
		logger.Error("SIGHUP: --web.config.file is invalid: requests fail until it is fixed", "file", config, "err", err.Error())
		return
	}
	logger.Info("SIGHUP: --web.config.file is valid and in use (read again whenever it changes)", "file", config)
}
