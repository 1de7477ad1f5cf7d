package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
)

// write commits one fenced write and applies what it returned, after the write left in
// flight before it, if any, has landed: writes reach the database in the order they are made.
func (run *Run) write(ctx context.Context, w *postgres.ItemsWrite, writes []postgres.TxFunc) error {
	if err := run.Sync(ctx); err != nil {
		return err
	}
	run.noteWritten(w.Ledger)
	return run.commit(ctx, w, writes)
}

// commit makes a write whose targets are already noted (noteWritten).
func (run *Run) commit(ctx context.Context, w *postgres.ItemsWrite, writes []postgres.TxFunc) error {
	w.JobName, w.Generation, w.Lease, w.Scope = run.started.JobName, run.started.Generation, run.lease, run.scopeStates
	var sent time.Time
	attempt := func() (fenceReply, error) {
		sent = run.now()
		ls, pause, err := run.r.store.WriteItems(ctx, run.fence, w, writes)
		return fenceReply{ls, pause}, err
	}
	res, err := attempt()
	if isConnectError(err) {
		// Never sent: tried again until the lease would be over (the write itself keeps the
		// job's context). Set up only on this path, not on every item's.
		run.mu.Lock()
		left := run.leaseEnd.Sub(run.now())
		run.mu.Unlock()
		retryCtx, cancel := context.WithTimeout(ctx, left)
		res, err = onConnect(retryCtx, attempt)
		cancel()
	}
	return run.landed(sent, res.LeaseState, res.pause, err)
}

// landed applies what a fenced write sent at sent returned.
func (run *Run) landed(sent time.Time, ls postgres.LeaseState, pause bt.StopReason, err error) error {
	if err != nil {
		return run.fail(err)
	}
	run.apply(sent, ls, pause)
	run.publish(false)
	return nil
}

