package runner

import (
	"context"
	"fmt"
	"sort"

	"github.com/baton-run/baton/runner/internal/maintenance"
)

// MaintenanceJobName is the built-in job that applies retention.
const MaintenanceJobName = "baton-maintenance"

// Default retention periods (Retention's zero values).
const (
	DefaultRunRetention           = maintenance.DefaultRunRetention
	DefaultRunErrorRetention      = maintenance.DefaultRunErrorRetention
	DefaultScheduleEventRetention = maintenance.DefaultScheduleEventRetention
	DefaultCallStatsRetention     = maintenance.DefaultCallStatsRetention
	DefaultAuditRetention         = maintenance.DefaultAuditRetention
)

// Retention is how long the maintenance job keeps each table's rows, by the database clock.
// Zero means the default; a negative period keeps the table's rows forever. The ledger's
// period is per job (job_settings.retention_days: 90 days, 400 for HIGH risk). Whatever the
// periods, retention never deletes what is still owed (see the fields' docs).
type Retention = maintenance.Retention

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
	pruner := maintenance.Pruner{Store: m.r.store, Periods: m.r.cfg.Retention}
	prune := func(fn func(context.Context) (string, error)) func(context.Context, *Attempt) error {
		return func(ctx context.Context, a *Attempt) error {
			evidence, err := fn(ctx)
			if err == nil {
				a.SetEvidenceRef(evidence)
			}
			return err
		}
	}
	// Each run prunes anew, whatever an earlier run of the generation did (a manual start
	// resumes the generation): the step names the run, so the ledger never skips it.
	step := fmt.Sprintf("prune:run-%d", run.ID())
	for _, j := range jobs {
		name := j.Name
		if err := run.Process(ctx, Item{Target: "job:" + name, Step: step}, prune(func(ctx context.Context) (string, error) {
			return pruner.PruneJob(ctx, run.fence, name)
		})); err != nil {
			return err
		}
	}
	return run.Process(ctx, Item{Target: "audit_log", Step: step}, prune(func(ctx context.Context) (string, error) {
		return pruner.PruneAudit(ctx, run.fence)
	}))
}
