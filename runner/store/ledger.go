package store

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Ledger is the result ledger as operators and preflight read it, and an operator's
// resolution of a target in doubt.
type Ledger interface {
	// Ledger lists the entries matching q, by id ascending.
	Ledger(ctx context.Context, q LedgerQuery) ([]*bt.LedgerEntry, error)
	// LedgerEntry returns one entry, or NOT_FOUND.
	LedgerEntry(ctx context.Context, id int64) (*bt.LedgerEntry, error)
	// LedgerCounts returns the per-state counts of a generation (runID 0) or of one run,
	// kept with the rows: no implementation counts the ledger to answer.
	LedgerCounts(ctx context.Context, job string, gen, runID int64) (map[bt.LedgerState]int64, error)
	// LedgerCountsOf is LedgerCounts for many keys at once; keys without rows get an empty map.
	LedgerCountsOf(ctx context.Context, keys []CountsKey) (map[CountsKey]map[bt.LedgerState]int64, error)
	// CheckpointAge reports how long ago a generation's main checkpoint last moved (nil if none).
	CheckpointAge(ctx context.Context, job string, gen int64) (*time.Duration, error)
	// ResolveAmbiguous moves an AMBIGUOUS_EFFECT entry to CONFIRMED or NOT_APPLIED by
	// compare-and-set on its state (CONFLICT when it is no longer in doubt), keeping the
	// counters in step, and records audit with it.
	ResolveAmbiguous(ctx context.Context, id int64, to bt.LedgerState, effectRef, evidenceRef *string, note string, audit AuditRecord) (*bt.LedgerEntry, error)
	// ResolveAmbiguousMany is ResolveAmbiguous for many entries, in one transaction: each
	// member that can be resolved is, each that cannot (NOT_FOUND, CONFLICT) is left as it was
	// and reported in failed, and audit's one row, made from the outcome, commits with them.
	ResolveAmbiguousMany(ctx context.Context, ids []int64, to bt.LedgerState, evidenceRef *string, note string, audit BulkAuditFunc) (resolved []*bt.LedgerEntry, failed map[int64]error, err error)
	// TargetErrors lists the error rows the runs of job recorded for target, by id
	// ascending after afterID: the target's failures across runs and generations.
	TargetErrors(ctx context.Context, job, target string, afterID int64, limit int) ([]bt.RunError, error)
}

// BulkAuditFunc makes the one audit row of a bulk operation from its outcome: the members done
// and, for each member refused, why.
type BulkAuditFunc func(done []int64, failed map[int64]error) AuditRecord

// LedgerQuery selects ledger entries by keyset on id, ascending.
type LedgerQuery struct {
	JobName      string
	States       []bt.LedgerState
	RunID        int64
	Generation   int64
	TargetPrefix string
	// TargetKey selects one target exactly ("": any).
	TargetKey string
	AfterID   int64
	Limit     int
}

// CountsKey names one set of ledger counts: a generation's (RunID 0) or one run's.
type CountsKey struct {
	Job        string
	Generation int64
	RunID      int64
}
