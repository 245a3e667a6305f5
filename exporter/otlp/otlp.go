// Package otlp pushes the exporter's CPU times as OpenTelemetry metrics
// over OTLP (HTTP/protobuf or gRPC) with the OpenTelemetry Go SDK, named
// and attributed by the semantic conventions:
//
//	process.cpu.time  counter, s; attributes cpu.mode (user, system),
//	                  process.pid, process.parent_pid,
//	                  process.executable.name, process.creation.time,
//	                  and thread.id on a thread's points
//	process.thread.count  gauge; live threads of a process
//
// with host.name, service.name "cputime" and service.version as resource
// attributes. A thread's points (with thread.id) are its share of its
// process's: sum the points without thread.id for a process's total.
// process.creation.time is the process's on every point of it, its
// threads' included (the kernel's start time, dated as the root package
// dates it): one value per process, in every push.
// process.executable.name is the base name of /proc/PID/exe's target, as
// the conventions define it ("dash" for a /bin/sh that links to dash),
// read once per process; where it cannot be read (a kernel thread,
// another user's process) the attribute is left out. An exited process's
// final values are pushed for the exporter's --exited.keep, with the
// attribute cputime.exited = true.
//
// The standard OTEL_EXPORTER_OTLP_* environment variables (endpoint,
// headers, timeout, compression, certificates, protocol) apply; Options
// set from flags take precedence.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/cputime/cputime/exporter"
)

// Options configure a Pusher.
type Options struct {
	// Endpoint is the collector's URL ("http://host:4318" for HTTP, the
	// path /v1/metrics added when it has none; "http://host:4317" for
	// gRPC); empty means OTEL_EXPORTER_OTLP_METRICS_ENDPOINT or
	// OTEL_EXPORTER_OTLP_ENDPOINT.
	Endpoint string
	// Protocol is "http/protobuf" or "grpc"; empty means
	// OTEL_EXPORTER_OTLP_METRICS_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL, or
	// http/protobuf.
	Protocol string
	// Interval between pushes; zero means OTEL_METRIC_EXPORT_INTERVAL (ms)
	// or one minute.
	Interval time.Duration
	// Version is the service.version resource attribute.
	Version string
}

// Configured reports whether the environment names an OTLP endpoint.
func Configured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Pusher pushes a Collector's points every interval until Shutdown. A
// push that fails is not retried: the points are cumulative, so the next
// push carries what this one would have, and the failure reaches the
// OpenTelemetry error handler (otel.SetErrorHandler) when it happens
// rather than after the retries' backoff.
type Pusher struct {
	mp       *sdkmetric.MeterProvider
	protocol string
	endpoint string
}

// Protocol is "http/protobuf" or "grpc", as chosen by Options or the
// environment.
func (p *Pusher) Protocol() string { return p.protocol }

// Endpoint is the URL pushed to, as given by Options or the environment;
// empty for the SDK's default (localhost, the protocol's port).
func (p *Pusher) Endpoint() string { return p.endpoint }

// New starts pushing c's points.
func New(ctx context.Context, c *exporter.Collector, o Options) (*Pusher, error) {
	proto := cmp(o.Protocol, os.Getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"), os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "http/protobuf")
	var exp sdkmetric.Exporter
	var err error
	endpoint := cmp(o.Endpoint, os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	switch proto {
	case "http/protobuf":
		opts := []otlpmetrichttp.Option{otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false})}
		if o.Endpoint != "" {
			u, perr := url.Parse(o.Endpoint)
			if perr != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
				return nil, fmt.Errorf("otlp: endpoint %q: want http://HOST:PORT or https://HOST:PORT[/PATH]", o.Endpoint)
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/metrics"
			}
			endpoint = u.String()
			opts = append(opts, otlpmetrichttp.WithEndpointURL(endpoint))
		}
		exp, err = otlpmetrichttp.New(ctx, opts...)
	case "grpc":
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false})}
		if o.Endpoint != "" {
			u, perr := url.Parse(o.Endpoint)
			if perr != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
				return nil, fmt.Errorf("otlp: endpoint %q: want http://HOST:PORT or https://HOST:PORT", o.Endpoint)
			}
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(u.String()))
		}
		exp, err = otlpmetricgrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("otlp: protocol %q: want http/protobuf or grpc", proto)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp: %w", err)
	}
	host, _ := os.Hostname()
	res, err := resource.New(ctx, resource.WithAttributes(semconv.HostName(host), semconv.ServiceName("cputime"), semconv.ServiceVersion(o.Version)),
		resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("otlp: resource: %w", err)
	}
	var ropts []sdkmetric.PeriodicReaderOption
	if o.Interval > 0 {
		ropts = append(ropts, sdkmetric.WithInterval(o.Interval))
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, ropts...)), sdkmetric.WithResource(res))
	if err := register(mp.Meter("github.com/cputime/cputime/exporter/otlp"), c); err != nil {
		return nil, errors.Join(fmt.Errorf("otlp: %w", err), mp.Shutdown(ctx))
	}
	return &Pusher{mp: mp, protocol: proto, endpoint: endpoint}, nil
}

