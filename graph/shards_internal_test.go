package graph

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/live"
	bt "github.com/baton-run/baton/runner/batontype"
)

// TestForwardStatesHoldsShardsUntilTheNextIsTaken: gqlgen resolves an event's Run.shards after it
// has taken the event's run record from the channel, so the shards the stream held for it must
// stay until gqlgen takes the next one, however many states come in meanwhile. Were they
// dropped before, Run.shards would read the database and show shards newer than the run's
// summed counters in the same event.
func TestForwardStatesHoldsShardsUntilTheNextIsTaken(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	states := make(chan *live.RunState)
	held := &streamShards{m: map[*bt.RunRecord][]*bt.RunRecord{}}
	out := forwardStates(ctx, states, held)
	state := func(processed int64) *live.RunState {
		shard := &bt.RunRecord{ID: 2, Processed: processed}
		return &live.RunState{Run: &bt.RunRecord{ID: 1, Processed: processed, ShardTotal: 1}, Shards: []*bt.RunRecord{shard}}
	}

	states <- state(1)
	first := <-out // taken, and being written out: its shards must stay
	if shards, ok := held.get(first); !ok || shards[0].Processed != 1 {
		t.Fatalf("the shards of the event taken: %v, %v", shards, ok)
	}
	go func() {
		for n := int64(2); n <= 3; n++ {
			select {
			case states <- state(n):
			case <-ctx.Done():
				return
			}
		}
	}()
	// The states that follow arrive while the first event is still being written; watch its
	// shards for a while.
	watch := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(watch) {
		if _, ok := held.get(first); !ok {
			t.Fatal("the shards of an event were dropped before gqlgen took the next one")
		}
		time.Sleep(time.Millisecond)
	}
	second := <-out
	if second.Processed < 2 {
		t.Fatalf("the next event is at %d, want a later state", second.Processed)
	}
	// Taking the next event is gqlgen's word that the first one is written: its shards go.
	deadline := time.Now().Add(10 * time.Second)
	for _, ok := held.get(first); ok; _, ok = held.get(first) {
		if time.Now().After(deadline) {
			t.Fatal("the shards of a written event are never dropped")
		}
		time.Sleep(time.Millisecond)
	}
	if shards, ok := held.get(second); !ok || shards[0].Processed != second.Processed {
		t.Fatalf("the shards of the event taken second: %v, %v", shards, ok)
	}
}
