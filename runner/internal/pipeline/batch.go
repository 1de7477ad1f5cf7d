package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// batch is one Process or ProcessBatch call on its way through the item sequence of
// docs/architecture.md: read the ledger, decide, commit the intents, call, commit the results
// and the checkpoint — in rounds while TRANSIENT failures are retried.
type batch struct {
	run         *Run
	items       []bt.Item
	parallelism int
	fn          ItemFunc

	states  []itemState       // one allocation for the batch
	pending []*itemState      // the items the next round calls
	decided *store.ItemsWrite // outcomes decided without a call, for the first result commit

}

// itemState is one item's progress through a batch.
type itemState struct {
	item      bt.Item
	base      store.LedgerWrite
	attempt   int
	prevSig   string
	prevCount int
	// before is the target's state before this batch's intents (none: no row).
	before bt.LedgerState
	// notCalled counts the rounds the item's downstream failed to give it a turn (not the
	// waits for one): an Acquire error that does not clear ends the item after a few.
	notCalled int
	// outcome of the latest call
	err error
	a   *Attempt
}

// results is what one round of calls leaves to commit: the result write, the job's own writes
// and the items to call again after a backoff.
type results struct {
	w      *store.ItemsWrite
	writes []store.TxFunc
	retry  []*itemState
}

func newBatch(run *Run, items []bt.Item, parallelism int, fn ItemFunc) *batch {
	return &batch{run: run, items: items, parallelism: parallelism, fn: fn}
}

// process takes the batch through the item sequence. It returns nil once every item's
// outcome is committed (or, written behind, sent), success or failure; an error only when the
// job must stop.
func (b *batch) process(ctx context.Context) (err error) {
	if len(b.items) == 0 {
		return nil
	}
	if b.run.d.Tracer != nil {
		ctx = b.startSpan(ctx)
		defer func() { endSpan(trace.SpanFromContext(ctx), err) }()
	}
	if err := b.run.Check(ctx); err != nil {
		return err
	}
	keys, err := b.keys()
	if err != nil {
		return err
	}
	priors, err := b.readLedger(ctx, keys)
	if err != nil {
		return err
	}
	if err := b.decide(ctx, priors); err != nil {
		return err
	}
	for round := 1; ; round++ {
		res, err := b.call(ctx, round)
		if err != nil {
			return err
		}
		if err := b.commitResults(ctx, res); err != nil {
			return err
		}
		b.run.stats.flush(ctx, b.run.d.Store, b.run.fence, b.run.log, false)
		if len(res.retry) == 0 {
			return nil
		}
		if err := b.backoff(ctx, round); err != nil {
			return b.stopRetrying(ctx, res.retry, err)
		}
		b.pending = res.retry
	}
}

// startSpan starts the span of a Process ("item") or ProcessBatch ("batch") call and returns
// the context that holds it.
func (b *batch) startSpan(ctx context.Context) context.Context {
	name := "batch"
	if len(b.items) == 1 && b.parallelism == 1 {
		name = "item"
	}
	ctx, span := b.run.startSpan(ctx, name)
	if span.IsRecording() {
		if name == "item" {
			span.SetAttributes(AttrTarget.String(b.items[0].Target), AttrStep.String(b.items[0].Step))
		} else {
			span.SetAttributes(AttrItems.Int(len(b.items)))
		}
	}
	return ctx
}

// keys returns the ledger key of every item, refusing an item without a target and a key
// offered twice.
func (b *batch) keys() ([]store.TargetStep, error) {
	keys := make([]store.TargetStep, len(b.items))
	seen := make(map[store.TargetStep]bool, len(b.items))
	for i, it := range b.items {
		if it.Target == "" {
			return nil, bt.Errorf(bt.CodeInvalidInput, "item %d has no target key", i)
		}
		if it.Downstream != "" {
			if err := bt.CheckName("downstream", it.Downstream); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
		}
		k := store.TargetStep{Target: it.Target, Step: it.Step}
		if seen[k] {
			return nil, bt.Errorf(bt.CodeInvalidInput, "target %q step %q appears twice in one batch", it.Target, it.Step)
		}
		seen[k] = true
		keys[i] = k
	}
	return keys, nil
}

