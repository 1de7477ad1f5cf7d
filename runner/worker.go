package runner

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
)

// work runs one job on its slot: activate, run, finish, release — always freeing the slot and
// the lock, whatever the job does.
func (r *Runner) work(run *Run) {
	defer r.workers.Done()
	defer r.freeSlot()

	r.activeMu.Lock()
	r.active[run.ID()] = run
	draining := r.draining.Load()
	r.activeMu.Unlock()
	defer func() {
		r.activeMu.Lock()
		delete(r.active, run.ID())
		r.activeMu.Unlock()
	}()
	if draining {
		run.requestStop(bt.StopShutdown)
	}
	run.e.Execute(func(ctx context.Context) error { return run.job.Run(ctx, run) })
}
