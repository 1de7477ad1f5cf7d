// Package store declares what the runner needs of its database, by concern, and the values
// those needs take and return. runner/postgres implements it; storetest is the conformance
// suite every implementation must pass.
//
// Every write a worker makes for a run takes a Fence: the implementation conditions it, in the
// same statement or transaction, on the run id, the run's lease token, status RUNNING and a
// lease that has not run out by the database clock at the moment of the write. A worker that
// lost its lease can change nothing.
package store

import (
	"context"
	"errors"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Store is everything the runner asks of its database.
type Store interface {
	Jobs
	Schedules
	Runs
	AutoResumes
	Leases
	Items
	Ledger
	Replays
	Reconciles
	Retention
	Audit
	Alerts
	CallStats
	History
	Cluster
	Downstreams
	Shards
	Notifications
}

// Fence identifies the lease a write must still hold.
type Fence struct {
	RunID int64
	Token string
}

// LeaseState is what every fenced write returns: how long the lease has left by the database
// clock, and the operator's requests, so the worker learns of them without another round trip.
type LeaseState struct {
	Remaining       time.Duration
	CancelRequested bool
	PauseRequested  bool
	Processed       int64
	Succeeded       int64
	Failed          int64
	Skipped         int64
	Ambiguous       int64
	Checkpoint      string
	Total           *int64
	// LeaseUntil and HeartbeatAt are the run row's after the write, by the database clock:
	// what the run's live events show, not what the worker's fencing judges by (Remaining).
	LeaseUntil  time.Time
	HeartbeatAt time.Time
}

// ErrFireTaken is InsertRun's refusal of a SCHEDULED run for an instant that already started
// one: the fire was claimed twice, and this claim is void.
var ErrFireTaken = errors.New("the fire already started a run")

// ErrResumeTaken is InsertRun's refusal of an AUTO_RESUME run whose ended run is no longer
// waiting for one: resumed already, superseded, or not due.
var ErrResumeTaken = errors.New("the run is no longer waiting to be resumed")

// Cluster is the state every instance shares: the database clock, the maintenance switch and
// the facts the alarms are computed from.
type Cluster interface {
	// Now returns the database clock.
	Now(ctx context.Context) (time.Time, error)
	// Maintenance reports whether the cluster is in maintenance.
	Maintenance(ctx context.Context) (bool, error)
	// SetMaintenance turns the cluster-wide maintenance pause on or off. On asks every active
	// run to stop at its next boundary with status PAUSED; off clears every job's next fire,
	// so schedules restart from now instead of replaying the fires missed.
	SetMaintenance(ctx context.Context, on bool, actor string) error
	// AlertFacts reads what the alarms need.
	AlertFacts(ctx context.Context) (*AlertRows, error)
}

// AlertRows are the raw facts the alarms are computed from.
type AlertRows struct {
	Now    time.Time
	Active []*bt.RunRecord
	// Shards are the shards of the active sharded runs that an instance holds (STARTING,
	// RUNNING): a sharded run's liveness is theirs.
	Shards     []*bt.RunRecord
	Retried    map[string]int64    // job → targets attempted 3+ times without success
	Ambiguous  map[string]int64    // job → targets in AMBIGUOUS_EFFECT across generations
	Downstream map[string][3]int64 // job → calls, downstream errors, rejects over 5 minutes
	// Exhausted: job → its latest run, when that run ended in a way auto-resume covers after
	// the policy's last attempt.
	Exhausted map[string]*bt.RunRecord
	// Blocked: job → its latest scheduled fire, when that fire was a RESTART blocked by targets
	// in doubt (BLOCKED_IN_DOUBT) and no run of the job has started since.
	Blocked map[string]BlockedFire
}

// BlockedFire is a scheduled fire refused by the RESTART gate.
type BlockedFire struct {
	ScheduledFor, At time.Time
	Detail           string
}