// register makes the instruments on meter and the callback that observes
// c's points on them.
func register(meter metric.Meter, c *exporter.Collector) error {
	cpu, err := meter.Float64ObservableCounter("process.cpu.time", metric.WithUnit("s"),
		metric.WithDescription("Total CPU seconds broken down by different CPU modes: the kernel's exact run time, split by its tick samples."))
	if err != nil {
		return err
	}
	threads, err := meter.Int64ObservableGauge("process.thread.count", metric.WithUnit("{thread}"),
		metric.WithDescription("Process threads count."))
	if err != nil {
		return err
	}
	cache := newProcInfo()
	_, err = meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		seen := make(map[procKey]bool)
		err := c.Points(func(p exporter.Point) {
			// process.creation.time is the process's on every point,
			// a thread's included: one value per process.
			k := procKey{p.PID, p.ProcessCreation.UnixNano()}
			base := []attribute.KeyValue{semconv.ProcessPID(p.PID), semconv.ProcessCreationTime(p.ProcessCreation.UTC().Format(time.RFC3339Nano))}
			seen[k] = true
			if info := cache.get(k, p.PID, p.Exit.IsZero()); info.ok {
				base = append(base, semconv.ProcessParentPID(info.ppid))
				if info.exe != "" {
					base = append(base, semconv.ProcessExecutableName(info.exe))
				}
			}
			if p.TID != 0 {
				base = append(base, semconv.ThreadID(p.TID))
			}
			if !p.Exit.IsZero() {
				base = append(base, attribute.Bool("cputime.exited", true))
			}
			// attribute.NewSet sorts its argument in place: each set gets
			// a copy of base, never base's spare capacity, which the other
			// mode's set would share.
			base = slices.Clip(base)
			user := attribute.NewSet(append(base, semconv.CPUModeUser)...)
			system := attribute.NewSet(append(base, semconv.CPUModeSystem)...)
			obs.ObserveFloat64(cpu, p.User.Seconds(), metric.WithAttributeSet(user))
			obs.ObserveFloat64(cpu, p.Kernel.Seconds(), metric.WithAttributeSet(system))
			if p.TID == 0 && p.Exit.IsZero() {
				obs.ObserveInt64(threads, int64(p.Threads), metric.WithAttributes(base...))
			}
		})
		cache.keep(seen)
		return err
	}, cpu, threads)
	return err
}

// Shutdown pushes once more and stops.
func (p *Pusher) Shutdown(ctx context.Context) error { return p.mp.Shutdown(ctx) }

func cmp(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

type procKey struct {
	pid      int
	creation int64 // the process's, Unix ns
}

type info struct {
	ok   bool
	ppid int
	exe  string
}

// procInfo caches what the points lack and the conventions name: the
// parent pid and the executable's base name, read once per process (by
// its pid and creation time) while it lives.
type procInfo struct {
	mu sync.Mutex
	m  map[procKey]info
}

func newProcInfo() *procInfo { return &procInfo{m: make(map[procKey]info)} }

func (c *procInfo) get(k procKey, pid int, alive bool) info {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.m[k]; ok || !alive {
		return i
	}
	i := readInfo(pid)
	c.m[k] = i
	return i
}

// keep forgets the processes no longer pushed.
func (c *procInfo) keep(seen map[procKey]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if !seen[k] {
			delete(c.m, k)
		}
	}
}

// readInfo reads a process's parent pid (/proc/PID/stat, after the last
// ')') and executable (/proc/PID/exe).
func readInfo(pid int) info {
	var i info
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return i
	}
	s := string(b)
	if j := strings.LastIndexByte(s, ')'); j >= 0 {
		f := strings.Fields(s[j+1:])
		if len(f) > 1 {
			if ppid, err := strconv.Atoi(f[1]); err == nil {
				i.ok, i.ppid = true, ppid
			}
		}
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
		i.exe = filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	}
	return i
}
