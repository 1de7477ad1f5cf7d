package runner

import (
	"context"
	"fmt"
	"sort"

	bt "github.com/baton-run/baton/runner/batontype"
)

// MaintenanceJobName is the built-in job that prunes expired ledger generations.
const MaintenanceJobName = "baton-maintenance"

// maintenanceJob prunes, for every job, the ledger generations older than the job's
// retention (job_settings.retention_days: 90 by default, 400 for HIGH risk). It runs through
// the runner itself, so it holds a lease, is cancellable and leaves a run with its counts.
type maintenanceJob struct {
	r    *Runner
	cron string
}

func (m maintenanceJob) Info() JobInfo {
	return JobInfo{Name: MaintenanceJobName, Description: "Prunes ledger generations past each job's retention.",
		Cron: m.cron, Version: "1", StopConditions: []StopCondition{}}
}

func (m maintenanceJob) Run(ctx context.Context, run *Run) error {
	jobs, err := m.r.store.Jobs(ctx, nil)
	if err != nil {
		return err
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].Name < jobs[j].Name })
	if err := run.SetTotal(ctx, int64(len(jobs))); err != nil {
		return err
	}
	for _, j := range jobs {
		name := j.Name
		err := run.Process(ctx, Item{Target: "job:" + name, Step: "prune"}, func(ctx context.Context, a *Attempt) error {
			n, err := m.r.store.PruneLedger(ctx, name)
			if err != nil {
				return err
			}
			a.SetEvidenceRef(fmt.Sprintf("pruned %d ledger rows", n))
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

var _ = bt.RiskLow
