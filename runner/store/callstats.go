package store

import (
	"context"
	"time"
)

// CallStats are the outcomes of runs' external calls per job and minute: the downstream error
// rate of preflight, stop conditions and alarms, without scanning the ledger.
type CallStats interface {
	// AddCallStats adds a run's call outcomes to its job's minute buckets, fenced on the run's
	// lease: a run that lost it writes nothing and gets LEASE_LOST.
	AddCallStats(ctx context.Context, f Fence, counts []CallCounts) error
	// CallStats sums a job's call outcomes over the last window, by the database clock.
	CallStats(ctx context.Context, job string, window time.Duration) (calls, downstream, rejects int64, err error)
}

// CallCounts are the outcomes of a run's external calls made at about the same moment. Age is
// how long before the write they were made, as the instance measured it: a duration, which a
// skewed instance clock measures as well as a right one, where a timestamp from that clock
// would land in the wrong minute of the database's.
type CallCounts struct {
	Age                        time.Duration
	Calls, Downstream, Rejects int64
}
