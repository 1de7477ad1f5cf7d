package store

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Jobs holds the job_settings rows: one per job name, registered from the job's defaults and
// edited at runtime.
type Jobs interface {
	// EnsureJobs inserts each job's settings on first sight. An existing job keeps its
	// runtime-edited schedule; only its description, risk level and version follow the code.
	EnsureJobs(ctx context.Context, jobs []JobDefaults) error
	// Job returns one job's settings, or NOT_FOUND.
	Job(ctx context.Context, name string) (*bt.JobSettings, error)
	// Jobs returns the settings of the named jobs (all jobs when names is nil), by name.
	Jobs(ctx context.Context, names []string) ([]*bt.JobSettings, error)
	// JobsPage returns up to limit jobs by name, after the job named after ("" from the first).
	JobsPage(ctx context.Context, after string, limit int) ([]*bt.JobSettings, error)
	// SetPaused pauses or resumes a job. Pausing disables its schedule and asks its active run
	// to stop at the next boundary with status PAUSED; resuming clears both.
	SetPaused(ctx context.Context, job string, paused bool, actor string) (*bt.JobSettings, error)
	// SetAutoResume applies p to the job's auto-resume policy and returns the job.
	SetAutoResume(ctx context.Context, job string, p AutoResumePatch) (*bt.JobSettings, error)
	// SetMaxConcurrentShards sets the job's cap on concurrent shards (0: none) and returns the
	// job; the next claim of a shard of the job judges by it.
	SetMaxConcurrentShards(ctx context.Context, job string, n int, actor string) (*bt.JobSettings, error)
}

// JobDefaults is what a job declares about itself when registered.
type JobDefaults struct {
	Name          string
	Description   string
	Cron          string
	Timezone      string
	RiskLevel     bt.RiskLevel
	RetentionDays int
	JobVersion    string
	// AutoResume is the job's policy on first sight; afterwards it is edited at runtime. The
	// zero policy (MaxAttempts 0) stands for the schema's default: on, 3 attempts, 5 s, every
	// cause.
	AutoResume bt.AutoResumePolicy
	// MaxConcurrentShards is the job's cap on concurrent shards on first sight (0: none).
	MaxConcurrentShards int
}

// AutoResumePatch changes a job's auto-resume policy; nil fields stay as they are.
type AutoResumePatch struct {
	Enabled     *bool
	MaxAttempts *int
	Backoff     *time.Duration
	On          []bt.ResumeCause // nil: unchanged
	Actor       string
}

// SchedulePatch changes a job's schedule; nil fields stay as they are.
type SchedulePatch struct {
	Cron         *string
	Timezone     *string
	Enabled      *bool
	LeaseSeconds *int // 0 clears the override
	Actor        string
	// ExpectVersion, when non-zero, makes the update fail with CONFLICT if the row changed.
	ExpectVersion int64
}

// Schedules is the jobs' schedules: their edits, and the scheduler's view of them (due fires,
// claimed by compare-and-set).
type Schedules interface {
	// UpdateSchedule applies p and clears the next fire, which the scheduler computes again,
	// and wakes every scheduler.
	UpdateSchedule(ctx context.Context, name string, p SchedulePatch) (*bt.JobSettings, error)
	// ScheduleState reads what a scheduler pass needs, in one round trip, without reading the
	// jobs that are not due.
	ScheduleState(ctx context.Context) (*ScheduleState, error)
	// SetNextFires sets the next fire of each job whose next fire is still unset and whose
	// cron and timezone are still the ones the time was computed from. It returns how many
	// it set.
	SetNextFires(ctx context.Context, fires []NextFire) (int64, error)
	// ClaimFire moves a job's next fire from due to next by compare-and-set: of N schedulers
	// claiming at once, exactly one sees true.
	ClaimFire(ctx context.Context, name string, due, next time.Time) (bool, error)
	// RecordScheduleEvent records a fire that did not start a run.
	RecordScheduleEvent(ctx context.Context, job string, at time.Time, outcome, instance, detail string) error
	// RecordMissedFires records fires that came and went while no scheduler could claim them.
	RecordMissedFires(ctx context.Context, job string, at []time.Time, instance, detail string) error
}

// NextFire is a job's next fire time, computed from its cron and timezone as they were read.
type NextFire struct {
	Name, Cron, Timezone string
	At                   time.Time
}

// ScheduleState is one scheduler pass's view: the database clock, the maintenance switch, the
// jobs that need the scheduler now and the earliest fire after now.
type ScheduleState struct {
	Now         time.Time
	Maintenance bool
	// Jobs are the enabled, unpaused jobs with a cron whose next fire is due (Next <= Now) or
	// not computed yet (Next nil), of every instance: the caller skips those it does not run.
	Jobs []ScheduledJob
	// Earliest is the earliest next fire after Now of any enabled, unpaused job; nil if none.
	Earliest *time.Time
}

// ScheduledJob is an enabled, unpaused job with a cron.
type ScheduledJob struct {
	Name     string
	Cron     string
	Timezone string
	Next     *time.Time
}
