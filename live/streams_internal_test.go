package graph

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/baton-run/baton/pubsub"
	bt "github.com/baton-run/baton/runner/batontype"
)

// chanFeed is a feed whose events the test sends by hand, each one taken by the subscription
// before the send returns.
type chanFeed struct{ c chan pubsub.Message }

func (f chanFeed) subscribe(...string) feedSubscription { return f }
func (f chanFeed) C() <-chan pubsub.Message             { return f.c }
func (f chanFeed) Close()                               {}

func runEventMessage(t *testing.T, run bt.RunRecord, final bool) pubsub.Message {
	t.Helper()
	payload, err := json.Marshal(runMessage{V: runMessageVersion, Run: run, Final: final})
	if err != nil {
		t.Fatal(err)
	}
	return pubsub.Message{Topics: []string{runTopic(run.ID)}, Key: runTopic(run.ID), Final: final, Payload: payload}
}

// TestRunProgressLatestWins plays a client that stops reading while a run makes a hundred
// steps of progress and then finishes: the subscription keeps taking events (it never
// blocks the feed), and when the client reads again it gets at most one stale state and then
// the final one, not a backlog.
func TestRunProgressLatestWins(t *testing.T) {
	t.Parallel()
	const id = 42
	f := chanFeed{c: make(chan pubsub.Message)}
	r := &Resolver{
		log:  slog.New(slog.DiscardHandler),
		feed: f,
		runReads: newFlight(time.Millisecond, func(context.Context, int64) (*bt.RunRecord, error) {
			return &bt.RunRecord{ID: id, Status: bt.StatusRunning}, nil
		}),
		quiet: time.Hour,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := r.runProgress(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	next := func() *bt.RunRecord {
		t.Helper()
		select {
		case run, ok := <-ch:
			if !ok {
				t.Fatal("channel closed early")
			}
			return run
		case <-deadline:
			t.Fatal("no state from runProgress")
		}
		return nil
	}
	if snap := next(); snap.Processed != 0 || !snap.Status.Active() {
		t.Fatalf("snapshot %+v", snap)
	}

	feed := func(m pubsub.Message) {
		t.Helper()
		select {
		case f.c <- m:
		case <-deadline:
			t.Fatalf("runProgress stopped taking events (blocked on a client that does not read)")
		}
	}
	for i := int64(1); i <= 100; i++ {
		feed(runEventMessage(t, bt.RunRecord{ID: id, Status: bt.StatusRunning, Processed: i}, false))
	}
	feed(runEventMessage(t, bt.RunRecord{ID: id, Status: bt.StatusSucceeded, Processed: 100}, true))
	// Progress after the final state must not resurrect the run.
	feed(runEventMessage(t, bt.RunRecord{ID: id, Status: bt.StatusRunning, Processed: 101}, false))

	var got []*bt.RunRecord
	for run := range ch {
		got = append(got, run)
	}
	if len(got) == 0 || len(got) > 2 {
		t.Fatalf("after the client caught up it got %d states, want the final one after at most one stale one", len(got))
	}
	final := got[len(got)-1]
	if final.Status != bt.StatusSucceeded || final.Processed != 100 {
		t.Errorf("last state %+v, want the final SUCCEEDED at 100", final)
	}
	if len(got) == 2 && (got[0].Processed > final.Processed || !got[0].Status.Active()) {
		t.Errorf("states out of order: %+v then %+v", got[0], final)
	}
}
