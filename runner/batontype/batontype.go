// Package batontype holds the lowest-level types of Baton — statuses, triggers, modes, ledger
// states and the records the store returns — so that the runner, its store and the API can all
// share them without import cycles.
package batontype

import (
	"errors"
	"fmt"
	"time"
)

// RunStatus is the lifecycle state of one run.
type RunStatus string

// Run statuses. STARTING and RUNNING are active: at most one active run exists per job.
// PENDING is a shard's only (see Shard): it waits for an instance with a free slot to claim it.
const (
	StatusPending   RunStatus = "PENDING"
	StatusStarting  RunStatus = "STARTING"
	StatusRunning   RunStatus = "RUNNING"
	StatusSucceeded RunStatus = "SUCCEEDED"
	StatusFailed    RunStatus = "FAILED"
	StatusCancelled RunStatus = "CANCELLED"
	StatusPaused    RunStatus = "PAUSED"
)

// Active reports whether s holds the job's lease.
func (s RunStatus) Active() bool { return s == StatusStarting || s == StatusRunning }

// Open reports whether a run or shard in status s still has work to do: PENDING, STARTING or
// RUNNING.
func (s RunStatus) Open() bool { return s == StatusPending || s.Active() }

// Trigger says why a run was started.
type Trigger string

// Triggers.
const (
	TriggerScheduled Trigger = "SCHEDULED"
	TriggerManual    Trigger = "MANUAL"
	TriggerReplay    Trigger = "REPLAY"
	TriggerReconcile Trigger = "RECONCILE"
	// TriggerAutoResume is a RESUME run the cluster started by itself after a run ended
	// because its holder died, its instance shut down or the database went away (the job's
	// AutoResumePolicy).
	TriggerAutoResume Trigger = "AUTO_RESUME"
)

// Mode chooses where a run begins.
type Mode string

// Modes. RESUME continues the job's current generation from its last committed checkpoint;
// RESTART opens a new generation with no checkpoint and an empty ledger scope.
const (
	ModeResume  Mode = "RESUME"
	ModeRestart Mode = "RESTART"
)

// RiskLevel says how careful replays of a job must be.
type RiskLevel string

// Risk levels. HIGH is for money, permissions, customer notifications and external sends.
const (
	RiskLow    RiskLevel = "LOW"
	RiskMedium RiskLevel = "MEDIUM"
	RiskHigh   RiskLevel = "HIGH"
)

// StopReason records why a run stopped before finishing its work.
type StopReason string

// Stop reasons.
const (
	StopCancelled     StopReason = "CANCELLED"
	StopPaused        StopReason = "PAUSED"
	StopMaintenance   StopReason = "MAINTENANCE"
	StopShutdown      StopReason = "SHUTDOWN"
	StopLeaseExpired  StopReason = "LEASE_EXPIRED"
	StopError         StopReason = "ERROR"
	StopPanic         StopReason = "PANIC"
	StopCondition     StopReason = "STOP_CONDITION"
	StopShutdownTimer StopReason = "SHUTDOWN_TIMEOUT"
	// StopDatabase: the run's database went away mid-run (connection lost, the server shut
	// down, a failover turned it read-only) and the run could record no more.
	StopDatabase StopReason = "DATABASE_UNAVAILABLE"
)

// ResumeCause is a way a run can end that auto-resume may cover.
type ResumeCause string

// Resume causes.
const (
	// ResumeLeaseExpired: the holder died or stalled and the recoverer ended the run
	// (stop reason LEASE_EXPIRED).
	ResumeLeaseExpired ResumeCause = "LEASE_EXPIRED"
	// ResumeShutdown: the holder's instance shut down mid-run (SHUTDOWN, SHUTDOWN_TIMEOUT).
	ResumeShutdown ResumeCause = "SHUTDOWN"
	// ResumeDatabase: the database went away mid-run (DATABASE_UNAVAILABLE), a failover.
	ResumeDatabase ResumeCause = "DATABASE"
)

// ResumeCauses lists every resume cause.
var ResumeCauses = []ResumeCause{ResumeLeaseExpired, ResumeShutdown, ResumeDatabase}

