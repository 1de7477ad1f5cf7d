package store

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// History aggregates a job's past runs into time buckets: what the job page charts. Every
// aggregate reads one job's rows of one window through an index, so its cost grows with the
// job's runs in the window, never with the table.
type History interface {
	// JobHistory aggregates the job's runs that ended in [q.Start, q.Start + q.Buckets×q.Width),
	// their error rows and the job's call statistics of that span, bucket by bucket. Every
	// bucket is present, empty ones with zero counts.
	JobHistory(ctx context.Context, q HistoryQuery) ([]HistoryBucket, error)
}

// HistoryQuery names a job and the buckets to aggregate its history into: Buckets buckets of
// Width each, the first starting at Start.
type HistoryQuery struct {
	Job     string
	Start   time.Time
	Width   time.Duration
	Buckets int
}

// HistoryBucket is what one bucket holds. A run belongs to the bucket in which it ended
// (finished_at), and brings its error rows with it; call statistics belong to the bucket of
// their minute.
type HistoryBucket struct {
	Start time.Time
	// Runs counts the runs that ended in the bucket, by their status.
	Runs map[bt.RunStatus]int64
	// DurationP50 and DurationP95 are percentiles (linear interpolation between the closest
	// ranks) of the ended runs' wall time, finished_at − started_at; nil without ended runs.
	DurationP50, DurationP95 *time.Duration
	// Processed sums the items processed by the runs that ended in the bucket and were
	// activated; Active sums those runs' active time, finished_at − activated_at.
	Processed int64
	Active    time.Duration
	// Failures counts the error rows (one per failed item) of the runs that ended in the
	// bucket, by failure class.
	Failures map[string]int64
	// Calls, Downstream and Rejects sum the job's external calls of the bucket's minutes: all
	// of them, those that failed downstream (5xx, 429, timeouts) and those rejected.
	Calls, Downstream, Rejects int64
}
