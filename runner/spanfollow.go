package runner

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/runner/internal/pipeline"
)

// spanFollower keeps the spans of the sharded runs this instance planned until the runs end
// (their last shard, on whichever instance), then ends each with its run's final status: the
// span covers the run's life. It looks when a shard ends here and every poll interval; at
// shutdown it ends the spans it still holds as they are, with an event saying so.
type spanFollower struct {
	r     *Runner
	mu    sync.Mutex
	spans map[int64]trace.Span
	wake  chan struct{}
}

func newSpanFollower(r *Runner) *spanFollower {
	return &spanFollower{r: r, spans: map[int64]trace.Span{}, wake: make(chan struct{}, 1)}
}

// follow takes the span of run runID (pipeline.Deps.FollowSpan).
func (f *spanFollower) follow(span trace.Span, runID int64) {
	f.mu.Lock()
	f.spans[runID] = span
	f.mu.Unlock()
	f.wakeUp()
}

// wakeUp asks for a look now (a shard ended).
func (f *spanFollower) wakeUp() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *spanFollower) serve(ctx context.Context) {
	tick := time.NewTicker(f.r.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			f.endAll()
			return
		case <-tick.C:
		case <-f.wake:
		}
		f.look(ctx)
	}
}

// look ends the spans of the runs that have ended.
func (f *spanFollower) look(ctx context.Context) {
	f.mu.Lock()
	ids := make([]int64, 0, len(f.spans))
	for id := range f.spans {
		ids = append(ids, id)
	}
	f.mu.Unlock()
	for _, id := range ids {
		rec, err := f.r.store.Run(ctx, id)
		if err != nil || rec.Status.Open() {
			continue
		}
		f.mu.Lock()
		span := f.spans[id]
		delete(f.spans, id)
		f.mu.Unlock()
		if span != nil {
			pipeline.EndRunSpan(span, *rec)
		}
	}
}

// endAll ends the spans still held, at shutdown, so that they are exported with the rest.
func (f *spanFollower) endAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, span := range f.spans {
		span.AddEvent("the instance that planned the run stopped before the run ended")
		span.End()
		delete(f.spans, id)
	}
}
