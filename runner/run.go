package runner

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/pipeline"
	"github.com/baton-run/baton/runner/store"
)

// Run is a job's handle on its current execution: progress, safe points, item processing.
// Its methods are safe for concurrent use by the job's goroutines.
type Run struct {
	e   *pipeline.Run
	job Job
	// fence is the run's id and lease token, for the fenced writes of the runner's own jobs.
	fence store.Fence
	// shard is the shard the run works, nil for a run that is not a shard.
	shard *ShardInfo
}

// ErrStop is returned by Check and Process when the run has been asked to stop (cancel, pause,
// maintenance, shutdown) or has lost its lease. Return it from Job.Run.
var ErrStop = bt.ErrStopped

// newRun makes the handle of run rec, holding its lease token; span is the run's span (nil for
// none), which the run ends.
func (r *Runner) newRun(job Job, rec *bt.RunRecord, token string, scope bt.ReplayScope, targets []string, span trace.Span) *Run {
	info := job.Info()
	retry := info.Retry.withDefaults()
	d := pipeline.Deps{Store: r.store, Locks: r.locks, Metrics: r.metrics, Logger: r.log,
		NowFunc: r.cfg.NowFunc, Instance: r.cfg.Instance, Downstreams: r.ds, Tracer: r.tracer, FollowSpan: r.spans.follow}
	var shard *ShardInfo
	if s := rec.Shard; s != nil {
		d.Locks = noLocks{} // the run holds the job's lock; the database fences each shard
		shard = &ShardInfo{RunID: s.RunID, Key: s.Key, Spec: s.Spec, Index: s.Index, Count: s.Count}
	}
	if events := r.cfg.Events; events != nil {
		d.PublishFunc = func(rec bt.RunRecord, final bool) { events.RunChanged(RunEvent{Run: rec, Final: final}) }
	}
	e := pipeline.New(d, rec, pipeline.Settings{
		Token: token, Scope: scope, Targets: targets, StopConditions: info.StopConditions, SensitiveEvidence: info.SensitiveEvidence, Span: span,
		Retry: pipeline.Retry{MaxAttempts: retry.MaxAttempts, InitialBackoff: retry.InitialBackoff, MaxBackoff: retry.MaxBackoff},
	})
	return &Run{e: e, job: job, fence: e.Fence(), shard: shard}
}

// ID returns the run id.
func (run *Run) ID() int64 { return run.e.Started().ID }

// JobName returns the job's name.
func (run *Run) JobName() string { return run.e.Started().JobName }

// Trigger returns why the run started.
func (run *Run) Trigger() Trigger { return run.e.Started().Trigger }

// Mode returns RESUME or RESTART.
func (run *Run) Mode() Mode { return run.e.Started().Mode }

// Generation returns the ledger generation the run writes to.
func (run *Run) Generation() int64 { return run.e.Started().Generation }

// GenerationStartedAt returns when the first run of this run's generation started, by the
// database clock: a stable "business date" for a generation that spans several runs.
func (run *Run) GenerationStartedAt() time.Time { return run.e.Started().GenerationStartedAt }

// Checkpoint returns the token to resume after: the last committed checkpoint of the
// generation for a RESUME run, "" for RESTART and replays.
func (run *Run) Checkpoint() string { return run.e.Started().StartCheckpoint }

// Logger returns a logger tagged with the job and run.
func (run *Run) Logger() *slog.Logger { return run.e.Logger() }

// Snapshot returns the run's latest known state.
func (run *Run) Snapshot() bt.RunRecord { return run.e.Snapshot() }

// Check is a safe point: it renews the lease when less than half is left, learns of cancel
// and pause requests, and returns ErrStop (wrapped) when the job must stop here.
func (run *Run) Check(ctx context.Context) error { return run.e.Check(ctx) }

// SetTotal records how many items the run expects, for progress and ETA.
func (run *Run) SetTotal(ctx context.Context, n int64) error { return run.e.SetTotal(ctx, n) }

