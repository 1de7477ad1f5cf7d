package graph

import (
	"github.com/baton-run/baton/graph/model"
	bt "github.com/baton-run/baton/runner/batontype"
)

// positiveOrNil returns nil for a value that sets no limit (zero or less), as the schema
// spells "no limit".
func positiveOrNil[T int | int64 | float64](v T) *T {
	if v <= 0 {
		return nil
	}
	return &v
}

// limitBurst is the burst calls start with: null without a rate, and at least 1 with one
// (a burst of 0 means 1).
func limitBurst(l *bt.DownstreamLimits) *int {
	if l.RatePerSecond <= 0 {
		return nil
	}
	b := max(l.Burst, 1)
	return &b
}

// limitQuotaWindow is the window a quota counts over: null without a quota, HOUR when the
// quota names none.
func limitQuotaWindow(l *bt.DownstreamLimits) *bt.QuotaWindow {
	if l.Quota <= 0 {
		return nil
	}
	w := l.QuotaWindow
	if w == "" {
		w = bt.QuotaHour
	}
	return &w
}

// downstreamUpdate is the runner's update for the mutation's input: an omitted field stays
// nil (unchanged). The runner judges every value.
func downstreamUpdate(in model.UpdateDownstreamInput) bt.DownstreamUpdate {
	u := bt.DownstreamUpdate{
		Name:          in.Name,
		RatePerSecond: in.RatePerSecond,
		Burst:         in.Burst,
		Concurrency:   in.Concurrency,
		QuotaWindow:   in.QuotaWindow,
		Paused:        in.Paused,
		Clear:         in.Clear,
		Reason:        deref(in.Reason),
	}
	if in.Quota != nil {
		q := int64(*in.Quota)
		u.Quota = &q
	}
	return u
}
