package graph_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

const progressSubscription = `subscription($id: ID!) { runProgress(runId: $id) { id status progress { processed total } } }`

type progressEvent struct {
	RunProgress struct {
		ID       string
		Status   string
		Progress struct{ Processed, Total int }
	}
}

func decodeProgress(t *testing.T, ev event) progressEvent {
	t.Helper()
	if len(ev.errors) > 0 || ev.done {
		t.Fatalf("expected a run state, got %+v", ev)
	}
	var p progressEvent
	if err := json.Unmarshal(ev.data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// followRun subscribes to runProgress of id on w, releases the job's items one at a time
// through gate, and checks: a snapshot first, then at least two distinct progress updates,
// then the final SUCCEEDED state, then the end of the subscription.
func followRun(t *testing.T, w *wsConn, id string, gate chan<- struct{}, items int) {
	t.Helper()
	w.subscribe("1", progressSubscription, map[string]any{"id": id})
	snap := decodeProgress(t, w.next("1", 10*time.Second))
	if snap.RunProgress.ID != id || snap.RunProgress.Progress.Processed != 0 ||
		(snap.RunProgress.Status != "STARTING" && snap.RunProgress.Status != "RUNNING") {
		t.Fatalf("snapshot = %+v", snap.RunProgress)
	}
	var seen []int
	last := snap
	for k := 1; k <= items; k++ {
		release(t, gate)
		for last.RunProgress.Progress.Processed < k {
			last = decodeProgress(t, w.next("1", 10*time.Second))
		}
		seen = append(seen, last.RunProgress.Progress.Processed)
	}
	for last.RunProgress.Status != "SUCCEEDED" {
		last = decodeProgress(t, w.next("1", 10*time.Second))
		if last.RunProgress.Status != "RUNNING" && last.RunProgress.Status != "SUCCEEDED" {
			t.Fatalf("run went %s", last.RunProgress.Status)
		}
	}
	if len(seen) < 2 || seen[0] == seen[1] {
		t.Fatalf("progress updates %v: want at least two distinct ones", seen)
	}
	if last.RunProgress.Progress.Processed != items {
		t.Fatalf("final state %+v", last.RunProgress)
	}
	if end := w.next("1", 10*time.Second); !end.done || len(end.errors) > 0 {
		t.Fatalf("after the final state: %+v, want complete", end)
	}
}

// TestRunProgressAcrossInstances runs a job on instance A and follows it from instance B,
// which has no workers: the events travel through Redis.
func TestRunProgressAcrossInstances(t *testing.T) {
	b := setup(t)
	gates := map[string]chan struct{}{protoTransportWS: make(chan struct{}), protoLegacyWS: make(chan struct{})}
	a := b.instance(instanceOpts{jobs: []runner.Job{
		&gatedJob{name: "job-" + protoTransportWS, n: 3, gate: gates[protoTransportWS]},
		&gatedJob{name: "job-" + protoLegacyWS, n: 3, gate: gates[protoLegacyWS]},
	}})
	bInst := b.instance(instanceOpts{poolSize: -1, hub: true})
	t.Cleanup(func() {
		for _, g := range gates {
			close(g) // lets a run that a failed test left waiting finish
		}
	})
	op, viewer := b.token(model.RoleOperator), b.token(model.RoleViewer)

	for proto, init := range map[string]map[string]any{
		protoTransportWS: {"authorization": "Bearer " + viewer},
		protoLegacyWS:    {"token": viewer},
	} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			w, _, err := bInst.dialWS(t, proto, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.c.Subprotocol(); got != proto {
				t.Fatalf("negotiated %q, want %q", got, proto)
			}
			if err := w.init(init); err != nil {
				t.Fatalf("connection_init refused: %v", err)
			}
			id := a.startJob(t, op, "job-"+proto)
			followRun(t, w, id, gates[proto], 3)
		})
	}
}

