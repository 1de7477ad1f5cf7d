package live

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
)

// ChangeKind classifies a run's new state against the last one a subscriber was sent.
type ChangeKind int

// The kinds of change, as RunChanges reports them.
const (
	RunStarted       ChangeKind = iota // first seen, nothing processed yet
	RunProgressed                      // still active, same status, new counters or message
	RunStatusChanged                   // still active, another status
	RunFinished                        // final
)

// changeKind classifies run's new state against prev, the last one sent.
func changeKind(run, prev *bt.RunRecord) ChangeKind {
	switch {
	case !run.Status.Active():
		return RunFinished
	case prev == nil && run.Processed == 0 && run.Failed == 0 && run.Skipped == 0:
		return RunStarted
	case prev != nil && prev.Status != run.Status:
		return RunStatusChanged
	}
	return RunProgressed
}

// RunChanges streams the changes of the runs of job (of every job when job is ""): each run
// that starts, changes status, progresses or finishes, as event makes it of the run's new
// state. It does not check that job exists.
func RunChanges[E any](ctx context.Context, s *Streams, job string, event func(kind ChangeKind, run *bt.RunRecord) E) <-chan E {
	topic := AllRunsTopic
	if job != "" {
		topic = JobTopic(job)
	}
	sub := s.feed.Subscribe(topic)
	ch := make(chan E, 1)
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
			select {
			case ch <- event(changeKind(run, prev), run):
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
					for _, run := range s.rereadRuns(ctx, job, sent) {
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
	return ch
}

// rereadRuns returns the active runs of job and the current state of the runs in tracked, for
// a stream of changes to catch up after a Resync.
func (s *Streams) rereadRuns(ctx context.Context, job string, tracked map[int64]*bt.RunRecord) []*bt.RunRecord {
	active, err := s.activeReads.Get(ctx, job)
	if err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "live: re-read active runs for subscription", "job", job, "err", err)
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
		runs, err := s.runs.ByIDs(ctx, gone)
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "live: re-read runs for subscription", "err", err)
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
