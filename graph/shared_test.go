package graph_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// sharedInstance is an instance with a Hub whose shared subscription executions are counted.
func sharedInstance(b *bundle, jobs ...runner.Job) (*instance, *graph.LiveStats) {
	stats := new(graph.LiveStats)
	i := b.instance(instanceOpts{jobs: jobs, hub: true, graph: func(c *httpapi.Config) { c.GraphQL.LiveStats = stats }})
	return i, stats
}

// subscriber is one WebSocket client subscribed to a run's progress, and what it received.
type subscriber struct {
	w        *wsConn
	id       string // the subscription's id, chosen by the client
	received int
	last     progressEvent
}

func newSubscriber(t *testing.T, i *instance, token, id, run string) *subscriber {
	t.Helper()
	w, _, err := i.dialWS(t, protoTransportWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.init(map[string]any{"authorization": "Bearer " + token}); err != nil {
		t.Fatalf("connection_init refused: %v", err)
	}
	w.subscribe(id, progressSubscription, map[string]any{"id": run})
	s := &subscriber{w: w, id: id}
	s.read(t)
	return s
}

// read takes the subscription's next state.
func (s *subscriber) read(t *testing.T) {
	t.Helper()
	s.last = decodeProgress(t, s.w.next(s.id, 10*time.Second))
	s.received++
}

// until reads states until the run has processed n items and has status (any when "").
func (s *subscriber) until(t *testing.T, n int, status string) {
	t.Helper()
	for s.last.RunProgress.Progress.Processed < n || (status != "" && s.last.RunProgress.Status != status) {
		s.read(t)
	}
}

// TestSharedSubscriptionRunsOncePerEvent subscribes five clients to one run's progress with the
// same document and variables — different tokens of one role, different subscription ids —
// and checks that one execution serves them all, each event executed once, that a subscriber
// who unsubscribes or disconnects disturbs no other, and that every remaining subscriber gets
// the final state and the end of the stream.
func TestSharedSubscriptionRunsOncePerEvent(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	const items = 4
	i, stats := sharedInstance(b, &gatedJob{name: "shared", n: items, gate: gate})
	t.Cleanup(func() { close(gate) })
	run := i.startJob(t, b.token(model.RoleOperator), "shared")

	ids := []string{"1", "1", "a", "1", "x"}
	subs := make([]*subscriber, len(ids))
	for k, id := range ids {
		subs[k] = newSubscriber(t, i, b.token(model.RoleViewer), id, run)
	}
	if got := stats.Executions.Load(); got != 1 {
		t.Fatalf("%d executions for %d subscribers of one operation, want 1", got, len(subs))
	}

	release(t, gate)
	for _, s := range subs {
		s.until(t, 1, "")
	}
	// One unsubscribes, one goes away without a word.
	subs[1].w.send(wsMsg{ID: subs[1].id, Type: "complete"})
	_ = subs[3].w.c.Close()
	left := []*subscriber{subs[0], subs[2], subs[4]}
	for k := 2; k <= items; k++ {
		release(t, gate)
		for _, s := range left {
			s.until(t, k, "")
		}
	}
	for _, s := range left {
		s.until(t, items, "SUCCEEDED")
		if end := s.w.next(s.id, 10*time.Second); !end.done || len(end.errors) > 0 {
			t.Fatalf("subscription %s after the final state: %+v, want complete", s.id, end)
		}
	}
	if got := stats.Executions.Load(); got != 1 {
		t.Fatalf("%d executions, want 1", got)
	}
	if got := stats.Subscribers.Load(); got != int64(len(subs)) {
		t.Fatalf("%d subscribers joined, want %d", got, len(subs))
	}
	// Each event was executed once, not once per subscriber: about as many events as one
	// client received (fewer when a client skipped to a newer state; a late subscriber's
	// snapshot is the latest event, not a new one), where five executions would make five times
	// as many.
	fewest := left[0].received
	for _, s := range left {
		fewest = min(fewest, s.received)
	}
	if ev := stats.Events.Load(); ev < int64(items) || ev > 2*int64(fewest) {
		t.Fatalf("%d events executed; the subscribers received %d or more each", ev, fewest)
	}

	// The run has ended: a subscriber now gets its final state and the end.
	late := newSubscriber(t, i, b.token(model.RoleViewer), "1", run)
	if late.last.RunProgress.Status != "SUCCEEDED" || late.last.RunProgress.Progress.Processed != items {
		t.Fatalf("late snapshot %+v, want the final state", late.last.RunProgress)
	}
	if end := late.w.next("1", 10*time.Second); !end.done {
		t.Fatalf("late subscription after the final state: %+v, want complete", end)
	}
}

// TestSharedSubscriptionKeys checks what tells operations apart: different variables and
// different roles get executions of their own; subscription ids and tokens of one role do not
// matter; once every subscriber of an operation has left, the next one starts a new execution.
func TestSharedSubscriptionKeys(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	i, stats := sharedInstance(b, &gatedJob{name: "k1", n: 1, gate: gate}, &gatedJob{name: "k2", n: 1, gate: gate})
	t.Cleanup(func() { close(gate) })
	op := b.token(model.RoleOperator)
	run1, run2 := i.startJob(t, op, "k1"), i.startJob(t, op, "k2")

	a := newSubscriber(t, i, b.token(model.RoleViewer), "1", run1)
	newSubscriber(t, i, b.token(model.RoleViewer), "other", run1)  // shares a's execution
	newSubscriber(t, i, op, "1", run1)                             // another role
	d := newSubscriber(t, i, b.token(model.RoleViewer), "1", run2) // other variables
	if got := stats.Executions.Load(); got != 3 {
		t.Fatalf("%d executions, want 3 (run1 as VIEWER, run1 as OPERATOR, run2 as VIEWER)", got)
	}
	for _, s := range []*subscriber{a, d} {
		if want := map[*subscriber]string{a: run1, d: run2}[s]; s.last.RunProgress.ID != want {
			t.Fatalf("snapshot of run %s, want %s", s.last.RunProgress.ID, want)
		}
	}

	// d was run2's only subscriber: after it leaves, a new one starts a new execution.
	d.w.send(wsMsg{ID: "1", Type: "complete"})
	testenv.Eventually(t, 10*time.Second, "run2's subscriber to leave", func() bool {
		e := newSubscriber(t, i, b.token(model.RoleViewer), "1", run2)
		defer e.w.c.Close()
		return stats.Executions.Load() > 3
	})
}

// TestSharedSubscriptionVariablesSpelling checks that variables are compared by value: the
// same run id given inline and as a variable are different documents, but one variable value
// however its JSON was spelled is one operation.
func TestSharedSubscriptionVariablesSpelling(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	i, stats := sharedInstance(b, &gatedJob{name: "v", n: 1, gate: gate})
	t.Cleanup(func() { close(gate) })
	run := i.startJob(t, b.token(model.RoleOperator), "v")
	viewer := b.token(model.RoleViewer)
	for _, payload := range []string{
		`{"query":` + quote(progressSubscription) + `,"variables":{"id":` + quote(run) + `}}`,
		`{"variables": {"id" : ` + quote(run) + `}, "query":` + quote(progressSubscription) + `}`,
	} {
		w, _, err := i.dialWS(t, protoTransportWS, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.init(map[string]any{"authorization": "Bearer " + viewer}); err != nil {
			t.Fatal(err)
		}
		w.send(wsMsg{ID: "1", Type: "subscribe", Payload: json.RawMessage(payload)})
		decodeProgress(t, w.next("1", 10*time.Second))
	}
	if got := stats.Executions.Load(); got != 1 {
		t.Fatalf("%d executions, want 1", got)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestSharedSubscriptionWritesEachFrameOnce: subscribers of one shared operation over
// graphql-transport-ws get each event as one frame per event and subscription id, written by
// their connections, not serialised by gqlgen's transport per subscriber; each frame carries
// the subscriber's own id, also where one connection has two subscriptions of the operation.
// A legacy graphql-ws subscriber of the same operation still gets its events from gqlgen's
// transport.
func TestSharedSubscriptionWritesEachFrameOnce(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	const items = 3
	i, stats := sharedInstance(b, &gatedJob{name: "frames", n: items, gate: gate})
	t.Cleanup(func() { close(gate) })
	run := i.startJob(t, b.token(model.RoleOperator), "frames")
	viewer := b.token(model.RoleViewer)

	var subs []*subscriber
	for _, id := range []string{"1", "1", "1", "a", "a"} {
		subs = append(subs, newSubscriber(t, i, viewer, id, run))
	}
	// One connection with two subscriptions of the operation, and a legacy one.
	connected := func(proto string, ids ...string) *wsConn {
		t.Helper()
		w, _, err := i.dialWS(t, proto, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.init(map[string]any{"authorization": "Bearer " + viewer}); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			w.subscribe(id, progressSubscription, map[string]any{"id": run})
			decodeProgress(t, w.next(id, 10*time.Second))
		}
		return w
	}
	both, legacy := connected(protoTransportWS, "p", "q"), connected(protoLegacyWS, "L")
	if got := stats.Executions.Load(); got != 1 {
		t.Fatalf("%d executions, want 1", got)
	}

	for range items {
		release(t, gate)
	}
	received := 0
	for _, s := range subs {
		s.until(t, items, "SUCCEEDED")
		if end := s.w.next(s.id, 10*time.Second); !end.done || len(end.errors) > 0 {
			t.Fatalf("subscription %s after the final state: %+v, want complete", s.id, end)
		}
		received += s.received
	}
	// finalOf reads w's subscriptions ids to their ends, checks each had the final state and
	// returns how many states it read.
	finalOf := func(w *wsConn, ids ...string) int {
		t.Helper()
		states := 0
		final, done := map[string]bool{}, map[string]bool{}
		for len(done) < len(ids) {
			m := w.mustRead(10 * time.Second)
			if !slices.Contains(ids, m.ID) {
				t.Fatalf("a message of subscription %q on a connection with %v", m.ID, ids)
			}
			switch m.Type {
			case "next", "data":
				states++
				var p struct{ Data progressEvent }
				if err := json.Unmarshal(m.Payload, &p); err != nil {
					t.Fatal(err)
				}
				final[m.ID] = p.Data.RunProgress.Status == "SUCCEEDED" && p.Data.RunProgress.Progress.Processed == items
			case "complete":
				done[m.ID] = true
			default:
				t.Fatalf("unexpected %s message: %s", m.Type, m.Payload)
			}
		}
		for _, id := range ids {
			if !final[id] {
				t.Fatalf("subscription %s completed without the final state", id)
			}
		}
		return states
	}
	received += 2 + finalOf(both, "p", "q") // with p's and q's snapshots
	finalOf(legacy, "L")

	// Four ids over graphql-transport-ws (1, a, p, q): at least the final event's four frames,
	// at most four frames an event. Every state a graphql-transport-ws subscriber received was
	// written from a frame, and the final event reached all three subscribers of "1" and both
	// of "a" from one frame each: at least 3 frames fewer than states received. Framed per
	// subscriber, they would be as many.
	frames, events := stats.Frames.Load(), stats.Events.Load()
	if frames < 4 || frames > 4*events {
		t.Fatalf("%d frames for %d events and 4 subscription ids, want between 4 and %d", frames, events, 4*events)
	}
	if int(frames) > received-3 {
		t.Fatalf("%d frames for %d states received, want at most %d: the frames were not shared", frames, received, received-3)
	}
}
