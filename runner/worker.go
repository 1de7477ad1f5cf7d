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
	body := func(ctx context.Context) error { return run.job.Run(ctx, run) }
	if s := run.job.Info().Shards; s != nil && run.shard == nil {
		body = func(ctx context.Context) error { return r.shards.plan(ctx, run, s) }
	}
	run.e.Execute(body)
	switch {
	case run.shard != nil:
		r.shards.ended(context.Background(), run.e.Snapshot())
	case run.job.Info().Shards != nil && run.e.Snapshot().Status.Active():
		// Handed to its shards, or ended at once when every shard was done before: only this
		// worker can have ended it.
		r.shards.publishRun(context.Background(), run.ID(), true)
	}
}
