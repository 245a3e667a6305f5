package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/cputime/cputime/exporter"
)

// runInProcess runs runServer with so, its log into w, until the test
// ends, and returns the channel its result comes on if it returns first.
func runInProcess(t *testing.T, so serveOptions, w io.Writer) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServer(ctx, so, w) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("runServer: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("runServer still running 10 s after its context ended")
		}
	})
	return done
}

// waitServing polls up every 20 ms until it says yes, failing the test if
// the server returns first or 30 s pass (what names what up waits for).
func waitServing(t *testing.T, done <-chan error, what string, up func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !up() {
		select {
		case err := <-done:
			t.Fatalf("runServer returned at start: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after 30 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveInProcess runs runServer with so until the test ends, and waits
// until it listens.
func serveInProcess(t *testing.T, so serveOptions) {
	t.Helper()
	done := runInProcess(t, so, io.Discard)
	waitServing(t, done, "not listening on "+so.addrs[0], func() bool {
		c, err := net.Dial("tcp", so.addrs[0])
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// --web.config.file: TLS and basic auth with a bcrypt hash, as the
// exporter-toolkit reads it: 401 without or with wrong credentials, 200
// with them; plain HTTP gets no metrics.
func TestServeTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	cert, key, pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "web.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  scraper: '%s'\n", cert, key, hash)), 0o600)
	addr := freePort(t)
	serveInProcess(t, serveOptions{addrs: []string{addr}, path: "/metrics", maxConns: 16, config: cfg,
		opts: exporter.Options{PIDs: []int{os.Getpid()}, SampleInterval: -1, NoExitRecords: true}})
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	fetch := func(scheme, user, pass string) (int, string) {
		return get(t, client, scheme+"://"+addr+"/metrics", user, pass)
	}
	if code, _ := fetch("https", "", ""); code != 401 {
		t.Errorf("https without credentials: %d, want 401", code)
	}
	if code, _ := fetch("https", "scraper", "wrong"); code != 401 {
		t.Errorf("https with a wrong password: %d, want 401", code)
	}
	if code, body := fetch("https", "scraper", "s3cret"); code != 200 || !strings.Contains(body, "cputime_process_cpu_seconds_total{") {
		t.Errorf("https with credentials: %d, want 200 and metrics", code)
	}
	if code, body := fetch("http", "scraper", "s3cret"); code == 200 || strings.Contains(body, "cputime_process_cpu_seconds_total") {
		t.Errorf("plain http: %d with metrics, want none", code)
	}
	// A configuration that does not parse stops the server at start.
	bad := filepath.Join(dir, "bad.yml")
	os.WriteFile(bad, []byte("basic_auth_users: [\n"), 0o600)
	err = runServer(context.Background(), serveOptions{addrs: []string{freePort(t)}, path: "/metrics", maxConns: 16, config: bad,
		opts: exporter.Options{PIDs: []int{os.Getpid()}, SampleInterval: -1, NoExitRecords: true}}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--web.config.file "+bad) {
		t.Errorf("a bad web config: %v", err)
	}
}

// Many idle connections, most never sending a request, against a bound of
// 8: the server holds at most 8 (the longest idle closed first), and a
// scrape still answers at once.
func TestServeConnectionFlood(t *testing.T) {
	addr := freePort(t)
	serveInProcess(t, serveOptions{addrs: []string{addr}, path: "/metrics", maxConns: 8,
		opts: exporter.Options{PIDs: []int{os.Getpid()}, SampleInterval: -1, NoExitRecords: true}})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 200 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") // then idle, kept alive
		}
		conns = append(conns, c)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	r, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("a scrape with 200 idle connections open: %v", err)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Errorf("scrape: %d", r.StatusCode)
	}
	t.Logf("scrape answered in %v with 200 idle connections", time.Since(start))
	// The server side: count our process's sockets connected to addr's port.
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	n := serverSockets(t, port)
	if n > 8 {
		t.Errorf("the server holds %d connections, want at most 8", n)
	}
}

// serverSockets counts this process's established TCP sockets whose local
// port is port (the server's side), from /proc/net/tcp and its fds.
func serverSockets(t *testing.T, port string) int {
	t.Helper()
	p, _ := strconv.Atoi(port)
	hexPort := fmt.Sprintf(":%04X", p)
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(b), "\n")[1:] {
			x := strings.Fields(l)
			if len(x) > 9 && strings.HasSuffix(x[1], hexPort) && x[3] == "01" {
				inodes[x[9]] = true
			}
		}
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	n := 0
	for _, fd := range fds {
		l, err := os.Readlink("/proc/self/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(l, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] {
			n++
		}
	}
	return n
}

// --web.systemd-socket serves the socket systemd passes (fd 3, LISTEN_FDS,
// LISTEN_PID): systemd-socket-activate does what systemd does.
func TestServeSystemdSocket(t *testing.T) {
	activate, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Skip("no systemd-socket-activate (package systemd)")
	}
	if testing.Short() {
		t.Skip("-short: builds the command")
	}
	bin := filepath.Join(t.TempDir(), "cputime")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := freePort(t)
	cmd := exec.Command(activate, "-l", addr, bin, "--web.systemd-socket", strconv.Itoa(os.Getpid()))
	log := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = io.Discard, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	var body []byte
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			body, _ = io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode == 200 {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(string(body), fmt.Sprintf(`pid="%d"`, os.Getpid())) {
		t.Errorf("no metrics of process %d through the activated socket; log: %s", os.Getpid(), log)
	}
}

func TestServeVersion(t *testing.T) {
	var out strings.Builder
	if rc := serve(stdio{Stdout: &out, Stderr: &out}, []string{"--version"}); rc != 0 || !strings.HasPrefix(out.String(), "cputime ") {
		t.Errorf("serve --version: %d %q", rc, out.String())
	}
}
