// Package runner runs Go jobs across many Baton instances sharing one PostgreSQL and one Redis,
// with exactly one active run per job, leases that prove progress, fencing that keeps a stale
// worker from writing anything, graceful cancel and pause at item boundaries, checkpoints to
// resume from, a per-target result ledger, and database-held cron schedules.
//
// A Go program registers jobs with a Runner and calls Runner.Run; see the package example and
// the README section "Write your own job".
package runner

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/pipeline"
)

// Re-exported so job authors need only this package.
type (
	// RunStatus is the lifecycle state of a run.
	RunStatus = bt.RunStatus
	// Trigger says why a run started.
	Trigger = bt.Trigger
	// Mode chooses where a run begins.
	Mode = bt.Mode
	// RiskLevel says how careful replays of a job must be.
	RiskLevel = bt.RiskLevel
	// LedgerState is the state of one target's step in the ledger.
	LedgerState = bt.LedgerState
	// RunRecord is a run as stored.
	RunRecord = bt.RunRecord
	// Downstream declares an outside system the job calls, with its default limits.
	Downstream = bt.Downstream
	// DownstreamLimits are a downstream's cluster-wide rate, concurrency and quota.
	DownstreamLimits = bt.DownstreamLimits
)

// Job is a unit of work registered with a Runner. Run is called on a worker goroutine with a
// Run handle; it returns nil when the work is done, or the error Check/Process gave it when the
// run was asked to stop.
type Job interface {
	Info() JobInfo
	Run(ctx context.Context, run *Run) error
}

// JobInfo is what a job declares about itself.
type JobInfo struct {
	// Name identifies the job cluster-wide; registering a name twice fails.
	Name        string
	Description string
	// Cron is the default schedule, used the first time the job is seen; afterwards the
	// schedule lives in job_settings and is edited at runtime. Empty means manual only.
	// Five fields, six fields (seconds first) and descriptors such as @daily are accepted.
	Cron string
	// Timezone of the cron, an IANA name; empty means UTC.
	Timezone string
	// Lease is how long a run may go without reaching a safe point; 0 means the runner's
	// DefaultLease. Operators can override it at runtime.
	Lease time.Duration
	// Risk is LOW when empty. HIGH-risk jobs need four-eyes approval to replay.
	Risk RiskLevel
	// Version of the job's code; a replay across versions needs approval.
	Version string
	// RetentionDays keeps ledger rows this long; 0 means 90 days (400 for HIGH risk).
	RetentionDays int
	// Retry governs TRANSIENT failures within a run.
	Retry RetryPolicy
	// StopConditions make a run stop itself when a rate crosses a threshold; nil means
	// DefaultStopConditions(), an empty slice disables them.
	StopConditions []StopCondition
	// SensitiveEvidence masks evidence refs at rest (a hint and a digest are kept).
	SensitiveEvidence bool
	// StallAfter raises the stalled-checkpoint and no-ledger-writes alarms when a running
	// run makes no progress for this long; 0 means 10 minutes.
	StallAfter time.Duration
	// ScheduledMode is the mode of scheduled fires; empty means RESTART (each fire starts a
	// new generation). RESUME suits jobs that continue one long walk fire after fire.
	ScheduledMode Mode
	// AutoResume is the default policy for continuing a run whose holder died, whose instance
	// shut down or whose database went away; nil means DefaultAutoResume(). Like the cron it
	// is used the first time the job is seen; afterwards it is edited at runtime
	// (JobService.SetAutoResume).
	AutoResume *AutoResumePolicy
	// Downstreams declares the outside systems the job's steps call (Item.Downstream), with
	// their default limits. The limits hold cluster-wide, for every job that names the
	// downstream; the first declaration seen is used, and afterwards operators change them at
	// runtime (DownstreamService.Update). A downstream an item names without any declaration
	// is unlimited until an operator sets limits.
	Downstreams []Downstream
	// Shards splits each run into shards that every instance of the cluster works at once,
	// each leased, fenced and checkpointed on its own (see Sharding); nil runs the job on one
	// slot. Run is then called once per shard, and Run.Shard says which.
	Shards *Sharding
}

// RetryPolicy is capped exponential backoff with full jitter for TRANSIENT failures.
type RetryPolicy struct {
	// MaxAttempts per target within one run, including the first; 0 means 3, 1 disables retry.
	MaxAttempts int
	// InitialBackoff before the second attempt; 0 means 100ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the backoff; 0 means 5s.
	MaxBackoff time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 3
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = 100 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 5 * time.Second
	}
	return p
}

type funcJob struct {
	info JobInfo
	run  func(ctx context.Context, run *Run) error
}

func (j funcJob) Info() JobInfo                           { return j.info }
func (j funcJob) Run(ctx context.Context, run *Run) error { return j.run(ctx, run) }

// NewJob returns a Job from its info and a run function.
func NewJob(info JobInfo, run func(ctx context.Context, run *Run) error) Job {
	return funcJob{info: info, run: run}
}

// Item is one unit of a run's work: a step applied to a target (see batontype.Item).
type Item = bt.Item

// Attempt is what an item's function receives: the idempotency key to pass to the outside
// system, the attempt number, and ways to record effect and evidence (SetEffectRef,
// SetEvidenceRef) and to make the job's own database writes in the item transaction (Tx).
type Attempt = pipeline.Attempt

// Constants re-exported so job authors need only this package.
const (
	RiskLow    = bt.RiskLow
	RiskMedium = bt.RiskMedium
	RiskHigh   = bt.RiskHigh

	ModeResume  = bt.ModeResume
	ModeRestart = bt.ModeRestart

	TriggerScheduled = bt.TriggerScheduled
	TriggerManual    = bt.TriggerManual
	TriggerReplay    = bt.TriggerReplay
)
