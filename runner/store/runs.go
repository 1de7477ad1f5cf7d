package store

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Runs holds the job_runs rows and their error rows.
type Runs interface {
	// InsertRun inserts a STARTING run holding a fresh lease. RESTART opens a new generation;
	// RESUME keeps the job's current one and starts from its last committed checkpoint. A
	// second active run of the job is ALREADY_RUNNING; a second run for one fire is
	// ErrFireTaken; a paused job is JOB_PAUSED, maintenance MAINTENANCE.
	InsertRun(ctx context.Context, n NewRun) (*bt.RunRecord, error)
	// Run returns one run, or NOT_FOUND.
	Run(ctx context.Context, id int64) (*bt.RunRecord, error)
	// Runs lists runs matching f, newest first.
	Runs(ctx context.Context, f RunFilter) ([]*bt.RunRecord, error)
	// RunsByIDs returns the runs with the given ids, keyed by id; unknown ids are absent.
	RunsByIDs(ctx context.Context, ids []int64) (map[int64]*bt.RunRecord, error)
	// RunsOfJobs returns each job's runs as Runs would list them with f (JobName aside).
	RunsOfJobs(ctx context.Context, jobs []string, f RunFilter) (map[string][]*bt.RunRecord, error)
	// ActiveRun returns the job's active run, or nil.
	ActiveRun(ctx context.Context, job string) (*bt.RunRecord, error)
	// ActiveRunsByJobs returns the active run of each named job that has one, by job name.
	ActiveRunsByJobs(ctx context.Context, jobs []string) (map[string]*bt.RunRecord, error)
	// LastRun returns the job's most recent run, or nil.
	LastRun(ctx context.Context, job string) (*bt.RunRecord, error)
	// LastRunsByJobs returns the most recent run of each named job that has one, by job name.
	LastRunsByJobs(ctx context.Context, jobs []string) (map[string]*bt.RunRecord, error)
	// GenerationRun returns the newest run of a job's generation, or nil when it has none.
	GenerationRun(ctx context.Context, job string, gen int64) (*bt.RunRecord, error)
	// LastRunsPausedBy returns the jobs, not paused themselves, whose latest run ended PAUSED
	// for reason: the runs to resume when that pause is lifted.
	LastRunsPausedBy(ctx context.Context, reason bt.StopReason) ([]string, error)
	// RequestCancel sets the cancel flag of an active run: NOT_ACTIVE for an ended one.
	RequestCancel(ctx context.Context, runID int64, actor string) (*bt.RunRecord, error)
	// RunEventsOfRuns returns each run's recorded events, oldest first: every event but lease
	// renewals, and the latest maxRenewals renewals (older ones are left out).
	RunEventsOfRuns(ctx context.Context, runIDs []int64, maxRenewals int) (map[int64][]RunEvent, error)
	// RunErrors lists a run's error rows in insertion order after afterID.
	RunErrors(ctx context.Context, runID, afterID int64, limit int) ([]bt.RunError, error)
	// RunErrorsOfRuns returns each run's error rows as RunErrors would.
	RunErrorsOfRuns(ctx context.Context, runIDs []int64, afterID int64, limit int) (map[int64][]bt.RunError, error)
	// RunErrorsMatching lists the error rows of a run that match f, as RunErrors does.
	RunErrorsMatching(ctx context.Context, runID int64, f RunErrorFilter, afterID int64, limit int) ([]bt.RunError, error)
	// CountRunErrors counts the error rows of a run that match f.
	CountRunErrors(ctx context.Context, runID int64, f RunErrorFilter) (int64, error)
}

// RunErrorFilter selects a run's error rows: by failure class (exact), and by a text that the
// item key or the message contains (case-insensitive, taken literally). Empty fields select all.
type RunErrorFilter struct {
	FailureClass string
	Search       string
}

// NewRun describes a run to insert.
type NewRun struct {
	JobName      string
	Trigger      bt.Trigger
	Mode         bt.Mode
	Actor        string
	Instance     string
	Token        string
	LeaseSeconds int
	JobVersion   string
	ScheduledFor *time.Time
	// Generation, when non-zero, pins the ledger generation (replays of an older run).
	Generation      int64
	ReplayRequestID *int64
	// FromStart makes a RESUME-mode run begin with no checkpoint (replays walk every target;
	// the ledger decides per target).
	FromStart bool
	// AutoResumeOf is the ended run an AUTO_RESUME run continues. The insert claims it in the
	// same transaction: a run already resumed, superseded by a later run of the job, or not
	// due yet is ErrResumeTaken and nothing is written.
	AutoResumeOf int64
	// TraceParent is the W3C traceparent of the run's span; "" for none.
	TraceParent string
	// RequestClaim, with ReplayRequestID, is the claim an execute holds on that APPROVED
	// request: the insert marks the request EXECUTED by the run in the same transaction, or,
	// when the claim no longer holds, writes nothing and returns ErrClaimLost.
	RequestClaim string
}

