package graph

import (
	"context"
	"time"

	"github.com/baton-run/baton/graph/model"
	bt "github.com/baton-run/baton/runner/batontype"
)

// Subscriptions follow one pattern: subscribe to the feed first (so nothing published after
// the snapshot is missed), read a snapshot from the database, send it, then apply events. A
// Resync from the feed (Redis reconnected, the subscriber fell behind, or a poll tick) means
// re-reading the database. The goroutine that sends on the channel owns it: it closes it when
// it returns, and every send also waits on ctx.Done, so an abandoned subscription never
// leaks a goroutine.

// runProgress streams the states of run id until its final one.
//
// Latest wins: while gqlgen is still writing an earlier state to a slow client, newer states
// replace each other in pending, so the client gets the newest state next, never a backlog,
// and the feed's buffer is drained at the rate events arrive. The final state supersedes
// every other and is never replaced, so it always arrives.
func (r *Resolver) runProgress(ctx context.Context, id int64) (<-chan *bt.RunRecord, error) {
	sub := r.feed.subscribe(runTopic(id))
	snap, err := r.runReads.get(ctx, id)
	if err != nil {
		sub.Close()
		return nil, err
	}
	ch := make(chan *bt.RunRecord, 1)
	go func() {
		defer close(ch)
		defer sub.Close()
		var last *bt.RunRecord // the last state sent
		pending := snap        // the newest state not yet sent, if any
		quiet := time.NewTimer(r.quiet)
		defer quiet.Stop()
		for {
			var out chan<- *bt.RunRecord
			if pending != nil {
				out = ch
			}
			var run *bt.RunRecord
			select {
			case <-ctx.Done():
				return
			case out <- pending:
				last, pending = pending, nil
				if !last.Status.Active() {
					return
				}
				continue
			case m, ok := <-sub.C():
				if !ok {
					return // the feed stopped: the instance is shutting down
				}
				if m.Resync {
					run = r.reread(ctx, id)
				} else if decoded, ok := decodeRun(m); ok && decoded.ID == id {
					run = decoded
				}
			case <-quiet.C:
				run = r.reread(ctx, id)
			}
			quiet.Reset(r.quiet)
			newest := last
			if pending != nil {
				newest = pending
			}
			if run != nil && supersedes(run, newest) {
				pending = run
			}
		}
	}()
	return ch, nil
}

// reread reads a run afresh for a subscription, or returns nil (and logs) on failure: the
// subscription keeps going and tries again on the next event or tick.
func (r *Resolver) reread(ctx context.Context, id int64) *bt.RunRecord {
	run, err := r.runReads.get(ctx, id)
	if err != nil {
		if ctx.Err() == nil {
			r.log.WarnContext(ctx, "graph: re-read run for subscription", "run", id, "err", err)
		}
		return nil
	}
	return run
}

// runEvents streams the changes of the runs of job (of every job when job is ""): each run
// that starts, changes status, progresses or finishes.
func (r *Resolver) runEvents(ctx context.Context, job string) (<-chan *model.RunEvent, error) {
	topic := allRunsTopic
	if job != "" {
		if _, err := r.store.Job(ctx, job); err != nil {
			return nil, err
		}
		topic = jobTopic(job)
	}
	sub := r.feed.subscribe(topic)
	ch := make(chan *model.RunEvent, 1)
	go func() {
		defer close(ch)
		defer sub.Close()
		// The last state sent of each run not yet seen finished: what the next state of a run
		// is compared with, and which runs a re-read must look at.
		sent := map[int64]*bt.RunRecord{}
		emit := func(run *bt.RunRecord) bool {
			prev := sent[run.ID]
			if !supersedes(run, prev) {
				return true
			}
			ev := &model.RunEvent{Kind: eventKind(run, prev), Run: run}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return false
			}
			if run.Status.Active() {
				sent[run.ID] = run
			} else {
				delete(sent, run.ID)
			}
			return true
		}
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-sub.C():
				if !ok {
					return
				}
				if m.Resync {
					for _, run := range r.rereadRuns(ctx, job, sent) {
						if !emit(run) {
							return
						}
					}
					continue
				}
				run, ok := decodeRun(m)
				if !ok || (job != "" && run.JobName != job) {
					continue
				}
				if !emit(run) {
					return
				}
			}
		}
	}()
	return ch, nil
}

// rereadRuns returns the active runs of job and the current state of the runs in tracked, for
// a runEvents subscription to catch up after a Resync.
func (r *Resolver) rereadRuns(ctx context.Context, job string, tracked map[int64]*bt.RunRecord) []*bt.RunRecord {
	active, err := r.activeReads.get(ctx, job)
	if err != nil {
		if ctx.Err() == nil {
			r.log.WarnContext(ctx, "graph: re-read active runs for subscription", "job", job, "err", err)
		}
		return nil
	}
	out := append([]*bt.RunRecord(nil), active...)
	seen := make(map[int64]bool, len(active))
	for _, run := range active {
		seen[run.ID] = true
	}
	var gone []int64
	for id := range tracked {
		if !seen[id] {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		runs, err := r.store.RunsByIDs(ctx, gone)
		if err != nil {
			if ctx.Err() == nil {
				r.log.WarnContext(ctx, "graph: re-read runs for subscription", "err", err)
			}
			return out
		}
		for _, id := range gone {
			if run, ok := runs[id]; ok {
				out = append(out, run)
			}
		}
	}
	return out
}

// eventKind classifies a run's new state against the last one sent.
func eventKind(run, prev *bt.RunRecord) model.RunEventKind {
	switch {
	case !run.Status.Active():
		return model.RunEventKindFinished
	case prev == nil && run.Processed == 0 && run.Failed == 0 && run.Skipped == 0:
		return model.RunEventKindStarted
	case prev != nil && prev.Status != run.Status:
		return model.RunEventKindStatusChanged
	}
	return model.RunEventKindProgress
}

// alertRaised streams each alarm as it is raised.
func (r *Resolver) alertRaised(ctx context.Context) (<-chan *bt.Alert, error) {
	alerts, unsubscribe := r.alerts.subscribe()
	ch := make(chan *bt.Alert, 1)
	go func() {
		defer close(ch)
		defer unsubscribe()
		for {
			select {
			case <-ctx.Done():
				return
			case a := <-alerts:
				select {
				case ch <- &a:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return ch, nil
}
