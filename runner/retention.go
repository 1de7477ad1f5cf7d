package runner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/baton-run/baton/runner/postgres"
)

// MaintenanceJobName is the built-in job that applies retention.
const MaintenanceJobName = "baton-maintenance"

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

func (r Retention) withDefaults() Retention {
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

// pruneBatch bounds the rows one fenced prune transaction deletes, so that no transaction
// holds locks or a lease check for long.
const pruneBatch = 5000

// maintenanceJob applies retention: for every job, the ledger generations past the job's
// retention and the runs, run errors, schedule events and call statistics past their
// periods; then the audit log. It runs through the runner itself, so it holds a lease, every
// delete is fenced on that lease, it is cancellable and it leaves a run with its counts.
type maintenanceJob struct {
	r    *Runner
	cron string
}

func (m maintenanceJob) Info() JobInfo {
	return JobInfo{Name: MaintenanceJobName, Description: "Prunes ledger generations, runs, errors, schedule events, call statistics and audit rows past their retention.",
		Cron: m.cron, Version: "2", StopConditions: []StopCondition{}}
}

func (m maintenanceJob) Run(ctx context.Context, run *Run) error {
	jobs, err := m.r.store.Jobs(ctx, nil)
	if err != nil {
		return err
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].Name < jobs[j].Name })
	if err := run.SetTotal(ctx, int64(len(jobs))+1); err != nil {
		return err
	}
	ret := m.r.cfg.Retention
	// Each run prunes anew, whatever an earlier run of the generation did (a manual start
	// resumes the generation): the step names the run, so the ledger never skips it.
	step := fmt.Sprintf("prune:run-%d", run.ID())
	for _, j := range jobs {
		name := j.Name
		err := run.Process(ctx, Item{Target: "job:" + name, Step: step}, func(ctx context.Context, a *Attempt) error {
			n, err := m.r.store.PruneLedger(ctx, run.fence, name)
			if err != nil {
				return err
			}
			done := []string{fmt.Sprintf("%d ledger rows", n)}
			for _, t := range []struct {
				table postgres.PruneTable
				age   time.Duration
			}{{postgres.PruneRunErrors, ret.RunErrors}, {postgres.PruneScheduleEvents, ret.ScheduleEvents},
				{postgres.PruneCallStats, ret.CallStats}, {postgres.PruneRuns, ret.Runs}} {
				n, err := prune(ctx, m.r.store, run.fence, t.table, name, t.age)
				if err != nil {
					return err
				}
				done = append(done, fmt.Sprintf("%d %s", n, t.table))
			}
			a.SetEvidenceRef("pruned " + strings.Join(done, ", "))
			return nil
		})
		if err != nil {
			return err
		}
	}
	return run.Process(ctx, Item{Target: "audit_log", Step: step}, func(ctx context.Context, a *Attempt) error {
		n, err := prune(ctx, m.r.store, run.fence, postgres.PruneAuditLog, "", ret.AuditLog)
		if err != nil {
			return err
		}
		a.SetEvidenceRef(fmt.Sprintf("pruned %d audit rows", n))
		return nil
	})
}

// prune deletes table's rows older than age in fenced batches until none is due. A negative
// age keeps them all.
func prune(ctx context.Context, store *postgres.Store, f postgres.Fence, table postgres.PruneTable, job string, age time.Duration) (int64, error) {
	if age < 0 {
		return 0, nil
	}
	var total int64
	for {
		n, err := store.Prune(ctx, f, table, job, age, pruneBatch)
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
