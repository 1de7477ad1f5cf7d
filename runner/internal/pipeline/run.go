// Package pipeline runs a job's items and holds a run's execution state: the item pipeline
// (strict, batch, write-behind), lease renewal and safe points, stop requests, call statistics
// and stop conditions, the classification of failures, and the run's outcome.
//
// Package runner makes one Run per execution and wraps it in the job's handle; a Run takes
// what it needs of the runner in Deps and Settings and never imports package runner.
package pipeline

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/metrics"
	"github.com/baton-run/baton/runner/store"
)

// Store is what a run needs of the database: fenced writes of its items and its lease, and
// reads of its generation's ledger.
type Store interface {
	Activate(ctx context.Context, f store.Fence) (store.LeaseState, bt.StopReason, error)
	Renew(ctx context.Context, f store.Fence) (store.LeaseState, bt.StopReason, error)
	Poll(ctx context.Context, f store.Fence) (store.LeaseState, bt.StopReason, error)
	SetTotal(ctx context.Context, f store.Fence, total int64) (store.LeaseState, bt.StopReason, error)
	Finish(ctx context.Context, f store.Fence, status bt.RunStatus, reason bt.StopReason, message string) (*bt.RunRecord, error)
	WriteItems(ctx context.Context, f store.Fence, w *store.ItemsWrite, jobWrites []store.TxFunc) (store.LeaseState, bt.StopReason, error)
	HoldStaged(ctx context.Context, f store.Fence, w *store.ItemsWrite) (*store.StagedWrite, error)
	FlagInputChanged(ctx context.Context, f store.Fence, job string, gen int64, keys []store.TargetStep) error
	LedgerRows(ctx context.Context, job string, gen int64, keys []store.TargetStep) (map[store.TargetStep]store.LedgerRow, error)
	LedgerCounts(ctx context.Context, job string, gen, runID int64) (map[bt.LedgerState]int64, error)
	AddCallStats(ctx context.Context, f store.Fence, counts []store.CallCounts, lookback time.Duration) ([]store.CallCounts, error)
}

// Locks is the Redis pre-emption lock, taken and released by compare-and-set on a token.
type Locks interface {
	Acquire(ctx context.Context, name, token string, ttl time.Duration) (bool, error)
	Extend(ctx context.Context, name, token string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, name, token string) (bool, error)
}

// Downstreams limits calls to named outside systems cluster-wide (Item.Downstream).
type Downstreams interface {
	// Held says why calls to name are held at the boundary now (the downstream is paused,
	// its quota is spent), or "" when they are not.
	Held(name string) string
	// Acquire waits for a call to name to take its turn, never past deadline (nor ctx), and
	// returns the turn to end once the call has returned. An error means no turn: the call
	// must not be made. The turn is for intent, whose grant it records (TurnIntent).
	Acquire(ctx context.Context, name string, intent TurnIntent, deadline time.Time) (Turn, error)
}

// TurnIntent is the committed intent a turn is asked for: ID names it (TurnID), and NotCalled
// is the state its target is settled as if its holder dies before the turn is granted.
type TurnIntent struct {
	ID        string
	NotCalled bt.LedgerState
}

// TurnID names the intent of attempt of the target whose idempotency key is key, written by
// run runID: the ledger row's run_id, idempotency_key and attempt.
func TurnID(runID int64, key string, attempt int) string {
	return strconv.FormatInt(runID, 10) + ":" + strconv.Itoa(attempt) + ":" + key
}

// Turn is one call's permission to go to its downstream.
type Turn interface {
	// Done ends the turn with the call's outcome: it frees the call's concurrency slot, and
	// a pushback (Throttled) slows the downstream for everyone.
	Done(err error)
}

// Deps are what a run takes from the runner that starts it.
type Deps struct {
	// Downstreams limits the items' calls; nil limits none.
	Downstreams Downstreams
	Store       Store
	Locks       Locks
	Metrics     *metrics.Metrics
	// Logger is the runner's; the run tags it with the job, the run id (run_id) and, when the
	// run has a span, its trace (trace_id).
	Logger *slog.Logger
	// Tracer makes the run's spans; nil makes none (tracing is off).
	Tracer trace.Tracer
	// NowFunc is the application clock, used only for local durations.
	NowFunc func() time.Time
	// PublishFunc receives the run's state after every change, final on the last one; nil
	// publishes nothing.
	PublishFunc func(rec bt.RunRecord, final bool)
	// Instance names this process in the message of a run abandoned at shutdown.
	Instance string
	// FollowSpan, when set, takes the span of a run handed to its shards, to end it when the
	// run ends (EndRunSpan); without it the span ends with the hand-off.
	FollowSpan func(span trace.Span, runID int64)
}

