package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/cputime/cputime/exporter"
)

// The web config file is the exporter-toolkit's (its types, validation
// and TLS settings are used as they are), served here rather than by the
// toolkit's web.Serve: its basic auth answers every request itself, so
// that a failed login can be neither counted nor slowed before its bcrypt
// comparison, and its cache of 100 credentials, failed ones included, let
// a guesser evict the scraper's and make it wait behind the guesses.

// Failed logins a client may make in a burst, and how often it may make
// one more after that: a scraper whose password is wrong still gets its
// 401 every scrape interval, a guesser about one guess a second.
const (
	loginBurst = 10
	loginEvery = time.Second
	// loginClients bounds the clients whose failures are remembered; with
	// more, a new client's unverified login is refused (429) until the
	// others' buckets refill.
	loginClients = 4096
	// loginGood bounds the credentials remembered as verified.
	loginGood = 64
)

// unknownUserHash is compared against when the user is unknown, so that a
// wrong user name costs the time a wrong password does (the toolkit's: a
// bcrypt hash, cost 10, of a password no one sends).
const unknownUserHash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"

var descLoginFailures = prometheus.NewDesc("cputime_web_login_failures_total",
	"Requests refused for their basic auth credentials, by reason: invalid (a wrong user or password, verified with bcrypt), limited (not verified: the client failed too often, answered 429).",
	[]string{"reason"}, nil)

// webFront applies the web config file to every request: the configured
// headers and rate limit, then basic auth. It lets through at once the
// credentials it has verified, and verifies others with bcrypt, one at a
// time, only while the client's bucket of failures is not empty: a client
// that keeps failing gets 429 without a bcrypt comparison, so guessing
// costs the host about one comparison a second per client address, and a
// scraper with good credentials never waits for it. Each failure is
// counted (cputime_web_login_failures_total) and logged, at most one line
// every logEvery.
type webFront struct {
	path    string // the web config file; "" for none
	next    http.Handler
	logs    *limitedLog
	limiter *rate.Limiter // the config's rate_limit, as at start; nil for none
	bcrypt  chan struct{} // one comparison at a time

	invalid, limited atomic.Uint64 // failures, by reason

	mu      sync.Mutex
	stamp   fileStamp
	conf    *web.Config // nil while the file is unreadable or invalid
	confErr error
	good    map[[32]byte]bool // sha256 of user, hash and password, verified
	clients map[netip.Prefix]*bucket
}

// bucket holds a client's failed logins to come: loginBurst at most, one
// more every loginEvery.
type bucket struct {
	tokens float64
	at     time.Time
}

func (b *bucket) fill(now time.Time) {
	b.tokens = min(loginBurst, b.tokens+float64(now.Sub(b.at))/float64(loginEvery))
	b.at = now
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func newWebFront(path string, next http.Handler, logs *limitedLog) (*webFront, error) {
	f := &webFront{path: path, next: next, logs: logs, bcrypt: make(chan struct{}, 1),
		good: make(map[[32]byte]bool), clients: make(map[netip.Prefix]*bucket)}
	if path == "" {
		return f, nil
	}
	c, err := f.config()
	if err != nil {
		return nil, err
	}
	if rl := c.RateLimiterConfig; rl.Interval != 0 {
		f.limiter = rate.NewLimiter(rate.Every(rl.Interval), rl.Burst)
		logs.logger.Info("rate limit on", "burst", rl.Burst, "interval", rl.Interval)
	}
	return f, nil
}

// readWebConfig reads the file as the toolkit does: its defaults, strict
// YAML, relative paths from the file's directory.
func readWebConfig(path string) (*web.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &web.Config{
		TLSConfig:  web.TLSConfig{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13, PreferServerCipherSuites: true},
		HTTPConfig: web.HTTPConfig{HTTP2: true},
	}
	if err := yaml.UnmarshalStrict(b, c); err != nil {
		return nil, err
	}
	c.TLSConfig.SetDirectory(filepath.Dir(path))
	return c, nil
}

// config returns the web config, read and validated again (web.Validate:
// users' hashes, headers, certificates) when the file changed.
func (f *webFront) config() (*web.Config, error) {
	fi, err := os.Stat(f.path)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	st := fileStamp{mod: fi.ModTime(), size: fi.Size()}
	if st == f.stamp && (f.conf != nil || f.confErr != nil) {
		return f.conf, f.confErr
	}
	f.stamp = st
	f.conf, f.confErr = readWebConfig(f.path)
	if f.confErr == nil {
		if err := web.Validate(f.path); err != nil {
			f.conf, f.confErr = nil, err
		}
	}
	clear(f.good)
	return f.conf, f.confErr
}

// Describe and Collect export the failed logins.
func (f *webFront) Describe(ch chan<- *prometheus.Desc) { ch <- descLoginFailures }

func (f *webFront) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descLoginFailures, prometheus.CounterValue, float64(f.invalid.Load()), "invalid")
	ch <- prometheus.MustNewConstMetric(descLoginFailures, prometheus.CounterValue, float64(f.limited.Load()), "limited")
}

