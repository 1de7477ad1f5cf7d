package live

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// chanFeed is a feed whose events the test sends by hand, each one taken by the subscription
// before the send returns.
type chanFeed struct{ c chan pubsub.Message }

func (f chanFeed) Subscribe(...string) Subscription { return f }
func (f chanFeed) C() <-chan pubsub.Message         { return f.c }
func (f chanFeed) Close()                           {}

// oneRun is a RunReader of one run, always in the state run.
type oneRun struct{ run bt.RunRecord }

func (o oneRun) Get(context.Context, int64) (*bt.RunRecord, error) { r := o.run; return &r, nil }
func (o oneRun) List(context.Context, runner.RunFilter) ([]*bt.RunRecord, error) {
	r := o.run
	return []*bt.RunRecord{&r}, nil
}
func (o oneRun) ByIDs(context.Context, []int64) (map[int64]*bt.RunRecord, error) {
	r := o.run
	return map[int64]*bt.RunRecord{r.ID: &r}, nil
}

func (o oneRun) Shards(context.Context, int64) ([]*bt.RunRecord, error) { return nil, nil }

func runEventMessage(t *testing.T, run bt.RunRecord, final bool) pubsub.Message {
	t.Helper()
	payload, err := json.Marshal(runMessage{V: runMessageVersion, Run: run, Final: final})
	if err != nil {
		t.Fatal(err)
	}
	return pubsub.Message{Topics: []string{RunTopic(run.ID)}, Key: RunTopic(run.ID), Final: final, Payload: payload}
}

// TestRunProgressLatestWins plays a client that stops reading while a run makes a hundred
// steps of progress and then finishes: the subscription keeps taking events (it never
// blocks the feed), and when the client reads again it gets at most one stale state and then
// the final one, not a backlog.
func TestRunProgressLatestWins(t *testing.T) {
	t.Parallel()
	const id = 42
	f := chanFeed{c: make(chan pubsub.Message)}
	s := NewStreams(f, oneRun{bt.RunRecord{ID: id, Status: bt.StatusRunning}}, slog.New(slog.DiscardHandler))
	s.quiet = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := s.RunProgress(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	next := func() *bt.RunRecord {
		t.Helper()
		select {
		case st, ok := <-ch:
			if !ok {
				t.Fatal("channel closed early")
			}
			return st.Run
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
	for st := range ch {
		got = append(got, st.Run)
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
