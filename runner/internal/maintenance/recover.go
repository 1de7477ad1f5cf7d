// Package maintenance keeps the cluster healthy between runs: the lease recoverer ends runs
// whose holder died or stalled, and the retention pruner deletes what is past its period.
package maintenance

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/metrics"
	"github.com/baton-run/baton/runner/store"
)

// RecoverStore is what the recoverer needs of the store.
type RecoverStore interface {
	// RecoverExpired fails the runs whose lease expired, turning their IN_FLIGHT targets
	// AMBIGUOUS_EFFECT, and returns them.
	RecoverExpired(ctx context.Context, notCalled store.NotCalledFunc) ([]store.ExpiredRun, error)
	// Run reads one run.
	Run(ctx context.Context, id int64) (*bt.RunRecord, error)
}

// Unlocker releases a job's Redis lock by compare-and-delete on its token.
type Unlocker interface {
	Release(ctx context.Context, job, token string) (bool, error)
}

// Recoverer fails runs whose lease expired (their worker died or stalled), turns their
// in-flight targets ambiguous and releases their Redis locks.
type Recoverer struct {
	Store   RecoverStore
	Locks   Unlocker
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// NotCalledFunc, if set, says which intents of the expired runs were never called (their
	// holder died waiting for a downstream turn): those are settled, not quarantined.
	NotCalledFunc store.NotCalledFunc
	// RunEndedFunc, if set, receives each recovered run as it now stands.
	RunEndedFunc func(run bt.RunRecord)
}

// Recover runs one recovery pass.
func (rc *Recoverer) Recover(ctx context.Context) {
	expired, err := rc.Store.RecoverExpired(ctx, rc.NotCalledFunc)
	if err != nil {
		if ctx.Err() == nil {
			rc.Logger.Error("recover expired leases", "err", err)
		}
		return
	}
	for _, e := range expired {
		switch {
		case e.Settled:
			rc.Logger.Info("sharded run settled by the recoverer's sweep", runFields(e, "run_id", e.ID)...)
		case e.ShardOf != 0:
			// A shard holds no Redis lock: its run does.
			rc.Metrics.Recovered.Inc()
			rc.Logger.Warn("shard's lease expired", runFields(e, "run_id", e.ShardOf, "shard_run_id", e.ID,
				"requeued", e.Requeued, "ambiguous", e.Ambiguous)...)
		default:
			rc.Metrics.Recovered.Inc()
			rc.Logger.Warn("run failed: lease expired", runFields(e, "run_id", e.ID, "ambiguous", e.Ambiguous)...)
			if _, err := rc.Locks.Release(ctx, e.JobName, e.Token); err != nil {
				rc.Logger.Warn("release expired lock", "job", e.JobName, "err", err)
			}
		}
		if rc.RunEndedFunc != nil {
			if rec, err := rc.Store.Run(ctx, e.ID); err == nil {
				rc.RunEndedFunc(*rec)
			}
		}
	}
}

// runFields are the log fields of a recovered run: its job, args, and the trace it belongs
// to when it has one, as on every line of a run's life.
func runFields(e store.ExpiredRun, args ...any) []any {
	f := append([]any{"job", e.JobName}, args...)
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": e.TraceParent})
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		f = append(f, "trace_id", sc.TraceID().String())
	}
	return f
}
