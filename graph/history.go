package graph

import (
	"cmp"
	"slices"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// historyStatuses is the order in which a bucket lists its runs: how runs end, then the
// statuses a run only holds while active (never history, listed for completeness).
var historyStatuses = []bt.RunStatus{bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled, bt.StatusPaused, bt.StatusRunning, bt.StatusStarting}

// jobHistory maps a job's history to the API, computing each bucket's rates from its sums: a
// rate over nothing is null, never zero, so a chart shows a gap rather than a false calm.
func jobHistory(h *runner.JobHistory) *model.JobHistory {
	out := &model.JobHistory{
		Window:         model.HistoryWindow(h.Window),
		BucketSeconds:  int(h.Width.Seconds()),
		From:           h.From,
		To:             h.To,
		Now:            h.Now,
		FailureClasses: []string{},
		Buckets:        make([]*model.HistoryBucket, 0, len(h.Buckets)),
	}
	ratio := func(n, of float64) *float64 {
		if of <= 0 {
			return nil
		}
		r := n / of
		return &r
	}
	for _, b := range h.Buckets {
		mb := &model.HistoryBucket{
			Start:               b.Start,
			End:                 b.Start.Add(h.Width),
			Runs:                []*model.HistoryStatusCount{},
			Processed:           int(b.Processed),
			ActiveSeconds:       b.Active.Seconds(),
			ItemsPerSecond:      ratio(float64(b.Processed), b.Active.Seconds()),
			Failures:            []*model.HistoryFailureCount{},
			Calls:               int(b.Calls),
			DownstreamErrors:    int(b.Downstream),
			Rejects:             int(b.Rejects),
			DownstreamErrorRate: ratio(float64(b.Downstream), float64(b.Calls)),
		}
		for _, st := range historyStatuses {
			if n := b.Runs[st]; n > 0 {
				mb.Runs = append(mb.Runs, &model.HistoryStatusCount{Status: st, Count: int(n)})
				mb.Ended += int(n)
			}
		}
		if b.DurationP50 != nil {
			p50 := b.DurationP50.Seconds()
			mb.DurationP50Seconds = &p50
		}
		if b.DurationP95 != nil {
			p95 := b.DurationP95.Seconds()
			mb.DurationP95Seconds = &p95
		}
		var failed int64
		for class, n := range b.Failures {
			mb.Failures = append(mb.Failures, &model.HistoryFailureCount{Class: class, Count: int(n), Rate: ratio(float64(n), float64(b.Processed))})
			failed += n
			if !slices.Contains(out.FailureClasses, class) {
				out.FailureClasses = append(out.FailureClasses, class)
			}
		}
		slices.SortFunc(mb.Failures, func(a, b *model.HistoryFailureCount) int { return cmp.Compare(a.Class, b.Class) })
		mb.FailureRate = ratio(float64(failed), float64(b.Processed))
		out.Buckets = append(out.Buckets, mb)
	}
	slices.Sort(out.FailureClasses)
	return out
}
