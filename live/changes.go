package live

import (
	"context"
	"time"

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
//
// A sharded run sends no event of its own while its shards work (theirs go to its topic
// alone, see RunProgress): while the stream has such a run active, it re-reads the job's
// active runs every second (one read shared by the job's subscribers, see Flight), so
// that the run's summed progress moves here too.
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
		var refresh <-chan time.Time // ticks while a sharded run is active
		var ticker *time.Ticker
		defer func() {
			if ticker != nil {
				ticker.Stop()
			}
		}()
		followSharded := func() {
			for _, run := range sent {
				if run.ShardTotal > 0 {
					if ticker == nil {
						ticker = time.NewTicker(s.shardedRefresh)
						refresh = ticker.C
					}
					return
				}
			}
			if ticker != nil {
				ticker.Stop()
				ticker, refresh = nil, nil
			}
		}
		catchUp := func() bool {
			for _, run := range s.rereadRuns(ctx, job, sent) {
				if !emit(run) {
					return false
				}
			}
			followSharded()
			return true
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-refresh:
				if !catchUp() {
					return
				}
			case m, ok := <-sub.C():
				if !ok {
					return
				}
				if m.Resync {
					if !catchUp() {
						return
					}
					continue
				}
				// A shard is part of its run, never one of the job's runs (an instance of an
				// earlier version may still publish shards here).
				run, ok := decodeRun(m)
				if !ok || run.Shard != nil || (job != "" && run.JobName != job) {
					continue
				}
				if !emit(run) {
					return
				}
				followSharded()
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