func TestRunProgressByPolling(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	i := b.instance(instanceOpts{
		jobs:  []runner.Job{&gatedJob{name: "polled", n: 3, gate: gate}},
		graph: func(c *httpapi.Config) { c.GraphQL.PollInterval = 20 * time.Millisecond },
	})
	t.Cleanup(func() { close(gate) })
	viewer := b.token(model.RoleOperator)
	w, _, err := i.dialWS(t, protoTransportWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.init(map[string]any{"authorization": "Bearer " + viewer}); err != nil {
		t.Fatal(err)
	}
	id := i.startJob(t, viewer, "polled")
	followRun(t, w, id, gate, 3)

	// A finished run: its snapshot, then the end.
	w.subscribe("2", progressSubscription, map[string]any{"id": id})
	if p := decodeProgress(t, w.next("2", 10*time.Second)); p.RunProgress.Status != "SUCCEEDED" {
		t.Fatalf("snapshot of a finished run: %+v", p)
	}
	if end := w.next("2", 10*time.Second); !end.done {
		t.Fatalf("after a finished run's snapshot: %+v, want complete", end)
	}
	// An unknown run: an error, and the connection lives on.
	w.subscribe("3", progressSubscription, map[string]any{"id": graph.RunID(999999)})
	if ev := w.next("3", 10*time.Second); len(ev.errors) == 0 {
		t.Fatalf("subscription to an unknown run: %+v, want an error", ev)
	}
}

func TestRunEvents(t *testing.T) {
	b := setup(t)
	gate := make(chan struct{})
	a := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "ev", n: 2, gate: gate}, &gatedJob{name: "quiet", n: 1}}})
	bInst := b.instance(instanceOpts{poolSize: -1, hub: true})
	t.Cleanup(func() { close(gate) })
	op := b.token(model.RoleOperator)
	w, _, err := bInst.dialWS(t, protoTransportWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.init(map[string]any{"authorization": "Bearer " + op}); err != nil {
		t.Fatal(err)
	}
	w.subscribe("1", `subscription { runEvents(jobName: "ev") { kind run { id jobName status progress { processed } } } }`, nil)
	testenv.Eventually(t, 10*time.Second, "the subscription to reach the hub", func() bool {
		return bInst.hub.Stats().Subscriptions == 1
	})
	// A run of another job must not show up.
	quiet := a.startJob(t, op, "quiet")
	a.waitRunStatus(t, op, quiet, "SUCCEEDED")
	id := a.startJob(t, op, "ev")

	type runEvent struct {
		RunEvents struct {
			Kind string
			Run  struct {
				ID, JobName, Status string
				Progress            struct{ Processed int }
			}
		}
	}
	var kinds []string
	released := 0
	for {
		ev := w.next("1", 10*time.Second)
		var e runEvent
		if err := json.Unmarshal(ev.data, &e); err != nil || len(ev.errors) > 0 {
			t.Fatalf("event %+v: %v", ev, err)
		}
		if e.RunEvents.Run.ID != id {
			t.Fatalf("event of another run: %+v", e.RunEvents)
		}
		kinds = append(kinds, e.RunEvents.Kind)
		if e.RunEvents.Kind == "FINISHED" {
			if e.RunEvents.Run.Status != "SUCCEEDED" {
				t.Fatalf("finished %s", e.RunEvents.Run.Status)
			}
			break
		}
		if released < 2 && e.RunEvents.Run.Progress.Processed == released {
			release(t, gate)
			released++
		}
	}
	if kinds[0] != "STARTED" || len(kinds) < 3 {
		t.Fatalf("event kinds %v: want STARTED, progress, FINISHED", kinds)
	}
}