// readLedger returns the ledger rows of keys in the run's generation, or none without reading
// when the generation cannot have any (writtenKeys.mayHaveRows).
func (b *batch) readLedger(ctx context.Context, keys []store.TargetStep) (map[store.TargetStep]store.LedgerRow, error) {
	run := b.run
	if !run.replay && !run.written.mayHaveRows(keys) {
		return nil, nil
	}
	// The rows may be in a write still in flight.
	if err := run.Sync(ctx); err != nil {
		return nil, err
	}
	return run.d.Store.LedgerRows(ctx, run.started.JobName, run.started.Generation, keys)
}

// decide sorts the items by what the ledger says of them: those that need a call go to
// pending, the others' outcomes to decided.
func (b *batch) decide(ctx context.Context, priors map[store.TargetStep]store.LedgerRow) error {
	b.decided = &store.ItemsWrite{}
	b.pending = make([]*itemState, 0, len(b.items))
	b.states = make([]itemState, len(b.items))
	var changedDone []store.TargetStep
	for i, it := range b.items {
		st := &b.states[i]
		st.item, st.base = it, ledgerWrite(&b.run.started, it)
		if b.run.targets.excludes(it) {
			// A replay of selected targets: any other target is out of its scope, untouched.
			b.decided.Delta.Processed++
			b.decided.Delta.Skipped++
			b.run.d.Metrics.Items.WithLabelValues("OUT_OF_SCOPE").Inc()
			continue
		}
		prior, known := priors[store.TargetStep{Target: it.Target, Step: it.Step}]
		// Read under this run's lease (or known absent from a generation that was empty):
		// nobody else adds rows to the generation while the lease holds.
		st.base.Fresh = !known
		if known {
			st.base.Prior, st.before = prior.State, prior.State
			st.base.InputChanged = prior.InputHash != "" && st.base.InputHash != "" && prior.InputHash != st.base.InputHash
			st.attempt, st.prevSig, st.prevCount = prior.Attempt, prior.ErrorSig, prior.SameErrorCount
			if b.decideKnown(st, prior) {
				if st.base.InputChanged && !prior.InputChanged && (prior.State == bt.LedgerConfirmed || prior.State == bt.LedgerSkipped) {
					changedDone = append(changedDone, store.TargetStep{Target: it.Target, Step: it.Step})
				}
				continue
			}
		} else if b.run.replay && !b.run.replayFull {
			// Never processed in this generation: outside a partial replay's scope.
			b.decided.Delta.Processed++
			b.decided.Delta.Skipped++
			b.run.d.Metrics.Items.WithLabelValues("OUT_OF_SCOPE").Inc()
			continue
		}
		b.pending = append(b.pending, st)
	}
	return b.flagInputChanged(ctx, changedDone)
}

// decideKnown handles a target the ledger already knows. It reports true when the item needs
// no call (skipped, left quarantined or turned ambiguous), adding its outcome to decided.
func (b *batch) decideKnown(st *itemState, prior store.LedgerRow) bool {
	w := b.decided
	if b.run.started.Shard != nil && prior.RunID == b.run.fence.RunID && b.countOwn(prior.State) {
		b.run.d.Metrics.Items.WithLabelValues("LEDGER_" + string(prior.State)).Inc()
		return true
	}
	switch {
	case prior.State == bt.LedgerConfirmed || prior.State == bt.LedgerSkipped:
		w.Delta.Processed++
		w.Delta.Skipped++
	case prior.State == bt.LedgerInFlight:
		// A dead worker's intent: the call may have landed. Never call again.
		l := st.base
		msg := "found IN_FLIGHT from an earlier attempt: the effect may have happened"
		sig := errorSignature(bt.LedgerAmbiguous, errors.New(msg))
		l.State, l.CountInRun, l.Attempt, l.Kind = bt.LedgerAmbiguous, true, prior.Attempt, store.WriteQuarantine
		l.LastError, l.ErrorSig, l.SameErrorCount, l.ErrorClass, l.ErrorMessage = &msg, &sig, 1, string(bt.LedgerAmbiguous), msg
		w.Ledger = append(w.Ledger, l)
		w.Delta.Processed++
		w.Delta.Ambiguous++
	case prior.State == bt.LedgerAmbiguous:
		w.Delta.Processed++
		w.Delta.Ambiguous++
	case prior.State == bt.LedgerTransient || prior.State == bt.LedgerNotApplied:
		return false
	case b.run.scope[prior.State]:
		return false
	default:
		// A rejected class outside the replay's scope, or BUG_SUSPECTED (the fix queue).
		w.Delta.Processed++
		w.Delta.Skipped++
	}
	b.run.d.Metrics.Items.WithLabelValues("LEDGER_" + string(prior.State)).Inc()
	return true
}