// AutoResumePolicy says when a run that ended without finishing continues by itself: after a
// run ends FAILED in one of the On ways, a RESUME run (trigger AUTO_RESUME) starts after
// Backoff × 2^(attempt−1) (capped at 15 minutes, or Backoff when longer), on any instance with
// a free slot, up to MaxAttempts automatic resumes in one chain; after the last, the
// AUTO_RESUME_EXHAUSTED alarm is raised. The ledger keeps a resume safe: CONFIRMED targets are
// skipped and AMBIGUOUS_EFFECT targets stay quarantined.
type AutoResumePolicy struct {
	Enabled     bool
	MaxAttempts int           // 1..100
	Backoff     time.Duration // 0..24h, whole seconds
	On          []ResumeCause
}

// Auto-resume outcomes of an ended run (RunRecord.AutoResumeOutcome).
const (
	AutoResumeResumed    = "RESUMED"    // AutoResumeRunID continues it
	AutoResumeExhausted  = "EXHAUSTED"  // it was the last attempt
	AutoResumeSuperseded = "SUPERSEDED" // a later run of the job came first
	AutoResumeOff        = "OFF"        // the policy does not cover how it ended
)

// LedgerState is the state of one target's step in the result ledger.
type LedgerState string

// Ledger states.
const (
	LedgerInFlight           LedgerState = "IN_FLIGHT"
	LedgerConfirmed          LedgerState = "CONFIRMED"
	LedgerTransient          LedgerState = "TRANSIENT"
	LedgerValidationRejected LedgerState = "VALIDATION_REJECTED"
	LedgerConflict           LedgerState = "CONFLICT"
	LedgerAmbiguous          LedgerState = "AMBIGUOUS_EFFECT"
	LedgerPolicyBlocked      LedgerState = "POLICY_BLOCKED"
	LedgerBugSuspected       LedgerState = "BUG_SUSPECTED"
	LedgerNotApplied         LedgerState = "NOT_APPLIED"
	LedgerSkipped            LedgerState = "SKIPPED"
)

// Failed reports whether s is a failure state (not confirmed, not in doubt, not skipped).
func (s LedgerState) Failed() bool {
	switch s {
	case LedgerTransient, LedgerValidationRejected, LedgerConflict, LedgerPolicyBlocked, LedgerBugSuspected:
		return true
	}
	return false
}

// Code classifies an error for callers: the API maps each to a user error code.
type Code string

// Error codes.
const (
	CodeNotFound         Code = "NOT_FOUND"
	CodeAlreadyRunning   Code = "ALREADY_RUNNING"
	CodeCapacityExceeded Code = "CAPACITY_EXCEEDED"
	CodeInvalidCron      Code = "INVALID_CRON"
	CodeInvalidTimezone  Code = "INVALID_TIMEZONE"
	CodeInvalidInput     Code = "INVALID_INPUT"
	CodeJobPaused        Code = "JOB_PAUSED"
	CodeMaintenance      Code = "MAINTENANCE"
	CodeNotActive        Code = "NOT_ACTIVE"
	CodeLeaseLost        Code = "LEASE_LOST"
	CodeStopped          Code = "STOPPED"
	CodeShuttingDown     Code = "SHUTTING_DOWN"
	CodeDuplicateJob     Code = "DUPLICATE_JOB"
	CodeConflict         Code = "CONFLICT"
	CodeApprovalRequired Code = "APPROVAL_REQUIRED"
	CodeReplayBlocked    Code = "REPLAY_BLOCKED"
	CodeSelfApproval     Code = "SELF_APPROVAL"
	CodeForbidden        Code = "FORBIDDEN"
	// CodeLedgerTransition refuses a ledger write the transition table forbids: a skip, a
	// failure or a second intent on a target that is CONFIRMED, AMBIGUOUS_EFFECT or IN_FLIGHT.
	CodeLedgerTransition Code = "LEDGER_TRANSITION_REFUSED"
)