func TestWebSocketAuth(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{noRun: true, graph: func(c *httpapi.Config) {
		c.MaxWebSocketsPerToken = 1
		c.WebSocketInitTimeout = 300 * time.Millisecond
	}})
	viewer := b.token(model.RoleViewer)

	for _, proto := range []string{protoTransportWS, protoLegacyWS} {
		t.Run(proto, func(t *testing.T) {
			for name, payload := range map[string]map[string]any{
				"no token":  {},
				"bad token": {"authorization": "Bearer bt_nope"},
			} {
				w, _, err := i.dialWS(t, proto, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.init(payload); closeCode(err) != 4401 {
					t.Errorf("%s: %v, want close 4401", name, err)
				}
			}
		})
	}

	t.Run("token in the upgrade request", func(t *testing.T) {
		w, _, err := i.dialWS(t, protoTransportWS, http.Header{"Authorization": {"Bearer " + viewer}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.init(nil); err != nil {
			t.Fatalf("refused: %v", err)
		}
		// One connection per token here: the second is refused while the first is open.
		w2, _, err := i.dialWS(t, protoTransportWS, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w2.init(map[string]any{"authorization": "Bearer " + viewer}); closeCode(err) != 4403 {
			t.Errorf("second connection: %v, want close 4403", err)
		}
		w.c.Close()
		testenv.Eventually(t, 5*time.Second, "the slot to be released", func() bool {
			w3, _, err := i.dialWS(t, protoTransportWS, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer w3.c.Close()
			return w3.init(map[string]any{"authorization": "Bearer " + viewer}) == nil
		})
	})

	t.Run("init timeout", func(t *testing.T) {
		w, _, err := i.dialWS(t, protoTransportWS, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.read(10 * time.Second); closeCode(err) == 0 {
			t.Fatalf("a silent connection: %v, want closed", err)
		}
	})
}

// waitClose reads w until the server closes it, and returns the close error.
func waitClose(t *testing.T, w *wsConn, within time.Duration) *websocket.CloseError {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		_, err := w.read(time.Until(deadline))
		if err == nil {
			continue
		}
		ce, ok := err.(*websocket.CloseError)
		if !ok {
			t.Fatalf("%s connection: %v, want a close frame", w.proto, err)
		}
		return ce
	}
}

// openWS opens a connection to i with proto and token, and fails the test if it is refused.
func openWS(t *testing.T, i *instance, proto, token string) *wsConn {
	t.Helper()
	w, _, err := i.dialWS(t, proto, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.init(map[string]any{"authorization": "Bearer " + token}); err != nil {
		t.Fatalf("connection_init refused: %v", err)
	}
	return w
}

// TestRevokedTokenClosesWebSockets revokes tokens with two instances open, each holding
// WebSockets of the token and an HTTP cache entry for it. The token cache lives for an hour
// here, so only the revocation announced by the store can close the connections and turn the
// cached token away.
func TestRevokedTokenClosesWebSockets(t *testing.T) {
	b := setup(t)
	slow := func(c *httpapi.Config) { c.TokenCacheTTL = time.Hour }
	insts := []*instance{b.instance(instanceOpts{noRun: true, graph: slow}), b.instance(instanceOpts{noRun: true, graph: slow})}
	store := httpapi.NewTokenStore(b.Pool)
	canary, victim, bystander := b.token(model.RoleViewer), b.token(model.RoleOperator), b.token(model.RoleViewer)

	type conn struct {
		inst int
		w    *wsConn
	}
	var canaries, victims, bystanders []conn
	for k, i := range insts {
		for _, proto := range []string{protoTransportWS, protoLegacyWS} {
			canaries = append(canaries, conn{k, openWS(t, i, proto, canary)})
			victims = append(victims, conn{k, openWS(t, i, proto, victim)})
			bystanders = append(bystanders, conn{k, openWS(t, i, proto, bystander)})
		}
		if r := i.post(t, victim, `{ me { name } }`, nil); r.status != http.StatusOK {
			t.Fatalf("instance %d: the live token was refused: HTTP %d %s", k, r.status, r.code())
		}
	}
	// A subscription in progress ends with its connection.
	victims[0].w.subscribe("1", `subscription { runEvents { kind } }`, nil)

	// The canary's connections close once each instance is listening for revocations (it
	// checks the open tokens when it starts to listen, and hears of revocations after).
	if _, err := store.RevokeToken(context.Background(), b.tokenName(canary)); err != nil {
		t.Fatal(err)
	}
	for _, c := range canaries {
		if ce := waitClose(t, c.w, 10*time.Second); ce.Code != 4401 || ce.Text != "unauthenticated: token revoked" {
			t.Fatalf("instance %d, %s: closed with %d %q, want 4401", c.inst, c.w.proto, ce.Code, ce.Text)
		}
	}

	if _, err := store.RevokeToken(context.Background(), b.tokenName(victim)); err != nil {
		t.Fatal(err)
	}
	for _, c := range victims {
		if ce := waitClose(t, c.w, 10*time.Second); ce.Code != 4401 || ce.Text != "unauthenticated: token revoked" {
			t.Fatalf("instance %d, %s: closed with %d %q, want 4401", c.inst, c.w.proto, ce.Code, ce.Text)
		}
	}
	for k, i := range insts {
		if r := i.post(t, victim, `{ me { name } }`, nil); r.status != http.StatusUnauthorized || r.code() != graph.CodeUnauthenticated {
			t.Fatalf("instance %d: the revoked token, cached for an hour: HTTP %d %q, want 401 UNAUTHENTICATED", k, r.status, r.code())
		}
		w, _, err := i.dialWS(t, protoTransportWS, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.init(map[string]any{"authorization": "Bearer " + victim}); closeCode(err) != 4401 {
			t.Fatalf("instance %d: a new connection with the revoked token: %v, want close 4401", k, err)
		}
	}
	// Connections of other tokens live on.
	for _, c := range bystanders {
		c.w.subscribe("me", `{ me { name } }`, nil)
		if ev := c.w.next("me", 10*time.Second); len(ev.errors) > 0 || ev.done || !strings.Contains(string(ev.data), b.tokenName(bystander)) {
			t.Fatalf("instance %d, %s: another token's connection: %+v", c.inst, c.w.proto, ev)
		}
	}
}

// TestRevokedTokenClosesWebSocketsWithoutAnnouncement revokes a token behind the store's back
// (no announcement): the periodic check, every TokenCacheTTL, still closes its connections on
// every instance, and HTTP refuses it within the TTL.
func TestRevokedTokenClosesWebSocketsWithoutAnnouncement(t *testing.T) {
	b := setup(t)
	fast := func(c *httpapi.Config) { c.TokenCacheTTL = 200 * time.Millisecond }
	insts := []*instance{b.instance(instanceOpts{noRun: true, graph: fast}), b.instance(instanceOpts{noRun: true, graph: fast})}
	victim := b.token(model.RoleViewer)
	var conns []*wsConn
	for _, i := range insts {
		conns = append(conns, openWS(t, i, protoTransportWS, victim), openWS(t, i, protoLegacyWS, victim))
	}
	if _, err := b.Pool.Exec(context.Background(), `UPDATE api_tokens SET revoked_at = now() WHERE token_hash = $1`, httpapi.HashToken(victim)); err != nil {
		t.Fatal(err)
	}
	for _, w := range conns {
		if ce := waitClose(t, w, 10*time.Second); ce.Code != 4401 {
			t.Fatalf("%s: closed with %d %q, want 4401", w.proto, ce.Code, ce.Text)
		}
	}
	for _, i := range insts {
		testenv.Eventually(t, 10*time.Second, "HTTP to refuse the revoked token", func() bool {
			r := i.post(t, victim, `{ me { name } }`, nil)
			return r.status == http.StatusUnauthorized && r.code() == graph.CodeUnauthenticated
		})
	}
}