// countOwn counts a target an earlier holder of this shard settled after the shard's
// checkpoint: its next holder starts again from that checkpoint, with the counters as they
// stood there, so it counts the target as the earlier holder did — once — and calls nothing.
// It reports false for a state that is not settled (IN_FLIGHT, TRANSIENT, NOT_APPLIED),
// which the item goes on to handle as any holder would.
func (b *batch) countOwn(state bt.LedgerState) bool {
	d := &b.decided.Delta
	switch state {
	case bt.LedgerInFlight, bt.LedgerTransient, bt.LedgerNotApplied:
		return false
	case bt.LedgerConfirmed:
		d.Succeeded++
	case bt.LedgerSkipped:
		d.Skipped++
	case bt.LedgerAmbiguous:
		d.Ambiguous++
	default:
		d.Failed++ // a rejected class or BUG_SUSPECTED, as setFailure counted it
	}
	d.Processed++
	return true
}

// flagInputChanged flags the done targets offered with a changed input. A done target is not
// called again, whatever its input now is; the ledger flags the difference for the operator
// and keeps the hash of what was applied.
func (b *batch) flagInputChanged(ctx context.Context, changedDone []store.TargetStep) error {
	if len(changedDone) == 0 {
		return nil
	}
	run := b.run
	run.log.Warn("targets already done were offered with a changed input; not called again", "targets", len(changedDone), "first", changedDone[0].Target)
	run.d.Metrics.Items.WithLabelValues("INPUT_CHANGED").Add(float64(len(changedDone)))
	if err := run.d.Store.FlagInputChanged(ctx, run.fence, run.started.JobName, run.started.Generation, changedDone); err != nil {
		return run.st.fail(err)
	}
	return nil
}

// call makes one round: it commits the pending items' intents, calls them and sorts their
// outcomes into results. The first round's results carry the outcomes decided without a call.
func (b *batch) call(ctx context.Context, round int) (*results, error) {
	res := &results{w: &store.ItemsWrite{Delta: b.decided.Delta, Ledger: slices.Grow(b.decided.Ledger, len(b.pending))}}
	b.decided = &store.ItemsWrite{}
	if len(b.pending) == 0 {
		return res, nil
	}
	if round > 1 {
		if err := b.run.Check(ctx); err != nil {
			return nil, err
		}
	}
	if err := b.hold(ctx); err != nil {
		return nil, err
	}
	if err := b.intents(ctx); err != nil {
		return nil, err
	}
	b.calls(ctx)
	for _, st := range b.pending {
		if st.err == nil {
			b.confirm(st, res)
		} else {
			b.settleFailure(st, round, res)
		}
	}
	return res, nil
}

// intents commits IN_FLIGHT for every external pending item before any call is made.
func (b *batch) intents(ctx context.Context) error {
	w := &store.ItemsWrite{}
	for _, st := range b.pending {
		st.attempt++
		if st.item.External {
			l := st.base
			l.State, l.Attempt, l.Kind = bt.LedgerInFlight, st.attempt, store.WriteIntent
			w.Ledger = append(w.Ledger, l)
		}
	}
	if len(w.Ledger) == 0 {
		return nil
	}
	if err := b.run.writes.write(ctx, w, nil); err != nil {
		return err
	}
	for _, st := range b.pending {
		if st.item.External {
			st.base.Fresh, st.base.Prior = false, bt.LedgerInFlight // the intent's row is there now
		}
	}
	return nil
}

