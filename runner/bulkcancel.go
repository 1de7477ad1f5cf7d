package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	bt "github.com/baton-run/baton/runner/batontype"
)

// MaxBulkRuns is how many runs one bulk operation may name.
const MaxBulkRuns = 100

// CancelResult is what a bulk cancel made of one of its runs: the run with its cancel
// requested, or why not (NOT_FOUND, NOT_ACTIVE).
type CancelResult struct {
	RunID int64
	Run   *RunRecord
	Err   error
}

// CancelMany asks each of runIDs to stop at its next item boundary, as Cancel does, and
// records the whole request as one audit entry that lists every run with its outcome. A run
// that does not exist or has ended is reported in its result and changes nothing; the others
// are cancelled all the same. Duplicate ids count once. More than MaxBulkRuns ids, or none, is
// INVALID_INPUT and nothing is cancelled (that refusal is audited too).
func (s *RunService) CancelMany(ctx context.Context, runIDs []int64, actor string) ([]CancelResult, error) {
	r := s.r
	ids := make([]int64, 0, len(runIDs))
	seen := make(map[int64]bool, len(runIDs))
	for _, id := range runIDs {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || len(ids) > MaxBulkRuns {
		err := bt.Errorf(bt.CodeInvalidInput, "name between 1 and %d runs to cancel, not %d", MaxBulkRuns, len(ids))
		r.audit(ctx, actor, "cancelRuns", "runs", map[string]any{"count": len(ids)}, err)
		return nil, err
	}
	out := make([]CancelResult, len(ids))
	members := make([]map[string]any, len(ids))
	names := make([]string, len(ids))
	ok := 0
	var firstErr error
	for i, id := range ids {
		run, err := s.requestCancel(ctx, id, actorOr(actor))
		out[i] = CancelResult{RunID: id, Run: run, Err: err}
		outcome := "ok"
		if err != nil {
			outcome = string(bt.CodeOf(err))
			if outcome == "" {
				outcome = "error"
			}
			if firstErr == nil {
				firstErr = err
			}
		} else {
			ok++
		}
		members[i] = map[string]any{"run": id, "outcome": outcome}
		names[i] = strconv.FormatInt(id, 10)
	}
	outcome := "ok"
	switch {
	case ok == 0:
		outcome = string(bt.CodeOf(firstErr))
		if outcome == "" {
			outcome = "error"
		}
	case ok < len(ids):
		outcome = "PARTIAL"
	}
	args := map[string]any{"runs": members, "cancelled": ok, "refused": len(ids) - ok}
	if aerr := r.Audit().Record(ctx, actor, "cancelRuns", "runs:"+strings.Join(names, ","), args, outcome); aerr != nil {
		r.log.Error("write audit row", "action", "cancelRuns", "err", aerr)
	}
	for _, res := range out {
		if res.Err != nil && bt.CodeOf(res.Err) == "" {
			// Not a business outcome (the database failed): the caller learns of it as an error.
			return out, fmt.Errorf("cancel run %d: %w", res.RunID, res.Err)
		}
	}
	return out, nil
}
