package runner

import (
	"context"
	"errors"

	bt "github.com/baton-run/baton/runner/batontype"
)

// MaintenanceResult lists what lifting maintenance restarted.
type MaintenanceResult struct {
	Resumed map[string]int64 // job → RESUME run id
	Failed  map[string]error // job → why its RESUME run did not start
}

// SetMaintenance turns the cluster-wide maintenance pause on (every active run stops at its
// next boundary with status PAUSED, no run may start) or off (schedules restart from now and
// every run paused by maintenance continues with a RESUME run).
func (r *Runner) SetMaintenance(ctx context.Context, on bool, actor string) (*MaintenanceResult, error) {
	err := r.store.SetMaintenance(ctx, on, actorOr(actor))
	r.audit(ctx, actor, "setMaintenance", "cluster", map[string]any{"paused": on}, err)
	if err != nil {
		return nil, err
	}
	r.sched.Wake()
	res := &MaintenanceResult{Resumed: map[string]int64{}, Failed: map[string]error{}}
	if on {
		return res, nil
	}
	jobs, err := r.store.LastRunsPausedBy(ctx, bt.StopMaintenance)
	if err != nil {
		return res, err
	}
	for _, job := range jobs {
		if _, ok := r.Job(job); !ok {
			continue
		}
		run, err := r.Start(ctx, StartParams{Job: job, Mode: bt.ModeResume, Actor: actorOr(actor), noAudit: true})
		if err != nil && !errors.Is(err, bt.ErrAlreadyRunning) {
			res.Failed[job] = err
			continue
		}
		if run != nil {
			res.Resumed[job] = run.ID
		}
	}
	return res, nil
}