// Settings are what the run's job and start decided for it.
type Settings struct {
	// Token is the run's lease token, fencing every write.
	Token string
	// Scope is a replay's scope; empty for other runs.
	Scope bt.ReplayScope
	// Targets narrows a replay to these targets; nil means every target of Scope. Any other
	// item of the run is out of scope: skipped, its ledger row untouched.
	Targets []string
	// Retry governs TRANSIENT failures within the run; its zero fields are not defaulted here.
	Retry Retry
	// StopConditions of the job; nil means DefaultStopConditions, empty disables them.
	StopConditions []StopCondition
	// SensitiveEvidence masks evidence refs at rest.
	SensitiveEvidence bool
	// Span is the run's span, started by the runner, which Execute ends; nil for none.
	Span trace.Span
}

// Retry is capped exponential backoff with full jitter for TRANSIENT failures.
type Retry struct {
	MaxAttempts    int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
}

// Run is one execution of a job: its lease, its stop requests, its item pipeline and its
// outcome. Its methods are safe for concurrent use by the job's goroutines.
type Run struct {
	d     Deps
	log   *slog.Logger
	fence store.Fence
	lease time.Duration
	retry Retry
	// sensitive masks evidence refs (Settings.SensitiveEvidence).
	sensitive bool

	// started is the run as it was handed to the worker. Its identity (job, generation,
	// trigger, mode, start checkpoint) never changes, so it is read without a lock.
	started bt.RunRecord

	// scope holds the states a replay retries; scopeStates is scope as the store takes it:
	// the states the transition table lets this replay's intents and results move a target
	// out of.
	scope              map[bt.LedgerState]bool
	scopeStates        []bt.LedgerState
	replay, replayFull bool
	// targets, if not nil, are the only targets a replay of selected targets retries.
	targets selection

	// jobCtx is the job's context, made with the run so that Abandon can end it whenever
	// the runner's shutdown calls it.
	jobCtx context.Context
	cancel context.CancelFunc

	st      state        // the latest known state and the stop requests
	written writtenKeys  // the targets written while the generation held no other rows
	writes  resultWriter // the fenced writes, and the write left in flight
	stats   *callStats
	// span is the run's span (Settings.Span), nil when it has none.
	span trace.Span
	// spanFollowed: the span was handed to Deps.FollowSpan, which ends it.
	spanFollowed bool
}

// New returns the run of rec, holding the lease token in s.
func New(d Deps, rec *bt.RunRecord, s Settings) *Run {
	run := &Run{
		d: d, retry: s.Retry, sensitive: s.SensitiveEvidence,
		log:     d.Logger.With(logFields(rec, s.Span)...),
		fence:   store.Fence{RunID: rec.ID, Token: s.Token},
		lease:   time.Duration(rec.LeaseSeconds) * time.Second,
		started: *rec,
		replay:  rec.Trigger == bt.TriggerReplay, replayFull: s.Scope == bt.ScopeFull,
		written: newWrittenKeys(),
	}
	run.st = state{rec: *rec, leaseLost: d.Metrics.LeaseLost}
	run.writes.run = run
	conds := s.StopConditions
	if conds == nil {
		conds = DefaultStopConditions()
	}
	run.stats = newCallStats(d.NowFunc, conds, rec.Shard != nil)
	if s.Targets != nil {
		run.targets = make(selection, len(s.Targets))
		for _, t := range s.Targets {
			run.targets[t] = true
		}
	}
	if s.Scope != "" {
		run.scope = map[bt.LedgerState]bool{}
		for _, st := range s.Scope.States() {
			run.scope[st] = true
		}
		run.scopeStates = s.Scope.States()
	}
	jobCtx := context.Background()
	if s.Span != nil {
		run.span = s.Span
		jobCtx = trace.ContextWithSpan(jobCtx, s.Span)
	}
	run.jobCtx, run.cancel = context.WithCancel(jobCtx)
	return run
}

// Started returns the run as it was handed to the worker: its identity (id, job, generation,
// trigger, mode, the checkpoint it started after, its shard) never changes.
func (run *Run) Started() bt.RunRecord { return run.started }

// logFields are what every line of a run's life carries: its job, its run id as an operator
// knows it (a shard's names its run, and the shard) and, when it has a span, its trace.
func logFields(rec *bt.RunRecord, span trace.Span) []any {
	f := make([]any, 0, 10)
	f = append(f, "job", rec.JobName)
	if s := rec.Shard; s != nil {
		f = append(f, "run_id", s.RunID, "shard", s.Key, "shard_run_id", rec.ID)
	} else {
		f = append(f, "run_id", rec.ID)
	}
	if span != nil {
		if sc := span.SpanContext(); sc.IsValid() {
			f = append(f, "trace_id", sc.TraceID().String())
		}
	}
	return f
}

// Logger returns a logger tagged with the job and run.
func (run *Run) Logger() *slog.Logger { return run.log }

// Fence returns what fences the run's writes: its id and lease token.
func (run *Run) Fence() store.Fence { return run.fence }

// Snapshot returns the run's latest known state.
func (run *Run) Snapshot() bt.RunRecord { return run.st.snapshot() }

func (run *Run) now() time.Time { return run.d.NowFunc() }

func (run *Run) publish(final bool) {
	if run.d.PublishFunc == nil {
		return
	}
	run.d.PublishFunc(run.Snapshot(), final)
}
