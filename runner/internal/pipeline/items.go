package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// Attempt is what an item's function receives: the idempotency key to pass to the outside
// system, the attempt number, and ways to record effect and evidence and to make the job's
// own database writes in the item transaction.
type Attempt struct {
	// IdempotencyKey is stable for (job, generation, target, step): pass it on every call so
	// the outside system can refuse a duplicate.
	IdempotencyKey string
	// Number counts attempts at this target's step across runs of the generation, from 1.
	Number int
	// Target and Step echo the item.
	Target, Step string

	effectRef, evidenceRef *string
	writes                 []func(ctx context.Context, tx pgx.Tx) error
}

// SetEffectRef records the outside system's reference for the effect (a payment id).
func (a *Attempt) SetEffectRef(ref string) { a.effectRef = &ref }

// SetEvidenceRef records where the proof of the effect lives (a receipt, a response digest).
func (a *Attempt) SetEvidenceRef(ref string) { a.evidenceRef = &ref }

// Tx queues the job's own database work for this item. It runs inside the item's transaction
// after the lease check, and commits with the item's result and checkpoint or not at all. It
// runs only if the item succeeds. Do no network calls in fn: it holds a connection.
func (a *Attempt) Tx(fn func(ctx context.Context, tx pgx.Tx) error) { a.writes = append(a.writes, fn) }

// ItemFunc is what a batch calls for each item that needs a call.
type ItemFunc = func(ctx context.Context, item bt.Item, a *Attempt) error

// Process runs fn for one item and commits its outcome in one short transaction; for an
// External item the intent is committed before fn is called (see runner.Run.Process).
func (run *Run) Process(ctx context.Context, item bt.Item, fn func(ctx context.Context, a *Attempt) error) error {
	return newBatch(run, []bt.Item{item}, 1, func(ctx context.Context, _ bt.Item, a *Attempt) error { return fn(ctx, a) }).process(ctx)
}

// ProcessBatch is Process for many items at once: one ledger read, one intent commit for the
// external items, the calls with at most parallelism in flight, and one result commit (see
// runner.Run.ProcessBatch).
func (run *Run) ProcessBatch(ctx context.Context, items []bt.Item, parallelism int, fn ItemFunc) error {
	return newBatch(run, items, max(parallelism, 1), fn).process(ctx)
}

// Sync waits until every outcome ProcessBatch has returned for is committed, and returns the
// error of a commit that failed (ErrLeaseLost, or the database's).
func (run *Run) Sync(ctx context.Context) error { return run.writes.sync(ctx) }

// Skip records an item as skipped (nothing to do) and advances the checkpoint. A target
// whose ledger row is CONFIRMED, AMBIGUOUS_EFFECT or IN_FLIGHT is not moved: Skip returns
// LEDGER_TRANSITION_REFUSED and records nothing.
func (run *Run) Skip(ctx context.Context, item bt.Item, reason string) error {
	if err := run.Check(ctx); err != nil {
		return err
	}
	if run.targets.excludes(item) {
		return skipNotSelected(ctx, run, item)
	}
	l := ledgerWrite(&run.started, item)
	l.State, l.CountInRun, l.LastError, l.Kind = bt.LedgerSkipped, true, &reason, store.WriteSkip
	w := &store.ItemsWrite{Delta: store.RunDelta{Processed: 1, Skipped: 1}, Ledger: []store.LedgerWrite{l},
		Checkpoint: checkpointOf(item)}
	if err := run.writes.write(ctx, w, nil); err != nil {
		return err
	}
	run.d.Metrics.Items.WithLabelValues(string(bt.LedgerSkipped)).Inc()
	return nil
}

// Fail records an item as failed without calling anything: an error row, the ledger state
// ClassOf(cause) gives (TRANSIENT when unclassified) and the checkpoint advance. Like Skip,
// it never moves a target that is CONFIRMED, AMBIGUOUS_EFFECT or IN_FLIGHT.
func (run *Run) Fail(ctx context.Context, item bt.Item, cause error) error {
	if err := run.Check(ctx); err != nil {
		return err
	}
	if cause == nil {
		return bt.Errorf(bt.CodeInvalidInput, "Fail needs a cause")
	}
	if run.targets.excludes(item) {
		return skipNotSelected(ctx, run, item)
	}
	state := ClassOf(cause, false)
	l := ledgerWrite(&run.started, item)
	delta := store.RunDelta{Processed: 1}
	setFailure(run.log, &l, &delta, failure{state: state, cause: cause, sig: errorSignature(state, cause), same: 1})
	l.Kind = store.WriteFail
	w := &store.ItemsWrite{Delta: delta, Ledger: []store.LedgerWrite{l}, Checkpoint: checkpointOf(item)}
	if err := run.writes.write(ctx, w, nil); err != nil {
		return err
	}
	run.d.Metrics.Items.WithLabelValues(string(state)).Inc()
	return nil
}

// selection is the targets a replay of selected targets retries; nil means every target.
type selection map[string]bool

// excludes reports whether the run is a replay of selected targets that item is not one of.
func (s selection) excludes(item bt.Item) bool {
	return s != nil && !s[item.Target]
}

// skipNotSelected counts an item outside a replay's selected targets as skipped and advances
// the checkpoint past it, writing nothing to its ledger row: the replay leaves it as it was.
func skipNotSelected(ctx context.Context, run *Run, item bt.Item) error {
	w := &store.ItemsWrite{Delta: store.RunDelta{Processed: 1, Skipped: 1}, Checkpoint: checkpointOf(item)}
	if err := run.writes.write(ctx, w, nil); err != nil {
		return err
	}
	run.d.Metrics.Items.WithLabelValues("OUT_OF_SCOPE").Inc()
	return nil
}

func checkpointOf(item bt.Item) *string {
	if item.Checkpoint == "" {
		return nil
	}
	cp := item.Checkpoint
	return &cp
}

// ledgerWrite returns the ledger write of item in the generation of rec, before its outcome.
func ledgerWrite(rec *bt.RunRecord, item bt.Item) store.LedgerWrite {
	return store.LedgerWrite{
		Target: item.Target, Step: item.Step, External: item.External,
		IdempotencyKey: IdempotencyKey(rec.JobName, rec.Generation, item.Target, item.Step),
		InputHash:      inputHash(item.Input),
	}
}

// failure is a final failure of a target: its state and cause, which failure it is (sig),
// how many times in a row the target has failed that way (same), and at which attempt.
type failure struct {
	state   bt.LedgerState
	cause   error
	attempt int
	sig     string
	same    int
}

// setFailure fills a final failure into l (ledger state and error row) and d (counters).
func setFailure(log *slog.Logger, l *store.LedgerWrite, d *store.RunDelta, f failure) {
	msg := PublicErrorText(log, f.cause)
	sig := f.sig
	l.State, l.CountInRun, l.Attempt = f.state, true, f.attempt
	l.LastError, l.ErrorSig, l.SameErrorCount = &msg, &sig, f.same
	if f.state == bt.LedgerAmbiguous {
		d.Ambiguous++
	} else {
		d.Failed++
	}
	l.ErrorClass, l.ErrorMessage = string(f.state), msg
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

// MaskEvidence keeps a hint of an evidence ref and a digest to match it by, never the value.
func MaskEvidence(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	hint := ref
	if len(hint) > 4 {
		hint = hint[:4]
	}
	return hint + "…sha256:" + hex.EncodeToString(sum[:6])
}