func (f *webFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.path == "" {
		f.next.ServeHTTP(w, r)
		return
	}
	c, err := f.config()
	if err != nil {
		f.logs.log(slog.LevelError, "config", "--web.config.file unusable: answering 500", "file", f.path, "err", err.Error())
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	if f.limiter != nil && !f.limiter.Allow() {
		http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
		return
	}
	for k, v := range c.HTTPConfig.Header {
		w.Header().Set(k, v)
	}
	if len(c.Users) == 0 {
		f.next.ServeHTTP(w, r)
		return
	}
	user, pass, ok := r.BasicAuth()
	if !ok { // no credentials: asked for, not a failed login
		w.Header().Set("WWW-Authenticate", "Basic")
		http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
		return
	}
	h, known := c.Users[user]
	hash := string(h)
	key := sha256.Sum256([]byte(user + "\x00" + hash + "\x00" + pass))
	f.mu.Lock()
	verified := f.good[key]
	f.mu.Unlock()
	if verified {
		f.next.ServeHTTP(w, r)
		return
	}
	client := clientOf(r.RemoteAddr)
	if !f.take(client) {
		f.limited.Add(1)
		f.fail(r, "limited", user)
		w.Header().Set("Retry-After", strconv.Itoa(int(loginEvery.Seconds())))
		http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
		return
	}
	if !known {
		hash = unknownUserHash
	}
	good, err := f.compare(r.Context(), hash, pass)
	if err != nil {
		return // the client is gone
	}
	if good && known {
		f.give(client) // a good login costs the client nothing
		f.mu.Lock()
		if len(f.good) >= loginGood {
			clear(f.good)
		}
		f.good[key] = true
		f.mu.Unlock()
		f.next.ServeHTTP(w, r)
		return
	}
	f.invalid.Add(1)
	f.fail(r, "invalid", user)
	w.Header().Set("WWW-Authenticate", "Basic")
	http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
}

func (f *webFront) fail(r *http.Request, reason, user string) {
	f.logs.log(slog.LevelWarn, "login", "failed login", "reason", reason, "user", exporter.LabelValue(user),
		"client", r.RemoteAddr, "path", exporter.LabelValue(r.URL.Path))
}

// take takes a token from the client's bucket, false if it is empty:
// each request whose credentials are not yet verified takes one, given
// back (give) if they prove good.
func (f *webFront) take(client netip.Prefix) bool {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.clients[client]
	if b == nil {
		if len(f.clients) >= loginClients {
			for k, v := range f.clients {
				if v.fill(now); v.tokens >= loginBurst {
					delete(f.clients, k) // refilled: as good as new
				}
			}
			if len(f.clients) >= loginClients {
				return false
			}
		}
		b = &bucket{tokens: loginBurst, at: now}
		f.clients[client] = b
	}
	b.fill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (f *webFront) give(client netip.Prefix) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.clients[client]; b != nil {
		b.tokens = min(loginBurst, b.tokens+1)
	}
}

// compare runs bcrypt, one comparison at a time, waiting at most as long
// as the request.
func (f *webFront) compare(ctx context.Context, hash, pass string) (bool, error) {
	select {
	case f.bcrypt <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	defer func() { <-f.bcrypt }()
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(pass)) == nil, nil
}

// clientOf is the address a client's failures are counted under: its IP,
// or for IPv6 its /64 (one host commonly holds a whole /64).
func clientOf(remote string) netip.Prefix {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	a = a.Unmap()
	bits := a.BitLen()
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// serveWeb serves srv on every listener until srv is shut down: plain
// HTTP, or TLS where the web config file sets it up, its settings and
// certificates read again at every handshake.
func serveWeb(lns []net.Listener, srv *http.Server, path string, logger *slog.Logger) error {
	useTLS := false
	http2 := false
	if path != "" {
		c, err := readWebConfig(path)
		if err != nil {
			return fmt.Errorf("--web.config.file %s: %w", path, err)
		}
		if c.TLSConfig.IsEnabled() {
			tc, err := web.ConfigToTLSConfig(&c.TLSConfig)
			if err != nil {
				return fmt.Errorf("--web.config.file %s: %w", path, err)
			}
			useTLS, http2 = true, c.HTTPConfig.HTTP2
			if !http2 {
				srv.TLSNextProto = make(map[string]func(*http.Server, *tls.Conn, http.Handler))
			}
			tc.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
				c, err := readWebConfig(path)
				if err != nil {
					return nil, err
				}
				t, err := web.ConfigToTLSConfig(&c.TLSConfig)
				if err != nil {
					return nil, err
				}
				t.NextProtos = []string{"http/1.1"}
				if http2 && c.HTTPConfig.HTTP2 {
					t.NextProtos = []string{"h2", "http/1.1"}
				}
				return t, nil
			}
			srv.TLSConfig = tc
		}
	}
	var g errgroup.Group
	for _, l := range lns {
		logger.Info("listening", "address", l.Addr().String(), "tls", useTLS, "http2", useTLS && http2)
		g.Go(func() error {
			if useTLS {
				return srv.ServeTLS(l, "", "")
			}
			return srv.Serve(l)
		})
	}
	err := g.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
