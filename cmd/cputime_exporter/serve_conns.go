package main

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// connBound keeps at most max connections open across the listeners: when
// one more is accepted, the connection idle the longest (one that has sent
// no request yet, or waits between keep-alive requests) is closed, and if
// every one is busy with a request, the new one is. Accepting goes on all
// the time, so a flood of idle connections never keeps a scrape waiting in
// the kernel's backlog, and the descriptors held stay bounded: the
// sampler's budget is sized beside them (see runServer).
type connBound struct {
	max   int
	mu    sync.Mutex
	conns map[net.Conn]*connInfo
}

type connInfo struct {
	busy  bool
	since time.Time // accepted, or idle since
}

func newConnBound(max int) *connBound {
	return &connBound{max: max, conns: make(map[net.Conn]*connInfo)}
}

func (b *connBound) listener(l net.Listener) net.Listener { return &boundListener{Listener: l, b: b} }

type boundListener struct {
	net.Listener
	b *connBound
}

func (l *boundListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.b.admit(c) {
			return c, nil
		}
	}
}

// admit registers c, closing the longest-idle connection if that makes
// one too many; false if c itself was closed (every other one is busy).
func (b *connBound) admit(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.conns) >= b.max {
		var oldest net.Conn
		var at time.Time
		for k, v := range b.conns {
			if !v.busy && (oldest == nil || v.since.Before(at)) {
				oldest, at = k, v.since
			}
		}
		if oldest == nil {
			c.Close()
			return false
		}
		delete(b.conns, oldest)
		oldest.Close()
	}
	b.conns[c] = &connInfo{since: time.Now()}
	return true
}

// state follows the server's connections (http.Server.ConnState).
func (b *connBound) state(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	info := b.conns[c]
	if info == nil {
		return // evicted
	}
	switch s {
	case http.StateActive:
		info.busy = true
	case http.StateIdle:
		info.busy, info.since = false, time.Now()
	case http.StateClosed, http.StateHijacked:
		delete(b.conns, c)
	}
}

// open is the number of connections held.
func (b *connBound) open() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}
