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
	c := &changeStream[E]{s: s, job: job, event: event, ch: make(chan E, 1), sent: map[int64]*bt.RunRecord{}}
	sub := s.feed.Subscribe(topic)
	go func() {
		defer close(c.ch)
		defer sub.Close()
		defer c.stopRefresh()
		c.loop(ctx, sub)
	}()
	return c.ch
}

// changeStream is one RunChanges stream, owned by its goroutine.
type changeStream[E any] struct {
	s     *Streams
	job   string
	event func(kind ChangeKind, run *bt.RunRecord) E
	ch    chan E
	// sent is the last state sent of each run not yet seen finished: what the next state of a
	// run is compared with, and which runs a re-read must look at.
	sent    map[int64]*bt.RunRecord
	ticker  *time.Ticker     // ticks while a sharded run is active
	refresh <-chan time.Time // its channel, nil otherwise
}

func (c *changeStream[E]) loop(ctx context.Context, sub Subscription) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.refresh:
			if !c.catchUp(ctx) {
				return
			}
		case m, ok := <-sub.C():
			if !ok {
				return
			}
			if m.Resync {
				if !c.catchUp(ctx) {
					return
				}
				continue
			}
			// A shard is part of its run, never one of the job's runs (an instance of an
			// earlier version may still publish shards here).
			run, ok := decodeRun(m)
			if !ok || run.Shard != nil || (c.job != "" && run.JobName != c.job) {
				continue
			}
			if !c.emit(ctx, run) {
				return
			}
			c.followSharded()
		}
	}
}

// emit sends run's change unless it is not newer than what was sent; false when ctx ended.
func (c *changeStream[E]) emit(ctx context.Context, run *bt.RunRecord) bool {
	prev := c.sent[run.ID]
	if !supersedes(run, prev) {
		return true
	}
	select {
	case c.ch <- c.event(changeKind(run, prev), run):
	case <-ctx.Done():
		return false
	}
	if run.Status.Active() {
		c.sent[run.ID] = run
	} else {
		delete(c.sent, run.ID)
	}
	return true
}

// followSharded ticks the re-reads while a sharded run is among the active ones, and stops
// them when none is.
func (c *changeStream[E]) followSharded() {
	for _, run := range c.sent {
		if run.ShardTotal > 0 {
			if c.ticker == nil {
				c.ticker = time.NewTicker(c.s.shardedRefresh)
				c.refresh = c.ticker.C
			}
			return
		}
	}
	c.stopRefresh()
}

func (c *changeStream[E]) stopRefresh() {
	if c.ticker != nil {
		c.ticker.Stop()
		c.ticker, c.refresh = nil, nil
	}
}

// catchUp re-reads the job's active runs and the tracked ones and sends what changed.
func (c *changeStream[E]) catchUp(ctx context.Context) bool {
	for _, run := range c.s.rereadRuns(ctx, c.job, c.sent) {
		if !c.emit(ctx, run) {
			return false
		}
	}
	c.followSharded()
	return true
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