// calls runs fn for every pending item, at most parallelism at once, each with a context
// that ends with the lease, and then stops the run at the next boundary if a stop condition
// has tripped.
func (b *batch) calls(ctx context.Context) {
	run := b.run
	left, _ := run.st.leaseLeft(run.now())
	ictx, cancel := context.WithTimeout(ctx, left) // ends no later than the lease does
	defer cancel()
	one := func(st *itemState) {
		st.a = &Attempt{IdempotencyKey: st.base.IdempotencyKey, Number: st.attempt, Target: st.item.Target, Step: st.item.Step}
		cctx, span := ictx, noSpan
		if run.d.Tracer != nil {
			cctx, span = b.callSpan(ictx, st)
		}
		turn, err := b.turn(cctx, st)
		if err != nil {
			st.err = err // not called: neither a call nor a failure for the stop conditions
			endCallSpan(span, err)
			return
		}
		st.err = callItem(cctx, run.log, st.item, b.fn, st.a)
		endCallSpan(span, st.err)
		if turn != nil {
			turn.Done(st.err)
		}
		run.stats.record(st.err, st.item.External)
	}
	if b.parallelism <= 1 || len(b.pending) == 1 {
		for _, st := range b.pending {
			one(st)
		}
	} else {
		// parallelism workers take the items in order: a goroutine per worker, not per item.
		var next atomic.Int64
		var wg sync.WaitGroup
		for range min(b.parallelism, len(b.pending)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1) - 1; i < int64(len(b.pending)); i = next.Add(1) - 1 {
					one(b.pending[i])
				}
			}()
		}
		wg.Wait()
	}
	if ch, ok := run.stats.tripped(); ok {
		run.st.requestStop(bt.StopCondition, &ch)
		run.log.Warn("stop condition tripped; stopping at the next boundary", "condition", ch.Name, "detail", ch.Detail)
	}
}

// callSpan starts the span of one item's call: the context the item's function receives
// holds it, so the function's own spans and outgoing requests (tracing.Transport) are its
// children.
func (b *batch) callSpan(ctx context.Context, st *itemState) (context.Context, trace.Span) {
	ctx, span := b.run.startSpan(ctx, "call")
	if span.IsRecording() {
		span.SetAttributes(AttrIdempotencyKey.String(st.a.IdempotencyKey), AttrTarget.String(st.item.Target),
			AttrStep.String(st.item.Step), AttrItemAttempt.Int(st.a.Number), AttrExternal.Bool(st.item.External))
		if st.item.Downstream != "" {
			span.SetAttributes(AttrDownstream.String(st.item.Downstream))
		}
	}
	return ctx, span
}

// endCallSpan ends a call's span with its outcome.
func endCallSpan(span trace.Span, err error) {
	if span.IsRecording() {
		span.SetAttributes(AttrOutcome.String(callOutcome(err)))
	}
	endSpan(span, err)
}

// callItem runs fn, turning a panic into an error.
func callItem(ctx context.Context, log *slog.Logger, item bt.Item, fn ItemFunc, a *Attempt) (err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("item panicked", "target", a.Target, "panic", v)
			err = panicError{v}
		}
	}()
	if err := ctx.Err(); err != nil {
		// A worker paused past its lease must not start a call.
		return Transient(fmt.Errorf("lease ended before the call: %w", err))
	}
	err = fn(ctx, item, a)
	if err != nil && isDeadline(ctx, err) {
		if _, explicit := err.(*classified); !explicit {
			err = fmt.Errorf("item deadline (lease end) reached: %w", err)
		}
	}
	return err
}

