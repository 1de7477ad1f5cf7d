package runner

import (
	"context"
	"fmt"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// HistoryWindow is how far back a job's history reaches, and so how wide its buckets are.
type HistoryWindow string

// The windows of a job's history.
const (
	// HistoryLast24Hours: 24 buckets of one hour.
	HistoryLast24Hours HistoryWindow = "LAST_24_HOURS"
	// HistoryLast7Days: 28 buckets of six hours.
	HistoryLast7Days HistoryWindow = "LAST_7_DAYS"
	// HistoryLast30Days: 30 buckets of one day (UTC days).
	HistoryLast30Days HistoryWindow = "LAST_30_DAYS"
)

// Buckets returns the width and number of the window's buckets, or false for a window that
// is none of the above.
func (w HistoryWindow) Buckets() (width time.Duration, n int, ok bool) {
	switch w {
	case HistoryLast24Hours:
		return time.Hour, 24, true
	case HistoryLast7Days:
		return 6 * time.Hour, 28, true
	case HistoryLast30Days:
		return 24 * time.Hour, 30, true
	}
	return 0, 0, false
}

// JobHistory is a job's history over a window: equal buckets, oldest first, aligned on
// multiples of their width since the Unix epoch (whole UTC hours, six-hour blocks, UTC days),
// the last one holding the database's now, so it is still filling.
type JobHistory struct {
	Job     string
	Window  HistoryWindow
	Width   time.Duration
	From    time.Time // start of the first bucket
	To      time.Time // end of the last bucket
	Now     time.Time // the database clock when the history was read
	Buckets []store.HistoryBucket
}

// History reads the history of job over window, by the database clock: NOT_FOUND for an
// unknown job, INVALID_INPUT for an unknown window.
func (s *JobService) History(ctx context.Context, job string, window HistoryWindow) (*JobHistory, error) {
	width, n, ok := window.Buckets()
	if !ok {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("history window %q is none of %s, %s, %s", window, HistoryLast24Hours, HistoryLast7Days, HistoryLast30Days)}
	}
	if _, err := s.r.store.Job(ctx, job); err != nil {
		return nil, err
	}
	now, err := s.r.store.Now(ctx)
	if err != nil {
		return nil, err
	}
	return s.historyAt(ctx, job, window, now, width, n)
}

func (s *JobService) historyAt(ctx context.Context, job string, window HistoryWindow, now time.Time, width time.Duration, n int) (*JobHistory, error) {
	to := now.UTC().Truncate(width).Add(width)
	from := to.Add(-time.Duration(n) * width)
	buckets, err := s.r.store.JobHistory(ctx, store.HistoryQuery{Job: job, Start: from, Width: width, Buckets: n})
	if err != nil {
		return nil, err
	}
	return &JobHistory{Job: job, Window: window, Width: width, From: from, To: to, Now: now, Buckets: buckets}, nil
}
