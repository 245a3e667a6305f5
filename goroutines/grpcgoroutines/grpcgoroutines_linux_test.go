package grpcgoroutines

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/cputime/cputime/goroutines"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestCallsPerMethod: a real gRPC server on loopback; the Watcher counts as
// many ended tasks of each method as the client made calls (unary Check,
// streaming Watch), and their CPU within the process's CPU.
func TestCallsPerMethod(t *testing.T) {
	w, err := goroutines.Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(UnaryServerInterceptor()), grpc.ChainStreamInterceptor(StreamServerInterceptor()))
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := healthpb.NewHealthClient(conn)
	ctx := context.Background()
	const calls, streams = 50, 3
	for i := 0; i < calls; i++ {
		if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < streams; i++ {
		sctx, cancel := context.WithCancel(ctx)
		st, err := c.Watch(sctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	want := map[string]uint64{"/grpc.health.v1.Health/Check": calls, "/grpc.health.v1.Health/Watch": streams}
	var s goroutines.Snapshot
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s = w.Snapshot()
		got := map[string]uint64{}
		for _, x := range s.Types {
			got[x.Type] = x.Ended
		}
		if got["/grpc.health.v1.Health/Check"] == calls && got["/grpc.health.v1.Health/Watch"] == streams {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %+v, want ended %v", s.Types, want)
		}
	}
	for _, x := range s.Types {
		t.Logf("%s: %d calls, %v", x.Type, x.Ended, x.CPU)
		if want[x.Type] != 0 && x.CPU <= 0 {
			t.Errorf("%s: no CPU", x.Type)
		}
	}
}
