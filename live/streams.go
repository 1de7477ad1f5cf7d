package live

import (
	"context"
	"log/slog"
	"time"

	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// RunReader reads the runs that subscriptions start from and catch up with, and the shards of
// a sharded run. The runner's RunService is one.
type RunReader interface {
	Get(ctx context.Context, id int64) (*bt.RunRecord, error)
	List(ctx context.Context, f runner.RunFilter) ([]*bt.RunRecord, error)
	ByIDs(ctx context.Context, ids []int64) (map[int64]*bt.RunRecord, error)
	Shards(ctx context.Context, runID int64) ([]*bt.RunRecord, error)
}

// Streams are the live streams of the process's subscribers: one run's states, the changes
// of a job's runs, one reconcile request's states. Their re-reads of the database are shared
// (see Flight).
type Streams struct {
	feed  Feed
	runs  RunReader
	log   *slog.Logger
	quiet time.Duration // how long a stream waits without an event before it re-reads anyway
	// shardedRefresh is how often a stream of run changes re-reads the active runs while one
	// of them is sharded (RunChanges).
	shardedRefresh time.Duration

	// runReads shares re-reads of one run among its subscribers, shardReads those of a
	// sharded run's shards.
	runReads   *Flight[int64, *bt.RunRecord]
	shardReads *Flight[int64, []*bt.RunRecord]
	// activeReads shares re-reads of the active runs of a job ("" for all) among the
	// subscribers of its changes.
	activeReads *Flight[string, []*bt.RunRecord]
}

// snapshotTTL is how long one read of a run serves other subscribers re-reading it.
const snapshotTTL = 200 * time.Millisecond

// NewStreams returns the streams of events from feed, which read the database through runs.
func NewStreams(feed Feed, runs RunReader, log *slog.Logger) *Streams {
	active := []bt.RunStatus{bt.StatusStarting, bt.StatusRunning}
	return &Streams{
		feed:           feed,
		runs:           runs,
		log:            log,
		quiet:          15 * time.Second,
		shardedRefresh: time.Second,
		runReads:       NewFlight(snapshotTTL, runs.Get),
		shardReads:     NewFlight(snapshotTTL, runs.Shards),
		activeReads: NewFlight(snapshotTTL, func(ctx context.Context, job string) ([]*bt.RunRecord, error) {
			return runs.List(ctx, runner.RunFilter{JobName: job, Statuses: active, Limit: 500})
		}),
	}
}

// RunProgress streams the states of run id until its final one, latest wins. A sharded run's
// states carry its shards, each as its latest event left it, and the run's counters are their
// sums: every event of a shard makes a new state of the run. Following a shard's own id
// streams that shard alone, until it ends.
func (s *Streams) RunProgress(ctx context.Context, id int64) (<-chan *RunState, error) {
	f := &runFollower{s: s, id: id}
	return follow(ctx, s.quiet, followed[RunState]{
		start:  f.start,
		apply:  f.apply,
		reread: f.reread,
		final:  func(st *RunState) bool { return !st.Run.Status.Open() },
	})
}

// ReconcileProgress streams the states of reconcile request id, which read reads, until its
// final one, latest wins.
func (s *Streams) ReconcileProgress(ctx context.Context, id int64, read func(ctx context.Context) (*bt.ReconcileRequest, error)) (<-chan *bt.ReconcileRequest, error) {
	newer := func(next, cur *bt.ReconcileRequest) *bt.ReconcileRequest {
		if next == nil || !reconcileNewer(next, cur) {
			return nil
		}
		return next
	}
	return follow(ctx, s.quiet, followed[bt.ReconcileRequest]{
		start: subscribeThenRead(s.feed, ReconcileTopic(id), read),
		apply: func(_ context.Context, cur *bt.ReconcileRequest, m pubsub.Message) *bt.ReconcileRequest {
			if q, ok := decodeReconcile(m); ok && q.ID == id {
				return newer(q, cur)
			}
			return nil
		},
		reread: func(ctx context.Context, cur *bt.ReconcileRequest) *bt.ReconcileRequest {
			return newer(logged(ctx, s.log, "reconcile request", id, func() (*bt.ReconcileRequest, error) { return read(ctx) }), cur)
		},
		final: func(q *bt.ReconcileRequest) bool { return !q.Status.Open() },
	})
}

// logged returns what read returns, or nil (and logs) on failure: the stream keeps going and
// tries again on the next event or tick.
func logged[T any](ctx context.Context, log *slog.Logger, what string, id int64, read func() (*T, error)) *T {
	v, err := read()
	if err != nil {
		if ctx.Err() == nil {
			log.WarnContext(ctx, "live: re-read "+what+" for subscription", "id", id, "err", err)
		}
		return nil
	}
	return v
}