// Error is Baton's one error type: a code for machines and a message for people.
// errors.Is matches two *Error values by code, so callers test against the sentinels below.
type Error struct {
	Code    Code
	Message string
	Field   string // the input field at fault, if any
	Err     error  // the cause, if any
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Errorf returns an *Error with code c.
func Errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// Truncate returns s cut to at most n bytes, as the messages a run, a ledger entry or a
// reconcile request stores are bounded.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// CodeOf returns the code of the first *Error in err's chain, or "" if none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Sentinels to test with errors.Is.
var (
	ErrNotFound         = &Error{Code: CodeNotFound, Message: "not found"}
	ErrAlreadyRunning   = &Error{Code: CodeAlreadyRunning, Message: "job is already running"}
	ErrCapacityExceeded = &Error{Code: CodeCapacityExceeded, Message: "no free worker slot"}
	ErrInvalidCron      = &Error{Code: CodeInvalidCron, Message: "invalid cron expression"}
	ErrInvalidTimezone  = &Error{Code: CodeInvalidTimezone, Message: "invalid timezone"}
	ErrInvalidInput     = &Error{Code: CodeInvalidInput, Message: "invalid input"}
	ErrJobPaused        = &Error{Code: CodeJobPaused, Message: "job is paused"}
	ErrMaintenance      = &Error{Code: CodeMaintenance, Message: "cluster is in maintenance"}
	ErrNotActive        = &Error{Code: CodeNotActive, Message: "run is not active"}
	ErrLeaseLost        = &Error{Code: CodeLeaseLost, Message: "lease lost: the run was fenced off"}
	ErrStopped          = &Error{Code: CodeStopped, Message: "run asked to stop"}
	ErrShuttingDown     = &Error{Code: CodeShuttingDown, Message: "instance is shutting down"}
	ErrDuplicateJob     = &Error{Code: CodeDuplicateJob, Message: "job name already registered"}
	ErrConflict         = &Error{Code: CodeConflict, Message: "changed concurrently"}
	ErrLedgerTransition = &Error{Code: CodeLedgerTransition, Message: "ledger transition refused"}
)

// RunRecord is one execution of a job as stored: the row of job_runs. (A job's live handle
// on its execution is runner.Run.)
type RunRecord struct {
	ID               int64
	JobName          string
	Status           RunStatus
	Trigger          Trigger
	Mode             Mode
	RequestedBy      string
	Instance         string
	LeaseSeconds     int
	LeaseUntil       time.Time
	HeartbeatAt      time.Time
	CancelRequested  bool
	CancelBy         string
	PauseReason      StopReason // PAUSED or MAINTENANCE while a pause is pending
	Generation       int64
	ResumedFrom      *int64
	ReplayRequestID  *int64
	ScheduledFor     *time.Time
	Checkpoint       string
	StartCheckpoint  string
	Total            *int64
	Processed        int64
	Succeeded        int64
	Failed           int64
	Skipped          int64
	Ambiguous        int64
	JobVersion       string
	StopReason       StopReason
	Message          string
	StartedAt        time.Time
	ActivatedAt      *time.Time
	FinishedAt       *time.Time
	LastProgressAt   time.Time
	LastCheckpointAt time.Time
	// GenerationStartedAt is when the first run of the generation started (database clock).
	GenerationStartedAt time.Time
	// Attempt counts the automatic resumes before this run in its chain: 0 for a run an
	// operator, the schedule or a replay started; n for the n-th AUTO_RESUME run.
	Attempt int
	// AutoResumeAt is when this ended run is due to be resumed automatically (nil: it is not).
	AutoResumeAt *time.Time
	// AutoResumeOutcome is what became of that: "" (due, or not covered at all), RESUMED,
	// EXHAUSTED, SUPERSEDED or OFF.
	AutoResumeOutcome string
	// AutoResumeRunID is the AUTO_RESUME run that continued this one.
	AutoResumeRunID *int64
	// ShardTotal is the number of shards of a sharded run once they are planned, 0 for a run
	// that is not sharded (or not planned yet). A sharded run's counters are its shards' sums.
	ShardTotal int
	// Shard is set on a shard's own record (the row of one shard of a sharded run).
	Shard *ShardOf
	// TraceParent is the W3C traceparent of the run's span, "" when the run was started
	// without tracing. A shard carries its run's: its spans are children of the run's.
	TraceParent string
}

// ShardOf says which shard of which run a record is.
type ShardOf struct {
	RunID int64  // the sharded run (the parent)
	Key   string // the shard's key: its checkpoint stream, unique within the run
	Index int    // its place in the run's plan, from 0
	Spec  string // what the shard covers, as the job's plan said (a key range, pages)
	Count int    // how many shards the run has
	// RunEnded is set on the record of a shard's end (Finish) when that end ended its run:
	// the one shard whose end settled the run.
	RunEnded bool
}

// Percent reports progress in [0,100], or -1 when the total is unknown.
func (r *RunRecord) Percent() float64 {
	if r.Total == nil || *r.Total <= 0 {
		if r.Status == StatusSucceeded {
			return 100
		}
		return -1
	}
	p := float64(r.Processed) / float64(*r.Total) * 100
	if p > 100 {
		p = 100
	}
	return p
}

// JobSettings is a job's runtime-editable configuration row.
type JobSettings struct {
	Name              string
	Description       string
	Cron              string
	Timezone          string
	Enabled           bool
	Paused            bool
	NextScheduledAt   *time.Time
	RiskLevel         RiskLevel
	LeaseSeconds      *int
	RetentionDays     int
	JobVersion        string
	CurrentGeneration int64
	Version           int64
	UpdatedAt         time.Time
	UpdatedBy         string
	AutoResume        AutoResumePolicy
	// MaxConcurrentShards caps how many shards of one of the job's sharded runs the cluster
	// works at once; 0: as many as there are free slots.
	MaxConcurrentShards int
}

// RunError is one failed item of a run.
type RunError struct {
	ID           int64
	RunID        int64
	ItemKey      string
	FailureClass string
	Message      string
	Attempt      int
	CreatedAt    time.Time
}

// ScheduleEvent records a scheduled fire that did not start a run.
type ScheduleEvent struct {
	ID           int64
	JobName      string
	ScheduledFor time.Time
	Outcome      string
	Instance     string
	Detail       string
	CreatedAt    time.Time
}

// LedgerEntry is one row of the result ledger.
type LedgerEntry struct {
	ID             int64
	JobName        string
	Generation     int64
	Target         string
	Step           string
	State          LedgerState
	Attempt        int
	IdempotencyKey string
	InputHash      string
	InputChanged   bool
	External       bool
	EffectRef      *string
	EvidenceRef    *string
	LastError      *string
	SameErrorCount int
	RunID          int64
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// ReplayScope says which targets of a generation a replay retries.
type ReplayScope string

// Replay scopes. Every scope skips CONFIRMED targets and leaves AMBIGUOUS ones quarantined.
const (
	// ScopeTransient retries TRANSIENT and NOT_APPLIED targets.
	ScopeTransient ReplayScope = "TRANSIENT"
	// ScopeFailed also retries VALIDATION_REJECTED, CONFLICT and POLICY_BLOCKED targets.
	ScopeFailed ReplayScope = "FAILED"
	// ScopeFull re-walks the whole generation; blocked while any target is AMBIGUOUS_EFFECT.
	ScopeFull ReplayScope = "FULL"
)

// States returns the ledger states a scope retries.
func (s ReplayScope) States() []LedgerState {
	switch s {
	case ScopeTransient:
		return []LedgerState{LedgerTransient, LedgerNotApplied}
	case ScopeFailed, ScopeFull:
		return []LedgerState{LedgerTransient, LedgerNotApplied, LedgerValidationRejected, LedgerConflict, LedgerPolicyBlocked}
	}
	return nil
}

// Valid reports whether s is a known scope.
func (s ReplayScope) Valid() bool { return s.States() != nil }

// ReplayKind says what an approved replay request runs.
type ReplayKind string

// Replay request kinds.
const (
	// KindReplay retries the targets of the request's scope in the source run's generation,
	// under their recorded idempotency keys.
	KindReplay ReplayKind = "REPLAY"
	// KindRestart starts a RESTART run: a new generation, every target called again under new
	// keys. Its scope is FULL.
	KindRestart ReplayKind = "RESTART"
	// KindSchedule applies a change to a HIGH-risk job's schedule that can make it fire: each
	// fire starts a run nobody starts by hand. It starts no run itself.
	KindSchedule ReplayKind = "SCHEDULE"
)

// ScheduleChange is the change a SCHEDULE request applies; a nil field stays as it is.
type ScheduleChange struct {
	Cron         *string `json:"cron,omitempty"`
	Timezone     *string `json:"timezone,omitempty"`
	Enabled      *bool   `json:"enabled,omitempty"`
	LeaseSeconds *int    `json:"leaseSeconds,omitempty"`
}

// ReplayStatus is a replay request's lifecycle state.
type ReplayStatus string

// Replay statuses.
const (
	ReplayPendingApproval ReplayStatus = "PENDING_APPROVAL"
	ReplayApproved        ReplayStatus = "APPROVED"
	ReplayRejected        ReplayStatus = "REJECTED"
	ReplayBlocked         ReplayStatus = "BLOCKED"
	ReplayExecuted        ReplayStatus = "EXECUTED"
)

// Verdict is a preflight check's result.
type Verdict string

// Verdicts.
const (
	VerdictOK    Verdict = "OK"
	VerdictWarn  Verdict = "WARN"
	VerdictBlock Verdict = "BLOCK"
)

// Check is one preflight or stop condition: its value, its threshold and the verdict.
type Check struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	Verdict   Verdict `json:"verdict"`
	Detail    string  `json:"detail"`
}

// Preflight is what a replay would do and whether it may: seed 003's replay_preflight.
type Preflight struct {
	JobName    string      `json:"jobName"`
	RunID      int64       `json:"runId"`
	Generation int64       `json:"generation"`
	Scope      ReplayScope `json:"scope"`
	// Kind is RESTART for the preflight of a RESTART (absent, meaning REPLAY, in older rows).
	Kind                  ReplayKind            `json:"kind,omitempty"`
	RiskLevel             RiskLevel             `json:"riskLevel"`
	Confirmed             int64                 `json:"confirmed"`
	FailedByClass         map[LedgerState]int64 `json:"failedByClass"`
	Ambiguous             int64                 `json:"ambiguous"`
	InFlight              int64                 `json:"inFlight"`
	TargetsInScope        int64                 `json:"targetsInScope"`
	FixQueue              int64                 `json:"fixQueue"`
	LastCheckpointAgeSecs *float64              `json:"lastCheckpointAgeSeconds"`
	DownstreamErrorRate   float64               `json:"downstreamErrorRate"`
	DownstreamCalls       int64                 `json:"downstreamCalls"`
	JobVersionChanged     bool                  `json:"jobVersionChanged"`
	RunJobVersion         string                `json:"runJobVersion"`
	CurrentJobVersion     string                `json:"currentJobVersion"`
	RequiresApproval      bool                  `json:"requiresApproval"`
	ApprovalReasons       []string              `json:"approvalReasons"`
	Blocked               bool                  `json:"blocked"`
	BlockingReasons       []string              `json:"blockingReasons"`
	Checks                []Check               `json:"checks"`
	ComputedAt            time.Time             `json:"computedAt"`
	// ActiveRunID is the job's active run when the preflight was computed, if it had one:
	// right after a replay executes, the replay's own run.
	ActiveRunID *int64 `json:"activeRunId,omitempty"`
	// TargetKeys are the selected targets of a replay of selected targets (nil: every target
	// of the scope); TargetsInScope then counts those of them the scope retries.
	TargetKeys []string `json:"targetKeys,omitempty"`
}

// ReplayRequest is a request to replay part of a run's generation, or (Kind RESTART) to
// restart the job in a new generation.
type ReplayRequest struct {
	ID          int64
	Kind        ReplayKind
	JobName     string
	SourceRunID int64
	Generation  int64
	Scope       ReplayScope
	// TargetKeys narrows a replay to these targets of its scope; nil retries every one.
	TargetKeys      []string
	Status          ReplayStatus
	Preflight       Preflight
	Reason          string
	CompensationRef *string
	RequestedBy     string
	// RequestedByTokenID and DecidedByTokenID are the api_tokens ids of the requester and the
	// decider: four-eyes compares identities by them. Nil for a request made or decided by
	// code, without a token.
	RequestedByTokenID *int64
	DecidedByTokenID   *int64
	DecidedBy          *string
	DecisionNote       *string
	ReplayRunID        *int64
	// ScheduleChange is what a SCHEDULE request applies once approved; nil for other kinds.
	ScheduleChange *ScheduleChange
	CreatedAt      time.Time
	DecidedAt      *time.Time
	ExecutedAt     *time.Time
	// ClaimedUntil is set while an execute holds the APPROVED request's claim: until then no
	// other execute may start its run. A claim that lapses (its claimer went away) can be taken.
	ClaimedUntil *time.Time
	// ReopenReason says why the request went back to PENDING_APPROVAL: judged again when it was
	// approved or executed, the job asked for more than the request had been judged for.
	ReopenReason *string
}

// AlertKind names a stuck or dangerous signal.
type AlertKind string

// Alert kinds (seed 003's stuck signals, plus ambiguous effects).
const (
	AlertHeartbeatMissed   AlertKind = "HEARTBEAT_MISSED"
	AlertCheckpointStalled AlertKind = "CHECKPOINT_STALLED"
	AlertTargetRetried     AlertKind = "TARGET_RETRIED"
	AlertDownstreamErrors  AlertKind = "DOWNSTREAM_ERRORS"
	AlertNoLedgerWrites    AlertKind = "NO_LEDGER_WRITES"
	AlertAmbiguousEffect   AlertKind = "AMBIGUOUS_EFFECT"
	// AlertAutoResumeExhausted: a job's latest run ended in a way auto-resume covers, after
	// its last attempt; nothing continues it until an operator does.
	AlertAutoResumeExhausted AlertKind = "AUTO_RESUME_EXHAUSTED"
	// AlertScheduledFireBlocked: a job's latest scheduled fire was a RESTART refused because
	// its current generation holds targets in doubt (BLOCKED_IN_DOUBT), and no run of the job
	// has started since: its schedule does nothing until they are settled.
	AlertScheduledFireBlocked AlertKind = "SCHEDULED_FIRE_BLOCKED"
)

// Alert is one active alarm. Its ID is stable while the condition lasts.
type Alert struct {
	ID       string
	Kind     AlertKind
	Severity string // WARNING or CRITICAL
	JobName  string
	RunID    *int64
	Target   *string
	Message  string
	Value    float64
	Since    time.Time

	// The alarm's episode as the cluster records it (alert_history): one per firing, shared
	// by every instance.
	EpisodeID     int64
	FiredAt       time.Time
	ResolvedAt    *time.Time // nil while active
	AckedBy       string     // "" until acknowledged
	AckedAt       *time.Time
	SilencedUntil *time.Time // set while a silence hides the alarm
	SilencedBy    string
}

// Silenced reports whether a silence hides the alarm.
func (a *Alert) Silenced() bool { return a.SilencedUntil != nil }

// AlertHistoryFilter narrows the alarm history. Zero fields match everything.
type AlertHistoryFilter struct {
	JobName  string
	Key      string // one alarm's episodes
	BeforeID int64  // keyset: episodes older than this id
	Limit    int
}

// AuditEntry is one recorded mutation.
type AuditEntry struct {
	ID        int64
	Actor     string
	Action    string
	Target    string
	Arguments map[string]any
	Outcome   string
	CreatedAt time.Time
}

// AuditTruncatedKey marks, with true, stored audit arguments that were cut to fit.
const AuditTruncatedKey = "_truncated"

// Truncated reports whether the entry's arguments were cut to fit when stored.
func (e *AuditEntry) Truncated() bool {
	t, _ := e.Arguments[AuditTruncatedKey].(bool)
	return t
}

// AuditFilter narrows the audit log. Zero fields match everything; Since and Until bound
// created_at (inclusive, exclusive).
type AuditFilter struct {
	Actor, Action, Target, Outcome string
	Since, Until                   *time.Time
	BeforeID                       int64 // keyset: entries older than this id
	Limit                          int
}
