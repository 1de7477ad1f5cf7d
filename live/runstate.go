package live

import (
	"context"
	"slices"

	"github.com/baton-run/baton/pubsub"
	bt "github.com/baton-run/baton/runner/batontype"
)

// RunState is one state of a run as RunProgress streams it. Its records are shared by every
// subscriber of the run: they must not be changed.
type RunState struct {
	// Run is the run. While a sharded run is open its counters are the sums of Shards', and its
	// heartbeat and progress times their latest, as the store's are of its shards' rows; once
	// it has ended they are the final sums the store recorded.
	Run *bt.RunRecord
	// Shards are a sharded run's shards in plan order, each in the latest state the stream has
	// seen of it; nil for a run that is not sharded, not planned yet, or is itself a shard.
	Shards []*bt.RunRecord
}

// runFollower folds the events of one run, and of its shards when it is sharded, into its
// states.
type runFollower struct {
	s     *Streams
	id    int64
	shard bool // id is a shard's: follow it alone, on its run's topic
}

// start subscribes to the run's topic and reads the snapshot. A shard's events go to its run's
// topic, which is only known once the shard is read: then the stream subscribes to that topic
// too and reads the shard again, directly, so that nothing published between the two is lost.
func (f *runFollower) start(ctx context.Context) (Subscription, *RunState, error) {
	sub := f.s.feed.Subscribe(RunTopic(f.id))
	st, err := f.read(ctx)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	if st.Run.Shard == nil {
		return sub, st, nil
	}
	sub.Close()
	f.shard = true
	sub = f.s.feed.Subscribe(RunTopic(st.Run.Shard.RunID))
	run, err := f.s.runs.Get(ctx, f.id)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	return sub, &RunState{Run: run}, nil
}

// read reads the run and, for a sharded run, its shards (both shared among the run's
// subscribers, see Flight).
func (f *runFollower) read(ctx context.Context) (*RunState, error) {
	run, err := f.s.runReads.Get(ctx, f.id)
	if err != nil {
		return nil, err
	}
	if run.ShardTotal == 0 || run.Shard != nil {
		return &RunState{Run: run}, nil
	}
	// An ended run's shards are read by this stream itself: a shared read may have started
	// before the run ended and hold its shards as they were then, and the final state is the
	// last one the stream sends.
	var shards []*bt.RunRecord
	if run.Status.Open() {
		shards, err = f.s.shardReads.Get(ctx, f.id)
	} else {
		shards, err = f.s.runs.Shards(ctx, f.id)
	}
	if err != nil {
		return nil, err
	}
	return &RunState{Run: withShardSums(run, shards), Shards: shards}, nil
}

// reread is the database's state when it is newer than cur (nil on failure, logged).
func (f *runFollower) reread(ctx context.Context, cur *RunState) *RunState {
	st := logged(ctx, f.s.log, "run", f.id, func() (*RunState, error) {
		if f.shard {
			run, err := f.s.runReads.Get(ctx, f.id)
			if err != nil {
				return nil, err
			}
			return &RunState{Run: run}, nil
		}
		return f.read(ctx)
	})
	if st == nil {
		return nil
	}
	return merge(cur, st)
}

// apply is the state after event m: a new state of the run itself, or of one of its shards.
func (f *runFollower) apply(ctx context.Context, cur *RunState, m pubsub.Message) *RunState {
	rec, ok := decodeRun(m)
	switch {
	case !ok:
		return nil
	case rec.ID == f.id && f.shard:
		if cur != nil && !shardNewer(rec, cur.Run) {
			return nil
		}
		return &RunState{Run: rec}
	case rec.ID == f.id:
		var shards []*bt.RunRecord
		if cur != nil {
			shards = cur.Shards
		}
		// Planned since the stream last read its shards: read them. Ended: read them as they are
		// now, past any shared read (an end settles the shards no instance held, and sends no
		// event for them).
		if rec.ShardTotal > 0 && (len(shards) != rec.ShardTotal || !rec.Status.Open()) {
			if fresh := f.shards(ctx, !rec.Status.Open()); fresh != nil {
				shards = fresh
			}
		}
		return merge(cur, &RunState{Run: rec, Shards: shards})
	case rec.Shard != nil && rec.Shard.RunID == f.id && !f.shard:
		if cur == nil || !cur.Run.Status.Open() {
			return nil
		}
		i := rec.Shard.Index
		if i < 0 || i >= len(cur.Shards) || cur.Shards[i].ID != rec.ID {
			// A shard the stream has not read yet (its run was planned after the snapshot).
			fresh := f.shards(ctx, false)
			if fresh == nil || i < 0 || i >= len(fresh) || fresh[i].ID != rec.ID {
				return nil
			}
			next := merge(cur, &RunState{Run: cur.Run, Shards: fresh})
			if next == nil {
				next = cur
			}
			if !shardNewer(rec, next.Shards[i]) {
				return next
			}
			cur = next
		} else if !shardNewer(rec, cur.Shards[i]) {
			return nil
		}
		shards := slices.Clone(cur.Shards)
		shards[i] = rec
		return &RunState{Run: withShardSums(cur.Run, shards), Shards: shards}
	}
	return nil
}