// writeBehind sends a result write and returns without waiting for it: the job prepares and
// calls its next batch while PostgreSQL commits this one. Only outcomes without an external
// effect and without the job's own writes go this way, so a crash before the commit lands
// loses results a RESUME simply makes again. The next write, a ledger read that could see
// these targets, Sync and the end of the run each wait for it, and report its failure.
//
// Two writes may be in flight. A batch of new rows is staged (postgres.StagedWrite): its rows
// are inserted at once, on a connection of its own, while the write before it still works,
// and it commits after that one — writes land in the order they were made. A write holds a
// connection while it waits only when the write before it holds one too (or there is none), so
// a write that waits with a connection never waits for one that still needs a connection:
// however small the pool, the oldest write can always finish.
func (run *Run) writeBehind(ctx context.Context, w *postgres.ItemsWrite) error {
	run.behindSend.Lock()
	defer run.behindSend.Unlock()
	run.behindMu.Lock()
	prev := run.behind
	var before *behindWrite
	if prev != nil {
		before = prev.prev
	}
	run.behindMu.Unlock()
	if before != nil { // at most two in flight: the one before the latest must have landed
		select {
		case <-before.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if prev != nil {
		select {
		case <-prev.done:
			if prev.err != nil {
				return prev.err
			}
		default:
		}
	}
	run.noteWritten(w.Ledger) // before returning: the next batch's read decision needs them
	w.JobName, w.Generation, w.Lease, w.Scope = run.started.JobName, run.started.Generation, run.lease, run.scopeStates
	var staged *postgres.StagedWrite
	if w.Stageable() && (prev == nil || prev.held) {
		// Without a connection (refused, or the job's context ended while waiting for one) the
		// write is made the usual way, with its retries.
		staged, _ = run.r.store.HoldStaged(ctx, run.fence, w)
	}
	// The write outlives the call that made it, not the lease: a job that cancels its
	// context once ProcessBatch returns must not cancel the commit.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), run.lease)
	b := &behindWrite{done: make(chan struct{}), held: staged != nil, prev: prev}
	run.behindMu.Lock()
	run.behind = b
	if prev != nil {
		prev.prev = nil
	}
	run.behindMu.Unlock()
	go func() {
		defer close(b.done)
		defer cancel()
		if staged != nil {
			staged.Stage(wctx)
		}
		if prev != nil {
			<-prev.done
			if prev.err != nil {
				if staged != nil {
					staged.Abort(wctx)
				}
				b.err = prev.err // the run is failing: send nothing more, report it once more
				return
			}
		}
		if staged != nil {
			sent := run.now()
			ls, pause, err := staged.Commit(wctx)
			b.err = run.landed(sent, ls, pause, err)
			return
		}
		b.err = run.commit(wctx, w, nil)
	}()
	return nil
}

// Sync waits until every outcome ProcessBatch has returned for is committed, and returns the
// error of a commit that failed (ErrLeaseLost, or the database's). Process, ProcessBatch and
// the end of the run do this themselves; a job calls Sync before it acts on the assumption
// that the results of its last batch are in the database.
func (run *Run) Sync(ctx context.Context) error {
	run.behindMu.Lock()
	b := run.behind
	run.behindMu.Unlock()
	if b == nil {
		return nil
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	run.behindMu.Lock()
	if run.behind == b {
		run.behind = nil
	}
	run.behindMu.Unlock()
	return b.err
}

// Skip records an item as skipped (nothing to do) and advances the checkpoint. A target
// whose ledger row is CONFIRMED, AMBIGUOUS_EFFECT or IN_FLIGHT is not moved: Skip returns
// LEDGER_TRANSITION_REFUSED and records nothing (see the ledger state machine in
// docs/architecture.md).
func (run *Run) Skip(ctx context.Context, item Item, reason string) error {
	if err := run.Check(ctx); err != nil {
		return err
	}
	l := run.ledgerWrite(item)
	l.State, l.CountInRun, l.LastError, l.Kind = bt.LedgerSkipped, true, &reason, postgres.WriteSkip
	w := &postgres.ItemsWrite{Delta: postgres.RunDelta{Processed: 1, Skipped: 1}, Ledger: []postgres.LedgerWrite{l},
		Checkpoint: checkpointOf(item), Shard: item.Shard}
	if err := run.write(ctx, w, nil); err != nil {
		return err
	}
	run.r.metrics.Items.WithLabelValues(string(bt.LedgerSkipped)).Inc()
	return nil
}

// Fail records an item as failed without calling anything (the job found it bad itself):
// an error row, the ledger state ClassOf(cause) gives (TRANSIENT when unclassified) and the
// checkpoint advance. Like Skip, it never moves a target that is CONFIRMED, AMBIGUOUS_EFFECT
// or IN_FLIGHT: that returns LEDGER_TRANSITION_REFUSED and records nothing.
func (run *Run) Fail(ctx context.Context, item Item, cause error) error {
	if err := run.Check(ctx); err != nil {
		return err
	}
	if cause == nil {
		return bt.Errorf(bt.CodeInvalidInput, "Fail needs a cause")
	}
	state := ClassOf(cause, false)
	l := run.ledgerWrite(item)
	delta := postgres.RunDelta{Processed: 1}
	run.setFailure(&l, &delta, state, cause, 0, errorSignature(state, cause), 1)
	l.Kind = postgres.WriteFail
	w := &postgres.ItemsWrite{Delta: delta, Ledger: []postgres.LedgerWrite{l}, Checkpoint: checkpointOf(item), Shard: item.Shard}
	if err := run.write(ctx, w, nil); err != nil {
		return err
	}
	run.r.metrics.Items.WithLabelValues(string(state)).Inc()
	return nil
}

func checkpointOf(item Item) *string {
	if item.Checkpoint == "" {
		return nil
	}
	cp := item.Checkpoint
	return &cp
}

func (run *Run) ledgerWrite(item Item) postgres.LedgerWrite {
	return postgres.LedgerWrite{
		Target: item.Target, Step: item.Step, External: item.External,
		IdempotencyKey: IdempotencyKey(run.started.JobName, run.started.Generation, item.Target, item.Step),
		InputHash:      inputHash(item.Input),
	}
}

// setFailure fills a final failure: ledger state, counters and error row. sig and same say
// which failure this is and how many times in a row the target has failed that way.
func (run *Run) setFailure(l *postgres.LedgerWrite, d *postgres.RunDelta, state bt.LedgerState, cause error, attempt int, sig string, same int) {
	msg := publicErrorText(run.log, cause)
	l.State, l.CountInRun, l.Attempt = state, true, attempt
	l.LastError, l.ErrorSig, l.SameErrorCount = &msg, &sig, same
	if state == bt.LedgerAmbiguous {
		d.Ambiguous++
	} else {
		d.Failed++
	}
	l.ErrorClass, l.ErrorMessage = string(state), msg
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// IdempotencyKey returns the stable key of (job, generation, target, step): the same on every
// attempt and every run of the generation, different across generations.
func IdempotencyKey(job string, gen int64, target, step string) string {
	// The bytes of fmt's "%s\x00%d\x00%s\x00%s", built without fmt: this runs once per item.
	b := make([]byte, 0, len(job)+len(target)+len(step)+24)
	b = append(b, job...)
	b = append(b, 0)
	b = strconv.AppendInt(b, gen, 10)
	b = append(b, 0)
	b = append(b, target...)
	b = append(b, 0)
	b = append(b, step...)
	sum := sha256.Sum256(b)
	var out [3 + 32]byte
	copy(out[:], "bt_")
	hex.Encode(out[3:], sum[:16])
	return string(out[:])
}

func inputHash(input any) string {
	if input == nil {
		return ""
	}
	b, err := json.Marshal(input)
	if err != nil {
		b = fmt.Appendf(nil, "%#v", input)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// maskEvidence keeps a hint of an evidence ref and a digest to match it by, never the value.
func maskEvidence(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	hint := ref
	if len(hint) > 4 {
		hint = hint[:4]
	}
	return hint + "…sha256:" + hex.EncodeToString(sum[:6])
}

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
	return run.process(ctx, []Item{item}, 1, func(ctx context.Context, _ Item, a *Attempt) error { return fn(ctx, a) })
}

// ProcessBatch is Process for many items at once, the throughput path: one ledger read, one
// intent commit for the external items, the calls with at most parallelism in flight, and
// one result commit carrying every item's outcome, the job's writes and the checkpoint of the
// batch's last item. The guarantees of Process hold for every item. Size batches so their
// calls finish well within the lease: each call's context ends with it.
//
// A batch with no External item and no Attempt.Tx writes returns once its result commit is
// sent, not landed (see writeBehind): the run's next write, a ledger read that could meet the
// same targets, the end of the run and Sync wait for it, and report its failure.
func (run *Run) ProcessBatch(ctx context.Context, items []Item, parallelism int, fn func(ctx context.Context, item Item, a *Attempt) error) error {
	if parallelism < 1 {
		parallelism = 1
	}
	return run.process(ctx, items, parallelism, fn)
}

// itemState is one item's progress through process.
type itemState struct {
	item      Item
	base      postgres.LedgerWrite
	attempt   int
	prevSig   string
	prevCount int
	// outcome of the latest call
	err      error
	attempt_ *Attempt
}

func (run *Run) process(ctx context.Context, items []Item, parallelism int, fn func(ctx context.Context, item Item, a *Attempt) error) error {
	if len(items) == 0 {
		return nil
	}
	if err := run.Check(ctx); err != nil {
		return err
	}
	keys := make([]postgres.TargetStep, len(items))
	seen := make(map[postgres.TargetStep]bool, len(items))
	for i, it := range items {
		if it.Target == "" {
			return bt.Errorf(bt.CodeInvalidInput, "item %d has no target key", i)
		}
		k := postgres.TargetStep{Target: it.Target, Step: it.Step}
		if seen[k] {
			return bt.Errorf(bt.CodeInvalidInput, "target %q step %q appears twice in one batch", it.Target, it.Step)
		}
		seen[k] = true
		keys[i] = k
	}
	priors, err := run.priorLedger(ctx, keys)
	if err != nil {
		return err
	}

	// Decide from the ledger what needs a call.
	decided := &postgres.ItemsWrite{}
	pending := make([]*itemState, 0, len(items))
	var changedDone []postgres.TargetStep
	states := make([]itemState, len(items)) // one allocation for the batch
	for i, it := range items {
		st := &states[i]
		st.item, st.base = it, run.ledgerWrite(it)
		prior, known := priors[postgres.TargetStep{Target: it.Target, Step: it.Step}]
		// Read under this run's lease (or known absent from a generation that was empty):
		// nobody else adds rows to the generation while the lease holds.
		st.base.Fresh = !known
		if known {
			st.base.Prior = prior.State
			st.base.InputChanged = prior.InputHash != "" && st.base.InputHash != "" && prior.InputHash != st.base.InputHash
			st.attempt, st.prevSig, st.prevCount = prior.Attempt, prior.ErrorSig, prior.SameErrorCount
			if run.decide(st, prior, decided) {
				if st.base.InputChanged && !prior.InputChanged && (prior.State == bt.LedgerConfirmed || prior.State == bt.LedgerSkipped) {
					changedDone = append(changedDone, postgres.TargetStep{Target: it.Target, Step: it.Step})
				}
				continue
			}
		} else if run.replay && !run.replayFull {
			// Never processed in this generation: outside a partial replay's scope.
			decided.Delta.Processed++
			decided.Delta.Skipped++
			run.r.metrics.Items.WithLabelValues("OUT_OF_SCOPE").Inc()
			continue
		}
		pending = append(pending, st)
	}
	if len(changedDone) > 0 {
		// A done target is not called again, whatever its input now is; the ledger flags the
		// difference for the operator and keeps the hash of what was applied.
		run.log.Warn("targets already done were offered with a changed input; not called again", "targets", len(changedDone), "first", changedDone[0].Target)
		run.r.metrics.Items.WithLabelValues("INPUT_CHANGED").Add(float64(len(changedDone)))
		if err := run.r.store.FlagInputChanged(ctx, run.fence, run.started.JobName, run.started.Generation, changedDone); err != nil {
			return run.fail(err)
		}
	}

	last := items[len(items)-1]
	for round := 1; ; round++ {
		final := &postgres.ItemsWrite{Delta: decided.Delta, Ledger: slices.Grow(decided.Ledger, len(pending)), Shard: last.Shard}
		decided = &postgres.ItemsWrite{}
		var retry []*itemState
		var writes []postgres.TxFunc
		if len(pending) > 0 {
			if round > 1 {
				if err := run.Check(ctx); err != nil {
					return err
				}
			}
			if err := run.intents(ctx, pending); err != nil {
				return err
			}
			run.calls(ctx, pending, parallelism, fn)
			for _, st := range pending {
				if st.err == nil {
					l := st.base
					l.State, l.CountInRun, l.Attempt = bt.LedgerConfirmed, true, st.attempt
					l.EffectRef, l.EvidenceRef = st.attempt_.effectRef, st.attempt_.evidenceRef
					if l.EvidenceRef != nil && run.info.SensitiveEvidence {
						masked := maskEvidence(*l.EvidenceRef)
						l.EvidenceRef = &masked
					}
					final.Ledger = append(final.Ledger, l)
					final.Delta.Processed++
					final.Delta.Succeeded++
					for _, w := range st.attempt_.writes {
						writes = append(writes, postgres.TxFunc(w))
					}
					run.r.metrics.Items.WithLabelValues(string(bt.LedgerConfirmed)).Inc()
					continue
				}
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
				// An unclassified failure seen the same way 3 times is likely a bug, not
				// weather; a failure the job classified as Transient stays TRANSIENT.
				if state == bt.LedgerTransient && !isClassified(st.err) && st.prevCount >= 3 {
					state = bt.LedgerBugSuspected
				}
				if state == bt.LedgerTransient && round < run.retry.MaxAttempts && run.stopErr() == nil {
					retry = append(retry, st)
					if st.item.External {
						// The job says no effect happened: record that, so a crash during the
						// backoff does not leave the target looking in doubt.
						l := st.base
						msg := publicErrorText(run.log, st.err)
						l.State, l.Attempt, l.LastError, l.ErrorSig, l.SameErrorCount = bt.LedgerTransient, st.attempt, &msg, &sig, st.prevCount
						final.Ledger = append(final.Ledger, l)
						st.base.Prior = bt.LedgerTransient // once that write lands, as the retry needs it to
					}
					continue
				}
				l := st.base
				run.setFailure(&l, &final.Delta, state, st.err, st.attempt, sig, st.prevCount)
				final.Ledger = append(final.Ledger, l)
				final.Delta.Processed++
				run.r.metrics.Items.WithLabelValues(string(state)).Inc()
			}
		}
		if len(retry) == 0 {
			final.Checkpoint = checkpointOf(last)
			if final.Checkpoint == nil {
				// The batch's last item may carry none; take the latest one that does.
				for i := len(items) - 1; i >= 0; i-- {
					if cp := checkpointOf(items[i]); cp != nil {
						final.Checkpoint = cp
						break
					}
				}
			}
		}
		if len(final.Ledger) > 0 || final.Delta != (postgres.RunDelta{}) || final.Checkpoint != nil || len(writes) > 0 {
			write := run.write
			if len(retry) == 0 && len(writes) == 0 && len(items) > 1 && !anyExternal(items) {
				write = func(ctx context.Context, w *postgres.ItemsWrite, _ []postgres.TxFunc) error {
					return run.writeBehind(ctx, w)
				}
			}
			if err := write(ctx, final, writes); err != nil {
				return err
			}
		}
		run.flushStats(ctx, false)
		if len(retry) == 0 {
			return nil
		}
		if err := run.backoff(ctx, round); err != nil {
			if errors.Is(err, bt.ErrLeaseLost) {
				return err
			}
			// Asked to stop while waiting: record the failures; the checkpoint stays before
			// them, so a RESUME retries them.
			stop := &postgres.ItemsWrite{Shard: last.Shard}
			for _, st := range retry {
				l := st.base
				run.setFailure(&l, &stop.Delta, bt.LedgerTransient, st.err, st.attempt, st.prevSig, st.prevCount)
				stop.Ledger = append(stop.Ledger, l)
				stop.Delta.Processed++
			}
			if werr := run.write(ctx, stop, nil); werr != nil {
				return werr
			}
			return err
		}
		pending = retry
	}
}

// decide handles a target the ledger already knows. It reports true when the item needs no
// call (skipped, left quarantined or turned ambiguous), adding its outcome to w.
func (run *Run) decide(st *itemState, prior postgres.LedgerRow, w *postgres.ItemsWrite) bool {
	switch {
	case prior.State == bt.LedgerConfirmed || prior.State == bt.LedgerSkipped:
		w.Delta.Processed++
		w.Delta.Skipped++
	case prior.State == bt.LedgerInFlight:
		// A dead worker's intent: the call may have landed. Never call again.
		l := st.base
		msg := "found IN_FLIGHT from an earlier attempt: the effect may have happened"
		sig := errorSignature(bt.LedgerAmbiguous, errors.New(msg))
		l.State, l.CountInRun, l.Attempt, l.Kind = bt.LedgerAmbiguous, true, prior.Attempt, postgres.WriteQuarantine
		l.LastError, l.ErrorSig, l.SameErrorCount, l.ErrorClass, l.ErrorMessage = &msg, &sig, 1, string(bt.LedgerAmbiguous), msg
		w.Ledger = append(w.Ledger, l)
		w.Delta.Processed++
		w.Delta.Ambiguous++
	case prior.State == bt.LedgerAmbiguous:
		w.Delta.Processed++
		w.Delta.Ambiguous++
	case prior.State == bt.LedgerTransient || prior.State == bt.LedgerNotApplied:
		return false
	case run.scope[prior.State]:
		return false
	default:
		// A rejected class outside the replay's scope, or BUG_SUSPECTED (the fix queue).
		w.Delta.Processed++
		w.Delta.Skipped++
	}
	run.r.metrics.Items.WithLabelValues("LEDGER_" + string(prior.State)).Inc()
	return true
}

// intents commits IN_FLIGHT for every external pending item before any call is made.
func (run *Run) intents(ctx context.Context, pending []*itemState) error {
	w := &postgres.ItemsWrite{}
	for _, st := range pending {
		st.attempt++
		if st.item.External {
			l := st.base
			l.State, l.Attempt, l.Kind = bt.LedgerInFlight, st.attempt, postgres.WriteIntent
			w.Ledger = append(w.Ledger, l)
		}
	}
	if len(w.Ledger) == 0 {
		return nil
	}
	if err := run.write(ctx, w, nil); err != nil {
		return err
	}
	for _, st := range pending {
		if st.item.External {
			st.base.Fresh, st.base.Prior = false, bt.LedgerInFlight // the intent's row is there now
		}
	}
	return nil
}

// calls runs fn for every pending item, at most parallelism at once, each with a context
// that ends with the lease.
func (run *Run) calls(ctx context.Context, pending []*itemState, parallelism int, fn func(ctx context.Context, item Item, a *Attempt) error) {
	ictx, cancel := run.itemContext(ctx)
	defer cancel()
	one := func(st *itemState) {
		st.attempt_ = &Attempt{IdempotencyKey: st.base.IdempotencyKey, Number: st.attempt, Target: st.item.Target, Step: st.item.Step}
		st.err = run.call(ictx, st.item, fn, st.attempt_)
		run.stats.record(st.err, st.item.External)
	}
	if parallelism <= 1 || len(pending) == 1 {
		for _, st := range pending {
			one(st)
		}
	} else {
		sem := make(chan struct{}, parallelism)
		var wg sync.WaitGroup
		for _, st := range pending {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				one(st)
			}()
		}
		wg.Wait()
	}
	run.checkStopConditions()
}

// call runs fn, turning a panic into an error.
func (run *Run) call(ctx context.Context, item Item, fn func(ctx context.Context, item Item, a *Attempt) error, a *Attempt) (err error) {
	defer func() {
		if v := recover(); v != nil {
			run.log.Error("item panicked", "target", a.Target, "panic", v)
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

// backoff waits before retry round try+1, then reaches a safe point.
func (run *Run) backoff(ctx context.Context, try int) error {
	d := run.retry.InitialBackoff << (try - 1)
	if d <= 0 || d > run.retry.MaxBackoff {
		d = run.retry.MaxBackoff
	}
	d = time.Duration(rand.Int64N(int64(d)) + 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return run.Check(ctx)
}

// maxWritten bounds how many targets a run remembers writing to a generation that was empty
// when it started (about 12 bytes each: 2M targets, some 25 MB); past it the run reads the
// ledger before every batch instead, which also waits for the writes in flight.
var maxWritten = 1 << 21

// writtenKey is how a run remembers a target's step it wrote: a 64-bit hash, seeded per run.
// Two keys sharing a hash cost a ledger read, never a wrong decision.
func (run *Run) writtenKey(target, step string) uint64 {
	var h maphash.Hash
	h.SetSeed(run.writtenSeed)
	h.WriteString(target)
	h.WriteByte(0)
	h.WriteString(step)
	return h.Sum64()
}

// noteWritten remembers the targets of a ledger write while the generation's only rows are
// this run's own, so priorLedger knows when it may skip the read. Noted before the write: a
// key noted for a write that then fails costs only a read.
func (run *Run) noteWritten(ls []postgres.LedgerWrite) {
	if len(ls) == 0 {
		return
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	if !run.ledgerEmpty {
		return
	}
	if run.written == nil {
		run.written = make(map[uint64]struct{}, len(ls))
	}
	for _, l := range ls {
		run.written[run.writtenKey(l.Target, l.Step)] = struct{}{}
	}
	if len(run.written) > maxWritten {
		run.ledgerEmpty, run.written = false, nil
	}
}

// mayHaveRows reports whether the generation may hold rows for keys: always, unless the run
// found its generation empty and has not written any of them since (a job may process a target
// twice in one run, and the second time the ledger must decide).
func (run *Run) mayHaveRows(keys []postgres.TargetStep) bool {
	run.mu.Lock()
	defer run.mu.Unlock()
	if !run.ledgerEmpty || run.replay {
		return true
	}
	for _, k := range keys {
		if _, mine := run.written[run.writtenKey(k.Target, k.Step)]; mine {
			return true
		}
	}
	return false
}

// priorLedger returns the ledger rows of the given targets' steps in this generation, or none
// without reading when the generation cannot have any (mayHaveRows).
func (run *Run) priorLedger(ctx context.Context, keys []postgres.TargetStep) (map[postgres.TargetStep]postgres.LedgerRow, error) {
	if !run.mayHaveRows(keys) {
		return nil, nil
	}
	// The rows may be in a write still in flight.
	if err := run.Sync(ctx); err != nil {
		return nil, err
	}
	return run.r.store.LedgerRows(ctx, run.started.JobName, run.started.Generation, keys)
}

func anyExternal(items []Item) bool {
	for _, it := range items {
		if it.External {
			return true
		}
	}
	return false
}