// confirm adds a successful call's outcome to res: CONFIRMED with its refs, and the job's
// own writes.
func (b *batch) confirm(st *itemState, res *results) {
	l := st.base
	l.State, l.CountInRun, l.Attempt = bt.LedgerConfirmed, true, st.attempt
	l.EffectRef, l.EvidenceRef = st.a.effectRef, st.a.evidenceRef
	if l.EvidenceRef != nil && b.run.sensitive {
		masked := MaskEvidence(*l.EvidenceRef)
		l.EvidenceRef = &masked
	}
	res.w.Ledger = append(res.w.Ledger, l)
	res.w.Delta.Processed++
	res.w.Delta.Succeeded++
	for _, w := range st.a.writes {
		res.writes = append(res.writes, store.TxFunc(w))
	}
	b.run.d.Metrics.Items.WithLabelValues(string(bt.LedgerConfirmed)).Inc()
}

// settleFailure classifies a failed call: a TRANSIENT one with attempts left goes to retry,
// any other becomes the target's final failure in res.
func (b *batch) settleFailure(st *itemState, round int, res *results) {
	run := b.run
	state := ClassOf(st.err, st.item.External)
	if _, ok := st.err.(panicError); ok {
		state = bt.LedgerBugSuspected
	}
	sig := errorSignature(state, st.err)
	if sig == st.prevSig {
		st.prevCount++
	} else {
		st.prevSig, st.prevCount = sig, 1
	}
	// An unclassified failure seen the same way 3 times is likely a bug, not weather; a
	// failure the job classified as Transient stays TRANSIENT.
	if state == bt.LedgerTransient && !isClassified(st.err) && st.prevCount >= 3 {
		state = bt.LedgerBugSuspected
	}
	notCalled := isNotCalled(st.err)
	if notCalled && !isWaiting(st.err) {
		st.notCalled++
	}
	// A run asked to stop still keeps such a target to retry: the backoff then stops at once
	// and stopRetrying records it with the checkpoint before it, so a RESUME retries it. A
	// call that waited for its turn in vain waits again, as long as the run goes on; one whose
	// downstream failed to give it a turn tries a bounded number of rounds.
	if state == bt.LedgerTransient && (round < run.retry.MaxAttempts || notCalled && st.notCalled < maxNotCalled(run.retry)) {
		res.retry = append(res.retry, st)
		if notCalled && !errors.Is(st.err, ErrFreshIntent) {
			// No call was made: the retry's intent takes this attempt's number again (the
			// write below, settling this attempt's own intent, still carries it).
			defer func() { st.attempt-- }()
		}
		if st.item.External && notCalled && rejected(st.before) {
			// Settled back to the class a replay was retrying: no call was made to change it.
			l := st.base
			msg := PublicErrorText(run.log, st.err)
			l.State, l.Attempt, l.LastError, l.ErrorSig, l.SameErrorCount = st.before, st.attempt, &msg, &sig, st.prevCount
			res.w.Ledger = append(res.w.Ledger, l)
			st.base.Prior = st.before
			return
		}
		if st.item.External {
			// The job says no effect happened: record that, so a crash during the backoff
			// does not leave the target looking in doubt.
			l := st.base
			msg := PublicErrorText(run.log, st.err)
			l.State, l.Attempt, l.LastError, l.ErrorSig, l.SameErrorCount = bt.LedgerTransient, st.attempt, &msg, &sig, st.prevCount
			res.w.Ledger = append(res.w.Ledger, l)
			st.base.Prior = bt.LedgerTransient // once that write lands, as the retry needs it to
		}
		return
	}
	if notCalled {
		b.notCalledOutcome(st, res.w)
		return
	}
	l := st.base
	setFailure(run.log, &l, &res.w.Delta, failure{state: state, cause: st.err, attempt: st.attempt, sig: sig, same: st.prevCount})
	res.w.Ledger = append(res.w.Ledger, l)
	res.w.Delta.Processed++
	run.d.Metrics.Items.WithLabelValues(string(state)).Inc()
}

// maxNotCalled is how many rounds an item whose downstream fails to give it a turn is tried
// before it ends TRANSIENT, not called.
func maxNotCalled(p Retry) int { return max(p.MaxAttempts, 3) }