// shards reads the run's shards, or returns nil (logged) when that fails; shared with the run's
// other subscribers unless own.
func (f *runFollower) shards(ctx context.Context, own bool) []*bt.RunRecord {
	read := f.s.shardReads.Get
	if own {
		read = f.s.runs.Shards
	}
	shards, err := read(ctx, f.id)
	if err != nil && ctx.Err() == nil {
		f.s.log.WarnContext(ctx, "live: re-read the shards of a run for subscription", "id", f.id, "err", err)
	}
	return shards
}

// merge returns next as the state that follows cur, or nil when it says nothing newer. Each
// shard keeps the newer of its two states; an open run's counters are summed again from them,
// and a run that has ended is taken as next has it.
func merge(cur, next *RunState) *RunState {
	switch {
	case cur == nil:
		return next
	case !cur.Run.Status.Open():
		return nil // final is final
	case !next.Run.Status.Open():
		return next
	}
	changed := len(next.Shards) != len(cur.Shards)
	shards := next.Shards
	if !changed && len(shards) > 0 {
		shards = make([]*bt.RunRecord, len(next.Shards))
		for i, s := range next.Shards {
			if c := cur.Shards[i]; c.ID == s.ID && !shardNewer(s, c) {
				shards[i] = c
			} else {
				shards[i] = s
				changed = true
			}
		}
	}
	out := &RunState{Run: withShardSums(next.Run, shards), Shards: shards}
	if !changed && !supersedes(out.Run, cur.Run) {
		return nil
	}
	return out
}

// withShardSums returns run with the sums of shards' counters, and their latest heartbeat and
// progress, while it is open (run itself when it has no shards or has ended). A shard's total
// counts once known, as the store sums them.
func withShardSums(run *bt.RunRecord, shards []*bt.RunRecord) *bt.RunRecord {
	if len(shards) == 0 || !run.Status.Open() {
		return run
	}
	out := *run
	out.Processed, out.Succeeded, out.Failed, out.Skipped, out.Ambiguous = 0, 0, 0, 0, 0
	var total *int64
	for _, s := range shards {
		out.Processed += s.Processed
		out.Succeeded += s.Succeeded
		out.Failed += s.Failed
		out.Skipped += s.Skipped
		out.Ambiguous += s.Ambiguous
		if s.Total != nil {
			t := *s.Total
			if total != nil {
				t += *total
			}
			total = &t
		}
		if s.HeartbeatAt.After(out.HeartbeatAt) {
			out.HeartbeatAt = s.HeartbeatAt
		}
		if s.LastProgressAt.After(out.LastProgressAt) {
			out.LastProgressAt = s.LastProgressAt
		}
		if s.LastCheckpointAt.After(out.LastCheckpointAt) {
			out.LastCheckpointAt = s.LastCheckpointAt
		}
	}
	if total != nil {
		out.Total = total
	}
	return &out
}

// shardNewer reports whether next is a later state of a shard than prev. A shard may go back
// to PENDING when its holder dies (its attempt counts up) and be claimed again; it never leaves
// an end. Within one attempt it moves PENDING → STARTING → RUNNING, and its progress and
// heartbeat only forward.
func shardNewer(next, prev *bt.RunRecord) bool {
	switch {
	case prev == nil:
		return true
	case !prev.Status.Open():
		return false
	case !next.Status.Open():
		return true
	case next.Attempt != prev.Attempt:
		return next.Attempt > prev.Attempt
	case shardStep(next.Status) != shardStep(prev.Status):
		return shardStep(next.Status) > shardStep(prev.Status)
	case next.Processed < prev.Processed, next.HeartbeatAt.Before(prev.HeartbeatAt):
		return false
	}
	return !sameState(next, prev) || next.Instance != prev.Instance
}

// shardStep orders the open statuses of a shard within one attempt.
func shardStep(s bt.RunStatus) int {
	switch s {
	case bt.StatusPending:
		return 0
	case bt.StatusStarting:
		return 1
	}
	return 2
}
