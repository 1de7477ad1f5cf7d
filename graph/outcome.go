package graph

import (
	"context"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// rejectedStates are the final failures a retry of the same input does not change: the
// downstream or a policy refused the item.
var rejectedStates = []bt.LedgerState{bt.LedgerValidationRejected, bt.LedgerConflict, bt.LedgerPolicyBlocked}

// attention splits a run's final failures into failed and rejected (from the run's own ledger
// counters) and counts the targets it saw in doubt that still are: the ambiguous items the run
// recorded (made or met quarantined), bounded by what its generation still has in doubt. The
// per-run counters keep what the run did and a resolution does not rewrite them, while the
// generation's counters move with every resolution: the bound falls to 0 once nothing of the
// generation is in doubt. It can overstate a run whose own targets were resolved while others
// of its generation are still in doubt, never understate one. A run that recorded no failure,
// or saw no ambiguous effect, costs no query for that part; a page of runs costs one query
// per part through the response's loaders.
func (r *Resolver) attention(ctx context.Context, run *bt.RunRecord) (*model.RunAttention, error) {
	l := r.loaders(ctx)
	out := &model.RunAttention{}
	if run.Failed > 0 {
		counts, err := l.runCounts.Load(ctx, runner.CountsKey{Job: run.JobName, Generation: run.Generation, RunID: run.ID})
		if err != nil {
			return nil, err
		}
		var rejected int64
		for _, s := range rejectedStates {
			rejected += counts[s]
		}
		rejected = min(rejected, run.Failed)
		out.Rejected, out.Failed = int(rejected), int(run.Failed-rejected)
	}
	if run.Ambiguous > 0 {
		counts, err := l.generationCounts.Load(ctx, runner.CountsKey{Job: run.JobName, Generation: run.Generation})
		if err != nil {
			return nil, err
		}
		out.Ambiguous = int(min(run.Ambiguous, counts[bt.LedgerAmbiguous]))
	}
	return out, nil
}