// Process runs fn for one item and commits its outcome — ledger row, counters, checkpoint and
// the job's own writes queued with Attempt.Tx — in one short transaction. No connection is
// held while fn runs. For an External item the intent (IN_FLIGHT, attempt n, idempotency key)
// is committed before fn is called, so a crash at any point leaves the target CONFIRMED,
// untouched, or AMBIGUOUS_EFFECT — never done twice.
//
// The ledger decides first: a target already CONFIRMED is skipped; one left IN_FLIGHT by a
// dead worker becomes AMBIGUOUS_EFFECT without a call; an AMBIGUOUS one stays quarantined;
// rejected classes are retried only when a replay's scope includes them; a replay touches no
// target outside its scope. TRANSIENT failures are retried within the run with capped
// exponential backoff and jitter (JobInfo.Retry).
//
// Process returns nil once the item's outcome is committed, success or failure; it returns
// an error only when the job must stop (ErrStop, a lost lease, or a database failure).
func (run *Run) Process(ctx context.Context, item Item, fn func(ctx context.Context, a *Attempt) error) error {
	return run.e.Process(ctx, item, fn)
}

// ProcessBatch is Process for many items at once, the throughput path: one ledger read, one
// intent commit for the external items, the calls with at most parallelism in flight, and
// one result commit carrying every item's outcome, the job's writes and the checkpoint of the
// batch's last item. The guarantees of Process hold for every item. Size batches so their
// calls finish well within the lease: each call's context ends with it.
//
// A batch with no External item and no Attempt.Tx writes returns once its result commit is
// sent, not landed: the run's next write, a ledger read that could meet the same targets,
// the end of the run and Sync wait for it, and report its failure.
func (run *Run) ProcessBatch(ctx context.Context, items []Item, parallelism int, fn func(ctx context.Context, item Item, a *Attempt) error) error {
	return run.e.ProcessBatch(ctx, items, parallelism, fn)
}

// Sync waits until every outcome ProcessBatch has returned for is committed, and returns the
// error of a commit that failed (ErrLeaseLost, or the database's). Process, ProcessBatch and
// the end of the run do this themselves; a job calls Sync before it acts on the assumption
// that the results of its last batch are in the database.
func (run *Run) Sync(ctx context.Context) error { return run.e.Sync(ctx) }

// Skip records an item as skipped (nothing to do) and advances the checkpoint. A target
// whose ledger row is CONFIRMED, AMBIGUOUS_EFFECT or IN_FLIGHT is not moved: Skip returns
// LEDGER_TRANSITION_REFUSED and records nothing (see the ledger state machine in
// docs/architecture.md).
func (run *Run) Skip(ctx context.Context, item Item, reason string) error {
	return run.e.Skip(ctx, item, reason)
}

// Fail records an item as failed without calling anything (the job found it bad itself):
// an error row, the ledger state ClassOf(cause) gives (TRANSIENT when unclassified) and the
// checkpoint advance. Like Skip, it never moves a target that is CONFIRMED, AMBIGUOUS_EFFECT
// or IN_FLIGHT: that returns LEDGER_TRANSITION_REFUSED and records nothing.
func (run *Run) Fail(ctx context.Context, item Item, cause error) error {
	return run.e.Fail(ctx, item, cause)
}

// requestStop asks the run to stop at its next boundary (a shutdown).
func (run *Run) requestStop(reason bt.StopReason) { run.e.RequestStop(reason) }

// abandon ends a run that did not stop within the shutdown timeout: it cancels the job's
// context and records the run FAILED (resumable) under its still-valid lease.
func (run *Run) abandon() { run.e.Abandon() }

// redisTimeout bounds one lock operation (pipeline.RedisTimeout).
func redisTimeout(lease time.Duration) time.Duration { return pipeline.RedisTimeout(lease) }