// notCalledOutcome adds to w the end of an item whose call was never made, its downstream
// giving it no turn: TRANSIENT with the reason, so that a RESUME tries it again — unless the
// target was in a rejected class a replay was retrying, which it keeps: no call was made to
// change it. Either way it is counted once, failed.
func (b *batch) notCalledOutcome(st *itemState, w *store.ItemsWrite) {
	run := b.run
	l := st.base
	state := bt.LedgerTransient
	if rejected(st.before) {
		state = st.before
	}
	if state != bt.LedgerTransient && !st.item.External {
		w.Delta.Failed++ // nothing of this run's on the row: it stays as it was
	} else {
		setFailure(run.log, &l, &w.Delta, failure{state: state, cause: st.err, attempt: max(st.attempt, 1),
			sig: st.prevSig, same: st.prevCount})
		w.Ledger = append(w.Ledger, l)
	}
	w.Delta.Processed++
	run.d.Metrics.Items.WithLabelValues("NOT_CALLED").Inc()
}

// rejected reports whether state is a class a replay retries (a rejection or BUG_SUSPECTED),
// one a call never made must not overwrite.
func rejected(state bt.LedgerState) bool {
	switch state {
	case "", bt.LedgerTransient, bt.LedgerNotApplied, bt.LedgerInFlight, bt.LedgerConfirmed, bt.LedgerAmbiguous, bt.LedgerSkipped:
		return false
	}
	return true
}

// commitResults commits a round's results, with the batch's checkpoint once nothing is left
// to retry. A final commit of many items without an external effect or the job's own writes
// is written behind (resultWriter.behind).
func (b *batch) commitResults(ctx context.Context, res *results) error {
	final := res.w
	if len(res.retry) == 0 {
		final.Checkpoint = b.checkpoint()
	}
	if len(final.Ledger) == 0 && final.Delta == (store.RunDelta{}) && final.Checkpoint == nil && len(res.writes) == 0 {
		return nil
	}
	if len(res.retry) == 0 && len(res.writes) == 0 && len(b.items) > 1 && !anyExternal(b.items) {
		return b.run.writes.behind(ctx, final)
	}
	return b.run.writes.write(ctx, final, res.writes)
}

// checkpoint returns the checkpoint of the batch's last item, or, when it carries none, of
// the latest item that does.
func (b *batch) checkpoint() *string {
	for i := len(b.items) - 1; i >= 0; i-- {
		if cp := checkpointOf(b.items[i]); cp != nil {
			return cp
		}
	}
	return nil
}

// backoff waits before retry round try+1, then reaches a safe point; a run already asked to
// stop does not wait.
func (b *batch) backoff(ctx context.Context, try int) error {
	if err := b.run.st.err(); err != nil {
		return err
	}
	p := b.run.retry
	d := p.InitialBackoff << (try - 1)
	if d <= 0 || d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	d = time.Duration(rand.Int64N(int64(d)) + 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return b.run.Check(ctx)
}

// stopRetrying ends a batch asked to stop (err) while it waited to retry: it records the
// failures to retry as TRANSIENT, their checkpoint staying before them so a RESUME retries
// them, and returns err. A lost lease records nothing.
func (b *batch) stopRetrying(ctx context.Context, retry []*itemState, err error) error {
	if errors.Is(err, bt.ErrLeaseLost) {
		return err
	}
	stop := &store.ItemsWrite{}
	for _, st := range retry {
		if isNotCalled(st.err) {
			b.notCalledOutcome(st, stop)
			continue
		}
		l := st.base
		setFailure(b.run.log, &l, &stop.Delta, failure{state: bt.LedgerTransient, cause: st.err, attempt: st.attempt, sig: st.prevSig, same: st.prevCount})
		stop.Ledger = append(stop.Ledger, l)
		stop.Delta.Processed++
	}
	if werr := b.run.writes.write(ctx, stop, nil); werr != nil {
		return werr
	}
	return err
}

func anyExternal(items []bt.Item) bool {
	for _, it := range items {
		if it.External {
			return true
		}
	}
	return false
}
