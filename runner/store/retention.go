package store

import (
	"context"
	"time"
)

// Retention deletes only what nothing still owes, each delete fenced on the maintenance run's
// lease and judging ages by the database clock.
type Retention interface {
	// PruneLedger deletes the ledger rows, counters and checkpoints of the job's generations
	// past its retention that nothing still owes, whole generations at a time, and returns
	// the ledger rows deleted.
	PruneLedger(ctx context.Context, f Fence, job string) (int64, error)
	// Prune deletes up to limit rows of table older than olderThan (of job, where the table
	// has jobs) and returns how many: fewer than limit means nothing more is due.
	Prune(ctx context.Context, f Fence, table PruneTable, job string, olderThan time.Duration, limit int) (int64, error)
}

// PruneTable names a table retention prunes by age.
type PruneTable string

// The tables pruned by age, besides the ledger.
const (
	// PruneRuns deletes ended runs (with their errors). It keeps the job's last run, the
	// last run of the current generation and of every generation the ledger still holds (a
	// replay is requested through it, a RESUME resumes from it), every run a replay request
	// or a checkpoint or a schedule event refers to, and the runs a kept run resumed from.
	PruneRuns PruneTable = "job_runs"
	// PruneRunErrors deletes the error rows of ended runs, but not of runs a PENDING_APPROVAL
	// or APPROVED replay refers to (the approver reads them).
	PruneRunErrors PruneTable = "job_run_errors"
	// PruneScheduleEvents deletes the job's skipped and missed fires.
	PruneScheduleEvents PruneTable = "job_schedule_events"
	// PruneCallStats deletes the job's per-minute call statistics.
	PruneCallStats PruneTable = "job_call_stats"
	// PruneAuditLog deletes audit rows (of every job: the job name is ignored).
	PruneAuditLog PruneTable = "audit_log"
	// PruneAlertHistory deletes resolved alarm episodes, by when they resolved (the job name is
	// ignored); an active episode is never deleted.
	PruneAlertHistory PruneTable = "alert_history"
	// PruneTestNotifications deletes test deliveries (kind TEST) sent or failed before the
	// period (the job name is ignored); a pending one is never deleted. An episode's own
	// deliveries go with the episode.
	PruneTestNotifications PruneTable = "notification_outbox"
)
