package pipeline

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/connretry"
	"github.com/baton-run/baton/runner/store"
)

// resultWriter makes a run's fenced item writes, in the order they are made, and keeps the
// result write ProcessBatch left in flight (see behind).
type resultWriter struct {
	run *Run

	// latest is the latest write left in flight, nil when none; send serialises sending them.
	mu     sync.Mutex
	latest *behindWrite
	send   sync.Mutex
}

// behindWrite is a write in flight: done closes when it has landed or failed with err. held
// says it holds a connection of its own (a staged write), so needs no other to finish. prev
// is the write in flight before it, kept only while it is the latest.
type behindWrite struct {
	done chan struct{}
	err  error
	held bool
	prev *behindWrite
}

// write commits one fenced write and applies what it returned, after the write left in
// flight before it, if any, has landed: writes reach the database in the order they are made.
func (w *resultWriter) write(ctx context.Context, iw *store.ItemsWrite, writes []store.TxFunc) error {
	if err := w.sync(ctx); err != nil {
		return err
	}
	w.run.written.note(iw.Ledger)
	return w.commit(ctx, iw, writes)
}

// commit makes a write whose targets are already noted (writtenKeys.note).
func (w *resultWriter) commit(ctx context.Context, iw *store.ItemsWrite, writes []store.TxFunc) (err error) {
	run := w.run
	if run.d.Tracer != nil {
		var span trace.Span
		ctx, span = commitSpan(ctx, run, iw)
		defer func() { endSpan(span, err) }()
	}
	iw.JobName, iw.Generation, iw.Lease, iw.Scope = run.started.JobName, run.started.Generation, run.lease, run.scopeStates
	var sent time.Time
	attempt := func() (fenceReply, error) {
		sent = run.now()
		ls, pause, err := run.d.Store.WriteItems(ctx, run.fence, iw, writes)
		return fenceReply{ls, pause}, err
	}
	res, err := attempt()
	if connretry.IsConnectError(err) {
		// Never sent: tried again until the lease would be over (the write itself keeps the
		// job's context). Set up only on this path, not on every item's.
		left, _ := run.st.leaseLeft(run.now())
		retryCtx, cancel := context.WithTimeout(ctx, left)
		res, err = connretry.OnConnect(retryCtx, attempt)
		cancel()
	}
	return w.landed(sent, res.LeaseState, res.pause, err)
}

// landed applies what a fenced write sent at sent returned.
func (w *resultWriter) landed(sent time.Time, ls store.LeaseState, pause bt.StopReason, err error) error {
	if err != nil {
		return w.run.st.fail(err)
	}
	w.run.st.apply(sent, ls, pause)
	w.run.publish(false)
	return nil
}

// behind sends a result write and returns without waiting for it: the job prepares and
// calls its next batch while PostgreSQL commits this one. Only outcomes without an external
// effect and without the job's own writes go this way, so a crash before the commit lands
// loses results a RESUME simply makes again. The next write, a ledger read that could see
// these targets, Sync and the end of the run each wait for it, and report its failure.
//
// Two writes may be in flight. A batch of new rows is staged (store.StagedWrite): its rows
// are inserted at once, on a connection of its own, while the write before it still works,
// and it commits after that one — writes land in the order they were made. A write holds a
// connection while it waits only when the write before it holds one too (or there is none), so
// a write that waits with a connection never waits for one that still needs a connection:
// however small the pool, the oldest write can always finish.
func (w *resultWriter) behind(ctx context.Context, iw *store.ItemsWrite) error {
	w.send.Lock()
	defer w.send.Unlock()
	prev, err := w.room(ctx)
	if err != nil {
		return err
	}
	run := w.run
	run.written.note(iw.Ledger) // before returning: the next batch's read decision needs them
	iw.JobName, iw.Generation, iw.Lease, iw.Scope = run.started.JobName, run.started.Generation, run.lease, run.scopeStates
	var staged *store.StagedWrite
	if iw.Stageable() && (prev == nil || prev.held) {
		// Without a connection (refused, or the job's context ended while waiting for one) the
		// write is made the usual way, with its retries.
		staged, _ = run.d.Store.HoldStaged(ctx, run.fence, iw)
	}
	// The write outlives the call that made it, not the lease: a job that cancels its
	// context once ProcessBatch returns must not cancel the commit.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), run.lease)
	b := &behindWrite{done: make(chan struct{}), held: staged != nil, prev: prev}
	w.mu.Lock()
	w.latest = b
	if prev != nil {
		prev.prev = nil
	}
	w.mu.Unlock()
	go func() {
		defer close(b.done)
		defer cancel()
		b.err = w.land(wctx, prev, iw, staged)
	}()
	return nil
}

// room waits until at most one write is in flight and returns it (nil when none), or the
// error it already failed with.
func (w *resultWriter) room(ctx context.Context) (*behindWrite, error) {
	w.mu.Lock()
	prev := w.latest
	var before *behindWrite
	if prev != nil {
		before = prev.prev
	}
	w.mu.Unlock()
	if before != nil { // at most two in flight: the one before the latest must have landed
		select {
		case <-before.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if prev != nil {
		select {
		case <-prev.done:
			if prev.err != nil {
				return nil, prev.err
			}
		default:
		}
	}
	return prev, nil
}

// land makes a write left in flight once prev, the write before it (nil when none), has
// landed: staged, its rows are already on their way and only its commit waits.
func (w *resultWriter) land(ctx context.Context, prev *behindWrite, iw *store.ItemsWrite, staged *store.StagedWrite) error {
	if staged != nil {
		staged.Stage(ctx)
	}
	if prev != nil {
		<-prev.done
		if prev.err != nil {
			if staged != nil {
				staged.Abort(ctx)
			}
			return prev.err // the run is failing: send nothing more, report it once more
		}
	}
	if staged != nil {
		span := noSpan
		if w.run.d.Tracer != nil {
			ctx, span = commitSpan(ctx, w.run, iw)
		}
		sent := w.run.now()
		ls, pause, err := staged.Commit(ctx)
		err = w.landed(sent, ls, pause, err)
		endSpan(span, err)
		return err
	}
	return w.commit(ctx, iw, nil)
}

// commitSpan starts the span of one fenced write of a run's items: the intents of a round of
// calls, or its results.
func commitSpan(ctx context.Context, run *Run, iw *store.ItemsWrite) (context.Context, trace.Span) {
	ctx, span := run.startSpan(ctx, "commit")
	if span.IsRecording() {
		what := "results"
		if len(iw.Ledger) > 0 && iw.Ledger[0].Kind == store.WriteIntent {
			what = "intents"
		}
		span.SetAttributes(AttrCommit.String(what), AttrItems.Int(len(iw.Ledger)))
	}
	return ctx, span
}

// sync waits for the write in flight, if any, and returns its error.
func (w *resultWriter) sync(ctx context.Context) error {
	w.mu.Lock()
	b := w.latest
	w.mu.Unlock()
	if b == nil {
		return nil
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	w.mu.Lock()
	if w.latest == b {
		w.latest = nil
	}
	w.mu.Unlock()
	return b.err
}

// fenceReply is what a fenced write of a run returns: its lease state and stop reason.
type fenceReply struct {
	store.LeaseState
	pause bt.StopReason
}
