package runner

import (
	"context"

	"github.com/baton-run/baton/runner/store"
)

// Batched ledger counts, for a page of jobs or runs: one statement for every key. A job's
// counts are those of its current generation, so they are read through JobService; a run's
// through RunService.

// CountsKey names one set of per-state ledger counts: a generation's (RunID 0) or one run's.
type CountsKey = store.CountsKey

// LedgerCounts returns the per-state ledger counts of each job generation in keys (each with
// RunID 0), keyed as asked. A generation without entries gets an empty map.
func (s *JobService) LedgerCounts(ctx context.Context, keys []CountsKey) (map[CountsKey]map[LedgerState]int64, error) {
	return s.r.store.LedgerCountsOf(ctx, keys)
}

// LedgerCounts returns the per-state ledger counts of each run in keys (its job, generation
// and id), keyed as asked. A run without entries gets an empty map.
func (s *RunService) LedgerCounts(ctx context.Context, keys []CountsKey) (map[CountsKey]map[LedgerState]int64, error) {
	return s.r.store.LedgerCountsOf(ctx, keys)
}
