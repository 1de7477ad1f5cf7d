package maintenance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/baton-run/baton/runner/store"
)

// Default retention periods (Retention's zero values).
const (
	DefaultRunRetention           = 90 * 24 * time.Hour
	DefaultRunErrorRetention      = 30 * 24 * time.Hour
	DefaultScheduleEventRetention = 30 * 24 * time.Hour
	DefaultCallStatsRetention     = 7 * 24 * time.Hour
	DefaultAuditRetention         = 400 * 24 * time.Hour
)

// Retention is how long the maintenance job keeps each table's rows, by the database clock.
// Zero means the default; a negative period keeps the table's rows forever. The ledger's
// period is per job (job_settings.retention_days: 90 days, 400 for HIGH risk).
//
// Whatever the periods, retention never deletes what is still owed: the current generation, a
// generation a PENDING_APPROVAL or APPROVED replay refers to or holding AMBIGUOUS_EFFECT or
// IN_FLIGHT targets, an active run, a job's last run, the last run of a generation the ledger
// still holds, or a run a replay request refers to.
type Retention struct {
	// Runs keeps ended runs (job_runs, and their errors with them) this long after they
	// ended; default 90 days.
	Runs time.Duration
	// RunErrors keeps a run's error rows (job_run_errors) this long; default 30 days.
	RunErrors time.Duration
	// ScheduleEvents keeps skipped and missed fires (job_schedule_events); default 30 days.
	ScheduleEvents time.Duration
	// CallStats keeps the per-minute call statistics (job_call_stats); default 7 days.
	CallStats time.Duration
	// AuditLog keeps audit rows (audit_log); default 400 days, so that a year's audit is
	// always there with a month to spare.
	AuditLog time.Duration
}

// WithDefaults returns r with each zero period set to its default.
func (r Retention) WithDefaults() Retention {
	for _, p := range []struct {
		d   *time.Duration
		def time.Duration
	}{{&r.Runs, DefaultRunRetention}, {&r.RunErrors, DefaultRunErrorRetention},
		{&r.ScheduleEvents, DefaultScheduleEventRetention}, {&r.CallStats, DefaultCallStatsRetention},
		{&r.AuditLog, DefaultAuditRetention}} {
		if *p.d == 0 {
			*p.d = p.def
		}
	}
	return r
}

// PruneStore deletes rows past their retention, each delete fenced on the maintenance run's
// lease.
type PruneStore interface {
	// PruneLedger deletes a job's ledger generations past the job's retention.
	PruneLedger(ctx context.Context, f store.Fence, job string) (int64, error)
	// Prune deletes up to limit rows of table (of job, where the table has one) older than
	// olderThan.
	Prune(ctx context.Context, f store.Fence, table store.PruneTable, job string, olderThan time.Duration, limit int) (int64, error)
}

// pruneBatch bounds the rows one fenced prune transaction deletes, so that no transaction
// holds locks or a lease check for long.
const pruneBatch = 5000

// Pruner applies retention. The maintenance job calls it once per job and once for the audit
// log, each call one item of its run, so every delete is fenced on the run's lease.
type Pruner struct {
	Store   PruneStore
	Periods Retention
}

// PruneJob deletes a job's ledger generations past the job's retention, then its run errors,
// schedule events, call statistics and runs past their periods. It returns what it deleted,
// as evidence for the item.
func (p *Pruner) PruneJob(ctx context.Context, f store.Fence, job string) (string, error) {
	n, err := p.Store.PruneLedger(ctx, f, job)
	if err != nil {
		return "", err
	}
	done := []string{fmt.Sprintf("%d ledger rows", n)}
	for _, t := range []struct {
		table store.PruneTable
		age   time.Duration
	}{{store.PruneRunErrors, p.Periods.RunErrors}, {store.PruneScheduleEvents, p.Periods.ScheduleEvents},
		{store.PruneCallStats, p.Periods.CallStats}, {store.PruneRuns, p.Periods.Runs}} {
		n, err := p.prune(ctx, f, t.table, job, t.age)
		if err != nil {
			return "", err
		}
		done = append(done, fmt.Sprintf("%d %s", n, t.table))
	}
	return "pruned " + strings.Join(done, ", "), nil
}

// PruneAudit deletes the audit rows, the alarm episodes resolved and the test deliveries sent
// or failed, past the audit period, and returns what it deleted.
func (p *Pruner) PruneAudit(ctx context.Context, f store.Fence) (string, error) {
	var n [3]int64
	for i, table := range []store.PruneTable{store.PruneAuditLog, store.PruneAlertHistory, store.PruneTestNotifications} {
		var err error
		if n[i], err = p.prune(ctx, f, table, "", p.Periods.AuditLog); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("pruned %d audit rows, %d alarm episodes and %d test deliveries", n[0], n[1], n[2]), nil
}

// prune deletes table's rows older than age in fenced batches until none is due. A negative
// age keeps them all.
func (p *Pruner) prune(ctx context.Context, f store.Fence, table store.PruneTable, job string, age time.Duration) (int64, error) {
	if age < 0 {
		return 0, nil
	}
	var total int64
	for {
		n, err := p.Store.Prune(ctx, f, table, job, age, pruneBatch)
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
