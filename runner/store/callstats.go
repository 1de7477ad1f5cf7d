package store

import (
	"context"
	"time"
)

// CallStats are the outcomes of runs' external calls per job and minute: the downstream error
// rate of preflight, stop conditions and alarms, without scanning the ledger.
type CallStats interface {
	// AddCallStats adds a run's call outcomes to its job's minute buckets, fenced on the run's
	// lease: a run that lost it writes nothing and gets LEASE_LOST. A shard's outcomes are also
	// added to its run's seconds, and the run's seconds within lookback from before this write
	// come back, each with its age (counts the whole run's stop conditions judge); nil for a
	// run that is not a shard.
	AddCallStats(ctx context.Context, f Fence, counts []CallCounts, lookback time.Duration) ([]CallCounts, error)
	// CallStats sums a job's call outcomes over the last window, by the database clock.
	CallStats(ctx context.Context, job string, window time.Duration) (calls, downstream, rejects int64, err error)
}

// CallCounts are the outcomes of a run's external calls made at about the same moment. Age is
// how long before the write they were made, as the instance measured it: a duration, which a
// skewed instance clock measures as well as a right one, where a timestamp from that clock
// would land in the wrong minute of the database's.
type CallCounts struct {
	Age time.Duration
	// Calls are the external calls, Downstream those that failed downstream (TRANSIENT or in
	// doubt), Rejects every call rejected (VALIDATION_REJECTED), All every call.
	Calls, Downstream, Rejects, All int64
}
