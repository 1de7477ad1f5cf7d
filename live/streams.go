package live

import (
	"context"
	"log/slog"
	"time"

	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// RunReader reads the runs that subscriptions start from and catch up with. The runner's
// RunService is one.
type RunReader interface {
	Get(ctx context.Context, id int64) (*bt.RunRecord, error)
	List(ctx context.Context, f runner.RunFilter) ([]*bt.RunRecord, error)
	ByIDs(ctx context.Context, ids []int64) (map[int64]*bt.RunRecord, error)
}

// Streams are the live streams of the process's subscribers: one run's states, the changes
// of a job's runs, one reconcile request's states. Their re-reads of the database are shared
// (see Flight).
type Streams struct {
	feed  Feed
	runs  RunReader
	log   *slog.Logger
	quiet time.Duration // how long a stream waits without an event before it re-reads anyway

	// runReads shares re-reads of one run among its subscribers.
	runReads *Flight[int64, *bt.RunRecord]
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
		feed:     feed,
		runs:     runs,
		log:      log,
		quiet:    15 * time.Second,
		runReads: NewFlight(snapshotTTL, runs.Get),
		activeReads: NewFlight(snapshotTTL, func(ctx context.Context, job string) ([]*bt.RunRecord, error) {
			return runs.List(ctx, runner.RunFilter{JobName: job, Statuses: active, Limit: 500})
		}),
	}
}

// RunProgress streams the states of run id until its final one, latest wins.
func (s *Streams) RunProgress(ctx context.Context, id int64) (<-chan *bt.RunRecord, error) {
	return follow(ctx, s.feed, s.quiet, followed[bt.RunRecord]{
		topic: RunTopic(id),
		read:  func(ctx context.Context) (*bt.RunRecord, error) { return s.runReads.Get(ctx, id) },
		reread: func(ctx context.Context) *bt.RunRecord {
			return logged(ctx, s.log, "run", id, func() (*bt.RunRecord, error) { return s.runReads.Get(ctx, id) })
		},
		decode: func(m pubsub.Message) (*bt.RunRecord, bool) {
			run, ok := decodeRun(m)
			return run, ok && run.ID == id
		},
		newer: supersedes,
		final: func(run *bt.RunRecord) bool { return !run.Status.Active() },
	})
}

// ReconcileProgress streams the states of reconcile request id, which read reads, until its
// final one, latest wins.
func (s *Streams) ReconcileProgress(ctx context.Context, id int64, read func(ctx context.Context) (*bt.ReconcileRequest, error)) (<-chan *bt.ReconcileRequest, error) {
	return follow(ctx, s.feed, s.quiet, followed[bt.ReconcileRequest]{
		topic: ReconcileTopic(id),
		read:  read,
		reread: func(ctx context.Context) *bt.ReconcileRequest {
			return logged(ctx, s.log, "reconcile request", id, func() (*bt.ReconcileRequest, error) { return read(ctx) })
		},
		decode: func(m pubsub.Message) (*bt.ReconcileRequest, bool) {
			q, ok := decodeReconcile(m)
			return q, ok && q.ID == id
		},
		newer: reconcileNewer,
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
