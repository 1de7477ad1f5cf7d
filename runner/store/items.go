package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Items are a run's fenced item writes and the ledger reads the runner makes before them.
type Items interface {
	// WriteItems commits one fenced write of one or many items: ledger rows, the run's
	// counters, the checkpoint, error rows and the job's own writes, together or not at all.
	// A (target, step) may appear only once. A row the transition table does not let its
	// write move refuses the write whole with LEDGER_TRANSITION_REFUSED.
	WriteItems(ctx context.Context, f Fence, w *ItemsWrite, jobWrites []TxFunc) (LeaseState, bt.StopReason, error)
	// HoldStaged takes what a staged write of w needs (w must be Stageable), waiting while
	// none is free.
	HoldStaged(ctx context.Context, f Fence, w *ItemsWrite) (*StagedWrite, error)
	// FlagInputChanged marks the ledger rows of keys whose target was offered again with an
	// input other than the one applied. Fenced.
	FlagInputChanged(ctx context.Context, f Fence, job string, gen int64, keys []TargetStep) error
	// LedgerRows reads the ledger rows of the given targets' steps.
	LedgerRows(ctx context.Context, job string, gen int64, keys []TargetStep) (map[TargetStep]LedgerRow, error)
	// RedoneWrites returns how many item writes relied on a ledger state that was not so and
	// were made again as upserts: anything but 0 points at a bug in what the runner tracks.
	RedoneWrites() int64
}

// TxFunc is a job's own database work for an item, done inside the item's transaction.
type TxFunc func(ctx context.Context, tx pgx.Tx) error

// LedgerWrite is one target's new ledger row in a fenced write.
type LedgerWrite struct {
	Target         string
	Step           string
	State          bt.LedgerState
	Attempt        int
	IdempotencyKey string
	InputHash      string
	InputChanged   bool
	External       bool
	EffectRef      *string
	EvidenceRef    *string
	LastError      *string
	ErrorSig       *string
	SameErrorCount int
	// CountInRun adds the state to the run's own per-state counts (final results, not intents).
	CountInRun bool
	// ErrorClass, when non-empty, also adds a run error row with ErrorMessage.
	ErrorClass   string
	ErrorMessage string
	// Fresh says the caller knows the generation has no row for this target's step yet (it
	// read the ledger under its lease, or the generation was empty and it has not written the
	// target since): the store may insert without looking. Should the row exist after all,
	// the write is made again as an upsert; false always upserts.
	Fresh bool
	// Prior, when set, is the state the caller knows the row has (it read or wrote the row under
	// its lease, like an intent it has just committed): the row is updated in place, only while
	// still in that state, and the counters move by Prior → State without reading the row first.
	// Should any row be in another state, the write is made again as an upsert.
	Prior bt.LedgerState
	// Kind says what the write is (an intent, a call's result, a skip, ...): a row the target
	// already has is moved only as the transition table allows (Transition), or the write is
	// refused whole with LEDGER_TRANSITION_REFUSED. Empty means WriteResult.
	Kind WriteKind
}

// WriteKind returns the write's kind, WriteResult when Kind is unset.
func (l *LedgerWrite) WriteKind() WriteKind {
	if l.Kind == "" {
		return WriteResult
	}
	return l.Kind
}

// RunDelta is what a write adds to a run's counters.
type RunDelta struct {
	Processed, Succeeded, Failed, Skipped, Ambiguous int
}

// ItemsWrite is one fenced write of one or many items: their ledger rows, the run's counters,
// the checkpoint and error rows, committed together or not at all.
type ItemsWrite struct {
	JobName    string
	Generation int64
	Delta      RunDelta
	Ledger     []LedgerWrite
	// Checkpoint, when non-nil, advances the run's checkpoint (a shard's own, for a shard).
	Checkpoint *string
	// Lease bounds how long the item transaction may sit idle (a worker frozen between its
	// statements): the transaction then rolls back and its lock on the run goes, so the
	// recoverer can fail the run. 0 leaves the database's setting.
	Lease time.Duration
	// Scope is the states the run's approved replay scope names (none outside replays): the
	// transition table lets an intent or a result move a row out of such a state.
	Scope []bt.LedgerState
}

// Stageable reports whether w can be staged: a batch whose rows the caller knows are all new.
func (w *ItemsWrite) Stageable() bool {
	if len(w.Ledger) < 2 {
		return false
	}
	for i := range w.Ledger {
		if !w.Ledger[i].Fresh {
			return false
		}
	}
	return true
}

// CheckKinds refuses, with INVALID_INPUT, item writes whose kind is not an item write's or
// does not fit the state written: an intent writes IN_FLIGHT, a skip SKIPPED, a quarantine
// AMBIGUOUS_EFFECT, a result or a failure neither IN_FLIGHT nor SKIPPED.
func (w *ItemsWrite) CheckKinds() error {
	for i := range w.Ledger {
		l := &w.Ledger[i]
		var ok bool
		switch l.WriteKind() {
		case WriteIntent:
			ok = l.State == bt.LedgerInFlight
		case WriteSkip:
			ok = l.State == bt.LedgerSkipped
		case WriteQuarantine:
			ok = l.State == bt.LedgerAmbiguous
		case WriteResult, WriteFail:
			ok = l.State != bt.LedgerInFlight && l.State != bt.LedgerSkipped
		}
		if !ok {
			return bt.Errorf(bt.CodeInvalidInput, "a %s write of target %q step %q cannot write %s", l.WriteKind(), l.Target, l.Step, l.State)
		}
	}
	return nil
}

// StagedWrite is a batch write of fresh rows split in two, so that the store can insert its
// rows while the run's write before it is still landing: Stage inserts the rows, unfenced and
// uncommitted, so no one sees them; Commit makes the fenced rest of the write (run row,
// counters, checkpoint, error rows) and commits, or, with the lease gone, rolls back and the
// rows with it. Abort gives up. A StagedWrite is held from HoldStaged to Commit or Abort.
type StagedWrite struct {
	Staged
}

// Staged is what an implementation does for a StagedWrite.
type Staged interface {
	// Stage inserts the rows. A failure is kept for Commit.
	Stage(ctx context.Context)
	// Commit makes the fenced rest of the write and commits it: on error nothing lands.
	Commit(ctx context.Context) (LeaseState, bt.StopReason, error)
	// Abort rolls the write back.
	Abort(ctx context.Context)
}

// LedgerRow is the part of a ledger row the runner consults before processing a target.
type LedgerRow struct {
	Target         string
	Step           string
	State          bt.LedgerState
	Attempt        int
	InputHash      string
	InputChanged   bool
	ErrorSig       string
	SameErrorCount int
	// RunID is the run (or shard) whose write left the row in its state.
	RunID int64
}

// TargetStep names one target's step.
type TargetStep struct{ Target, Step string }
