package goroutines

import (
	"context"
	"net/http"
	"reflect"
	"runtime/trace"
	"time"
	"unsafe"
)

// UnmatchedType is the task type Middleware gives a request its mux has no
// pattern for (404s, and the mux's redirects).
const UnmatchedType = "unmatched"

// Middleware serves each request through mux inside a runtime/trace task
// whose type is the pattern mux routes it to (mux.Handler's pattern, e.g.
// "GET /items/{id}"), or UnmatchedType. With a Watcher running, that is
// the CPU per route, and Ended counts the requests; without one, a task
// costs a few atomic operations. The request's context carries the task,
// so TaskCPU works inside the handler and trace.WithRegion, trace.Log and
// child tasks nest under it.
func Middleware(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := mux.Handler(r)
		if pattern == "" {
			pattern = UnmatchedType
		}
		ctx, task := NewTask(r.Context(), pattern)
		defer task.End()
		mux.ServeHTTP(w, r.WithContext(ctx))
	})
}

type taskKey struct{}

// NewTask is runtime/trace.NewTask, and records the task in the context
// for TaskCPU.
func NewTask(ctx context.Context, taskType string) (context.Context, *trace.Task) {
	ctx, task := trace.NewTask(ctx, taskType)
	if id, ok := taskID(task); ok {
		ctx = context.WithValue(ctx, taskKey{}, id)
	}
	return ctx, task
}

// idOffset is where runtime/trace.Task keeps its id (an unexported uint64
// field "id"), or -1: the trace names tasks by that id, and the Task does
// not export it.
var idOffset = func() uintptr {
	f, ok := reflect.TypeFor[trace.Task]().FieldByName("id")
	if !ok || f.Type.Kind() != reflect.Uint64 {
		return ^uintptr(0)
	}
	return f.Offset
}()

func taskID(t *trace.Task) (uint64, bool) {
	if t == nil || idOffset == ^uintptr(0) {
		return 0, false
	}
	return *(*uint64)(unsafe.Add(unsafe.Pointer(t), idOffset)), true
}

// TaskCPU is the CPU time the task in ctx (begun by NewTask or Middleware)
// has used so far, its child tasks' included, as the running Watcher
// knows it: stale by up to the Watcher's period (WithPeriod, 1 s by
// default) plus the time to parse a period of trace. False: no Watcher
// runs, ctx holds no such task, or the task has ended. A task the trace
// has not shown yet reads 0.
func TaskCPU(ctx context.Context) (time.Duration, bool) {
	id, ok := ctx.Value(taskKey{}).(uint64)
	w := current.Load()
	if !ok || w == nil {
		return 0, false
	}
	e := w.eng
	e.mu.Lock()
	defer e.mu.Unlock()
	if ti := e.tasks[id]; ti != nil {
		return time.Duration(ti.cpu), true
	}
	if id > e.w.lastTask {
		return 0, true
	}
	return 0, false
}
