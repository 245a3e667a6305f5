package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// logEvery is the least time between two log lines of one kind that can
// repeat at the rate of requests or pushes (a failed gather, a failed
// login, a failed push): the first is logged at once, the ones in the
// following logEvery are counted and the count given with the next line.
const logEvery = 10 * time.Second

// limitedLog logs at most one line per kind every logEvery, with the
// number held back since the previous one ("suppressed").
type limitedLog struct {
	logger *slog.Logger
	every  time.Duration
	mu     sync.Mutex
	kinds  map[string]*held // a fixed few kinds
}

type held struct {
	last time.Time
	n    int
}

func newLimitedLog(l *slog.Logger) *limitedLog {
	return &limitedLog{logger: l, every: logEvery, kinds: make(map[string]*held)}
}

// log logs msg with args at level, unless a line of kind was logged less
// than logEvery ago.
func (l *limitedLog) log(level slog.Level, kind, msg string, args ...any) {
	now := time.Now()
	l.mu.Lock()
	h := l.kinds[kind]
	if h == nil {
		h = &held{}
		l.kinds[kind] = h
	} else if now.Sub(h.last) < l.every {
		h.n++
		l.mu.Unlock()
		return
	}
	n := h.n
	h.last, h.n = now, 0
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	l.logger.Log(context.Background(), level, msg, args...)
}

// printer is a promhttp.Logger (Println) that logs through l as kind.
type printer struct {
	l    *limitedLog
	kind string
}

func (p printer) Println(v ...any) {
	p.l.log(slog.LevelError, p.kind, strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}