// DueResume is an ended run whose auto-resume is due.
type DueResume struct {
	RunID   int64
	JobName string
	Attempt int // the ended run's; its resume is attempt Attempt+1
	// TraceParent is the ended run's (RunRecord.TraceParent): its resume continues that trace.
	TraceParent string
}

// AutoResumes are the ended runs waiting to be continued by themselves.
type AutoResumes interface {
	// DueAutoResumes marks SUPERSEDED the pending auto-resumes of jobs that started another
	// run since, and returns up to limit of the due ones of jobs neither paused nor in
	// maintenance, earliest first, with how long until the next one not yet due is, by the
	// database clock (nil: none).
	DueAutoResumes(ctx context.Context, limit int) (due []DueResume, next *time.Duration, err error)
}

// RunFilter selects runs, newest first, by keyset on id. Every set field narrows the list.
type RunFilter struct {
	JobName  string
	Statuses []bt.RunStatus
	Triggers []bt.Trigger
	Instance string // "": any instance
	// StartedFrom and StartedBefore bound when the run was requested (started_at):
	// StartedFrom <= started_at < StartedBefore. nil: unbounded.
	StartedFrom, StartedBefore *time.Time
	Number                     int64 // the run number (its id); 0: any
	BeforeID                   int64 // 0: from the newest
	Limit                      int
}

// RunEventKind names a recorded event in a run's life between its start and its end.
type RunEventKind string

// Recorded run events.
const (
	EventLeaseRenewed    RunEventKind = "LEASE_RENEWED"
	EventPauseRequested  RunEventKind = "PAUSE_REQUESTED"
	EventPauseLifted     RunEventKind = "PAUSE_LIFTED"
	EventCancelRequested RunEventKind = "CANCEL_REQUESTED"
	EventStopCondition   RunEventKind = "STOP_CONDITION_TRIPPED"
)

// RunEvent is one recorded event of a run.
type RunEvent struct {
	ID     int64
	RunID  int64
	Kind   RunEventKind
	Shard  *string // nil: the whole run
	Actor  string
	Detail string
	At     time.Time
}

// Leases are a run's lease and the writes that only its holder makes. Each is fenced: a run
// whose lease is gone is refused with LEASE_LOST and nothing changes.
type Leases interface {
	// Activate moves a STARTING run to RUNNING and starts its lease afresh.
	Activate(ctx context.Context, f Fence) (LeaseState, bt.StopReason, error)
	// Renew extends the lease to a full lease from now.
	Renew(ctx context.Context, f Fence) (LeaseState, bt.StopReason, error)
	// Poll reads the lease state without writing.
	Poll(ctx context.Context, f Fence) (LeaseState, bt.StopReason, error)
	// SetTotal records how many items the run expects.
	SetTotal(ctx context.Context, f Fence, total int64) (LeaseState, bt.StopReason, error)
	// Finish ends an active run with status and turns its intents still IN_FLIGHT into
	// AMBIGUOUS_EFFECT, together.
	Finish(ctx context.Context, f Fence, status bt.RunStatus, reason bt.StopReason, message string) (*bt.RunRecord, error)
	// RecoverExpired fails every active run whose lease has run out and turns its IN_FLIGHT
	// ledger rows into AMBIGUOUS_EFFECT; a shard whose job's policy resumes it goes back to
	// PENDING instead. An intent notCalled (nil: none) says was never called is settled as it
	// says, with "not called" as its error. It also settles the sharded runs that are stopping
	// or whose shards have all ended, and returns them too (Settled).
	RecoverExpired(ctx context.Context, notCalled NotCalledFunc) ([]ExpiredRun, error)
}

// OpenIntent is an IN_FLIGHT ledger row of a run whose lease expired.
type OpenIntent struct {
	ID             int64 // the ledger row
	RunID          int64
	IdempotencyKey string
	Attempt        int
}

// NotCalledFunc returns, of intents, those whose calls are known never to have been made and
// never to be made, each with the state its target is settled as. An error, or an intent it
// leaves out, leaves the target in doubt.
type NotCalledFunc func(ctx context.Context, intents []OpenIntent) (map[int64]bt.LedgerState, error)

// ExpiredRun is a run the recoverer failed because its lease ran out.
type ExpiredRun struct {
	ID         int64
	JobName    string
	Token      string
	Generation int64
	Ambiguous  int64 // IN_FLIGHT targets turned AMBIGUOUS_EFFECT
	// ShardOf is the run of an expired shard (0: not a shard); Requeued says the shard went
	// back to PENDING for another instance to resume.
	ShardOf  int64
	Requeued bool
	// Settled marks a sharded run the pass settled (no lease of its own expired).
	Settled bool
	// TraceParent is the run's (RunRecord.TraceParent), for the recoverer's log lines.
	TraceParent string
}
