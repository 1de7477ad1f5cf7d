package live

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// shardedRun is a RunReader of one sharded run and its shards, as the test sets them.
type shardedRun struct {
	mu     sync.Mutex
	run    bt.RunRecord
	shards []bt.RunRecord
	reads  int // reads of the shards
}

func (s *shardedRun) Get(_ context.Context, id int64) (*bt.RunRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sh := range s.shards {
		if sh.ID == id {
			return &sh, nil
		}
	}
	r := s.run
	return &r, nil
}

func (s *shardedRun) List(ctx context.Context, _ runner.RunFilter) ([]*bt.RunRecord, error) {
	r, _ := s.Get(ctx, s.run.ID)
	return []*bt.RunRecord{r}, nil
}

func (s *shardedRun) ByIDs(ctx context.Context, _ []int64) (map[int64]*bt.RunRecord, error) {
	r, _ := s.Get(ctx, s.run.ID)
	return map[int64]*bt.RunRecord{r.ID: r}, nil
}

func (s *shardedRun) Shards(context.Context, int64) ([]*bt.RunRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	out := make([]*bt.RunRecord, len(s.shards))
	for i := range s.shards {
		sh := s.shards[i]
		out[i] = &sh
	}
	return out, nil
}

func (s *shardedRun) set(f func(s *shardedRun)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// newShardedRun is run 100 with n shards (ids 101…), all PENDING.
func newShardedRun(n int) *shardedRun {
	s := &shardedRun{run: bt.RunRecord{ID: 100, JobName: "crawl", Status: bt.StatusRunning, ShardTotal: n}}
	for i := range n {
		s.shards = append(s.shards, shard(s.run.ID, i, bt.StatusPending, 0, 0))
	}
	return s
}

func shard(parent int64, i int, status bt.RunStatus, attempt int, processed int64) bt.RunRecord {
	total := int64(10)
	return bt.RunRecord{ID: parent + 1 + int64(i), JobName: "crawl", Status: status, Attempt: attempt,
		Processed: processed, Succeeded: processed, Total: &total, Instance: "node-a",
		HeartbeatAt: time.Unix(1_000_000+processed, 0),
		Shard:       &bt.ShardOf{RunID: parent, Key: string(rune('a' + i)), Index: i}}
}

// shardMessage is a shard's event as EventPublisher sends it: on its run's topic, keyed by the
// shard.
func shardMessage(t *testing.T, rec bt.RunRecord, final bool) pubsub.Message {
	t.Helper()
	m := runEventMessage(t, rec, final)
	m.Topics = []string{RunTopic(rec.Shard.RunID)}
	return m
}

// TestRunProgressSumsShardEvents follows a sharded run through its shards' events: each state
// carries every shard at its latest, the run's counters are their sums, a stale or foreign
// event changes nothing, a shard handed back (PENDING, next attempt) is taken, and the run's
// final event brings the shards as the database has them.
func TestRunProgressSumsShardEvents(t *testing.T) {
	t.Parallel()
	reader := newShardedRun(3)
	f := chanFeed{c: make(chan pubsub.Message)}
	s := NewStreams(f, reader, slog.New(slog.DiscardHandler))
	s.quiet = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.RunProgress(ctx, reader.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	next := func() *RunState {
		t.Helper()
		select {
		case st, ok := <-ch:
			if !ok {
				t.Fatal("channel closed early")
			}
			return st
		case <-deadline:
			t.Fatal("no state from runProgress")
		}
		return nil
	}
	send := func(m pubsub.Message) {
		t.Helper()
		select {
		case f.c <- m:
		case <-deadline:
			t.Fatal("runProgress stopped taking events")
		}
	}
	snap := next()
	if len(snap.Shards) != 3 || snap.Run.Processed != 0 || snap.Shards[0].Status != bt.StatusPending {
		t.Fatalf("snapshot: run %+v, %d shards", snap.Run, len(snap.Shards))
	}

	send(shardMessage(t, shard(100, 0, bt.StatusRunning, 0, 4), false))
	st := next()
	if st.Run.Processed != 4 || st.Shards[0].Processed != 4 || st.Shards[0].Status != bt.StatusRunning || *st.Run.Total != 30 {
		t.Fatalf("after shard a at 4: run processed %d total %v, shard a %+v", st.Run.Processed, st.Run.Total, st.Shards[0])
	}
	send(shardMessage(t, shard(100, 1, bt.StatusRunning, 0, 7), false))
	if st = next(); st.Run.Processed != 11 || st.Shards[1].Processed != 7 || st.Shards[0].Processed != 4 {
		t.Fatalf("after shard b at 7: run processed %d, shards %+v %+v", st.Run.Processed, st.Shards[0], st.Shards[1])
	}
	// Older news of shard a, and a shard of another run: nothing to send.
	send(shardMessage(t, shard(100, 0, bt.StatusRunning, 0, 2), false))
	other := shard(500, 0, bt.StatusRunning, 0, 9)
	send(shardMessage(t, other, false))
	// Shard a's holder died: it waits, PENDING, for its second attempt; its counters stay.
	send(shardMessage(t, shard(100, 0, bt.StatusPending, 1, 4), false))
	if st = next(); st.Shards[0].Status != bt.StatusPending || st.Shards[0].Attempt != 1 || st.Run.Processed != 11 {
		t.Fatalf("after shard a requeued: run processed %d, shard a %+v (a stale or foreign event sent?)", st.Run.Processed, st.Shards[0])
	}

	// The run ends: the database has every shard ended.
	reader.set(func(s *shardedRun) {
		for i := range s.shards {
			s.shards[i] = shard(100, i, bt.StatusSucceeded, 1, 10)
		}
		s.run.Status, s.run.Processed = bt.StatusSucceeded, 30
	})
	final := reader.run
	send(runEventMessage(t, final, true))
	st = next()
	if st.Run.Status != bt.StatusSucceeded || st.Run.Processed != 30 {
		t.Fatalf("final run %+v", st.Run)
	}
	for _, sh := range st.Shards {
		if sh.Status != bt.StatusSucceeded {
			t.Fatalf("final state has shard %s %s, want every shard as the database has it", sh.Shard.Key, sh.Status)
		}
	}
	if _, ok := <-ch; ok {
		t.Fatal("a state after the final one")
	}
}

// TestRunProgressReadsShardsOnPlanning: a run followed before it planned its shards gets them
// all with the event that says it did, without waiting for each shard's first event.
func TestRunProgressReadsShardsOnPlanning(t *testing.T) {
	t.Parallel()
	reader := newShardedRun(4)
	reader.run.ShardTotal = 0
	f := chanFeed{c: make(chan pubsub.Message)}
	s := NewStreams(f, reader, slog.New(slog.DiscardHandler))
	s.quiet = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.RunProgress(ctx, reader.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := <-ch; st.Shards != nil {
		t.Fatalf("an unplanned run with shards: %+v", st.Shards)
	}
	reader.set(func(s *shardedRun) { s.run.ShardTotal = 4 })
	f.c <- runEventMessage(t, reader.run, false)
	if st := <-ch; len(st.Shards) != 4 || st.Run.ShardTotal != 4 {
		t.Fatalf("planned: %d shards, shardTotal %d", len(st.Shards), st.Run.ShardTotal)
	}
}

// TestShardNewer orders a shard's states: attempts first, then its steps, then its progress.
func TestShardNewer(t *testing.T) {
	t.Parallel()
	s := func(status bt.RunStatus, attempt int, processed int64) *bt.RunRecord {
		r := shard(1, 0, status, attempt, processed)
		return &r
	}
	for _, tc := range []struct {
		name       string
		next, prev *bt.RunRecord
		want       bool
	}{
		{"first", s(bt.StatusPending, 0, 0), nil, true},
		{"claimed", s(bt.StatusStarting, 0, 0), s(bt.StatusPending, 0, 0), true},
		{"claim after activation", s(bt.StatusStarting, 0, 0), s(bt.StatusRunning, 0, 0), false},
		{"progress", s(bt.StatusRunning, 0, 5), s(bt.StatusRunning, 0, 4), true},
		{"progress back", s(bt.StatusRunning, 0, 3), s(bt.StatusRunning, 0, 4), false},
		{"same", s(bt.StatusRunning, 0, 4), s(bt.StatusRunning, 0, 4), false},
		{"requeued", s(bt.StatusPending, 1, 4), s(bt.StatusRunning, 0, 4), true},
		{"old attempt", s(bt.StatusRunning, 0, 9), s(bt.StatusPending, 1, 4), false},
		{"ended", s(bt.StatusSucceeded, 0, 10), s(bt.StatusRunning, 0, 4), true},
		{"after its end", s(bt.StatusRunning, 1, 10), s(bt.StatusFailed, 0, 4), false},
	} {
		if got := shardNewer(tc.next, tc.prev); got != tc.want {
			t.Errorf("%s: shardNewer = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRunChangesSkipShardsAndRefreshShardedRuns: a shard's event is no run of the job's, and a
// sharded run's summed progress reaches a job's stream by the stream's own re-reads.
func TestRunChangesSkipShardsAndRefreshShardedRuns(t *testing.T) {
	t.Parallel()
	reader := newShardedRun(2)
	f := chanFeed{c: make(chan pubsub.Message)}
	s := NewStreams(f, reader, slog.New(slog.DiscardHandler))
	s.shardedRefresh = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := RunChanges(ctx, s, "crawl", func(kind ChangeKind, run *bt.RunRecord) *bt.RunRecord { return run })
	f.c <- shardMessage(t, shard(100, 0, bt.StatusRunning, 0, 3), false) // an older instance's
	f.c <- runEventMessage(t, reader.run, false)
	if got := <-ch; got.ID != reader.run.ID {
		t.Fatalf("first change is of run %d, want the run %d (a shard sent as a run)", got.ID, reader.run.ID)
	}
	reader.set(func(s *shardedRun) { s.run.Processed = 12 })
	select {
	case got := <-ch:
		if got.ID != reader.run.ID || got.Processed != 12 {
			t.Fatalf("refreshed change %+v, want run %d at 12", got, reader.run.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sharded run's progress never reached the job's stream")
	}
}

// TestEventPublisherSendsShardsToTheirRun publishes through Redis: a shard's event reaches its
// run's topic and not the job's or every run's, where the run's own events go.
func TestEventPublisherSendsShardsToTheirRun(t *testing.T) {
	t.Parallel()
	client, env := testenv.Redis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := pubsub.NewHub(client, env, pubsub.HubOptions{})
	go hub.Run(ctx) //nolint:errcheck // ends with ctx
	pub := pubsub.NewPublisher(client, env, pubsub.PublisherOptions{})
	defer pub.Close(context.Background()) //nolint:errcheck
	runSub, jobSub := hub.Subscribe(RunTopic(100)), hub.Subscribe(JobTopic("crawl"), AllRunsTopic)
	defer runSub.Close()
	defer jobSub.Close()
	select {
	case <-hub.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the hub never subscribed to Redis")
	}

	e := NewEventPublisher(pub)
	e.RunChanged(runner.RunEvent{Run: shard(100, 2, bt.StatusRunning, 0, 5)})
	e.RunChanged(runner.RunEvent{Run: bt.RunRecord{ID: 100, JobName: "crawl", Status: bt.StatusSucceeded}, Final: true})
	read := func(sub *pubsub.Subscription) *bt.RunRecord {
		t.Helper()
		for {
			select {
			case m := <-sub.C():
				if m.Resync {
					continue
				}
				var msg runMessage
				if err := json.Unmarshal(m.Payload, &msg); err != nil {
					t.Fatal(err)
				}
				return &msg.Run
			case <-time.After(10 * time.Second):
				t.Fatal("no event")
			}
		}
	}
	if got := read(runSub); got.Shard == nil || got.Shard.Key != "c" || got.Processed != 5 {
		t.Fatalf("run topic's first event %+v, want shard c's", got)
	}
	if got := read(runSub); got.ID != 100 || got.Shard != nil {
		t.Fatalf("run topic's second event %+v, want the run's", got)
	}
	if got := read(jobSub); got.ID != 100 || got.Shard != nil {
		t.Fatalf("job topic's first event %+v, want the run's (a shard sent as one of the job's runs)", got)
	}
}
