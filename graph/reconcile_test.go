package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
)

// doubtJob makes one external call per target that always ends in doubt
// (AMBIGUOUS_EFFECT), and answers reconciles through hook.
type doubtJob struct {
	name    string
	targets []string
	hook    func(ctx context.Context, target string) (runner.Reconciliation, error)
}

func (j *doubtJob) Info() runner.JobInfo {
	return runner.JobInfo{Name: j.name, Description: "test job", Version: "1", Retry: runner.RetryPolicy{MaxAttempts: 1},
		StopConditions: []runner.StopCondition{}}
}

func (j *doubtJob) Run(ctx context.Context, run *runner.Run) error {
	for _, target := range j.targets {
		err := run.Process(ctx, runner.Item{Target: target, External: true}, func(ctx context.Context, _ *runner.Attempt) error {
			return runner.Ambiguous(errors.New("timeout after send"))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (j *doubtJob) Reconcile(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
	return j.hook(ctx, target)
}

// ambiguousEntry runs job once through the API and returns the global id of target's
// AMBIGUOUS_EFFECT ledger entry.
func (i *instance) ambiguousEntry(t *testing.T, token, job, target string) string {
	t.Helper()
	i.waitRunStatus(t, token, i.startJob(t, token, job), "SUCCEEDED")
	var data struct {
		Ledger struct {
			Nodes []struct{ ID, TargetKey, State string }
		}
	}
	i.post(t, token, `query($j: String!) { ledger(jobName: $j, state: [AMBIGUOUS_EFFECT]) { nodes { id targetKey state } } }`,
		map[string]any{"j": job}).decode(t, &data)
	for _, n := range data.Ledger.Nodes {
		if n.TargetKey == target {
			return n.ID
		}
	}
	t.Fatalf("no AMBIGUOUS_EFFECT entry for %s/%s: %+v", job, target, data.Ledger.Nodes)
	return ""
}

const reconcileSubscription = `subscription($id: ID!) { reconcileRequest(id: $id) { id status resultState message attempt entry { state } } }`

type reconcileState struct {
	ID          string
	Status      string
	ResultState *string
	Message     string
	Attempt     int
	Entry       struct{ State string }
}

// TestReconcileMutationReturnsBeforeTheHook: reconcileEntry answers PENDING while the job's
// hook is still waiting on the outside system, and the outcome arrives through the
// reconcileRequest subscription on another instance (through Redis), without asking again.
func TestReconcileMutationReturnsBeforeTheHook(t *testing.T) {
	b := setup(t)
	entered, answer := make(chan string, 1), make(chan struct{})
	job := &doubtJob{name: "slow-hook", targets: []string{"x1"}, hook: func(ctx context.Context, target string) (runner.Reconciliation, error) {
		entered <- target
		select {
		case <-answer:
			return runner.Reconciliation{Applied: true, EvidenceRef: "late"}, nil
		case <-ctx.Done():
			return runner.Reconciliation{}, ctx.Err()
		}
	}}
	inst := b.instance(instanceOpts{jobs: []runner.Job{job}})
	watcher := b.instance(instanceOpts{poolSize: -1, hub: true})
	once := sync.OnceFunc(func() { close(answer) })
	t.Cleanup(once) // before the instances' cleanups, which wait for the hook
	op, viewer := b.token(model.RoleOperator), b.token(model.RoleViewer)
	entry := inst.ambiguousEntry(t, op, "slow-hook", "x1")

	const mutation = `mutation($id: ID!) { reconcileEntry(input: {entryId: $id}) {
		reconcileRequest { id status entry { id state } } userErrors { code message } } }`
	type payload struct {
		ReconcileEntry struct {
			ReconcileRequest *struct {
				ID, Status string
				Entry      struct{ ID, State string }
			}
			UserErrors []userError
		}
	}
	returned := make(chan *response, 1)
	go func() { returned <- inst.post(t, op, mutation, map[string]any{"id": entry}) }()
	var data payload
	select {
	case resp := <-returned:
		resp.decode(t, &data)
	case <-time.After(10 * time.Second):
		t.Fatal("reconcileEntry did not answer while the reconcile hook was blocked: the hook runs in the request")
	}
	req := data.ReconcileEntry.ReconcileRequest
	if len(data.ReconcileEntry.UserErrors) > 0 || req == nil || req.Status != "PENDING" || req.Entry.ID != entry || req.Entry.State != "AMBIGUOUS_EFFECT" {
		t.Fatalf("reconcileEntry: %+v, want a PENDING request of the AMBIGUOUS_EFFECT entry", data.ReconcileEntry)
	}
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("no worker called the reconcile hook")
	}

	// A second request while this one is open is a user error.
	inst.post(t, op, mutation, map[string]any{"id": entry}).decode(t, &data)
	if ue := data.ReconcileEntry.UserErrors; len(ue) != 1 || ue[0].Code != "ALREADY_RUNNING" || data.ReconcileEntry.ReconcileRequest != nil {
		t.Fatalf("second reconcileEntry: %+v, want ALREADY_RUNNING", data.ReconcileEntry)
	}

	w, _, err := watcher.dialWS(t, protoTransportWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.init(map[string]any{"authorization": "Bearer " + viewer}); err != nil {
		t.Fatal(err)
	}
	w.subscribe("1", reconcileSubscription, map[string]any{"id": req.ID})
	next := func() reconcileState {
		ev := w.next("1", 20*time.Second)
		if ev.done || len(ev.errors) > 0 {
			t.Fatalf("expected a reconcile request state, got %+v", ev)
		}
		var p struct{ ReconcileRequest reconcileState }
		if err := json.Unmarshal(ev.data, &p); err != nil {
			t.Fatal(err)
		}
		return p.ReconcileRequest
	}
	snap := next()
	if snap.ID != req.ID || snap.Status != "RUNNING" || snap.Entry.State != "AMBIGUOUS_EFFECT" {
		t.Fatalf("snapshot %+v, want RUNNING with the entry still AMBIGUOUS_EFFECT", snap)
	}
	once()
	last := snap
	for last.Status == "RUNNING" {
		last = next()
	}
	if last.Status != "DONE" || last.ResultState == nil || *last.ResultState != "CONFIRMED" || last.Entry.State != "CONFIRMED" {
		t.Fatalf("final state %+v, want DONE with the entry CONFIRMED", last)
	}
	if end := w.next("1", 10*time.Second); !end.done || len(end.errors) > 0 {
		t.Fatalf("after the final state: %+v, want complete", end)
	}
}

// TestReconcileMutationRefusals: bad input is a coded user error, audited, with no request.
func TestReconcileMutationRefusals(t *testing.T) {
	b := setup(t)
	plain := &gatedJob{name: "plain", n: 1}
	inst := b.instance(instanceOpts{jobs: []runner.Job{plain}})
	op := b.token(model.RoleOperator)
	inst.waitRunStatus(t, op, inst.startJob(t, op, "plain"), "SUCCEEDED")
	var ledger struct {
		Ledger struct{ Nodes []struct{ ID string } }
	}
	inst.post(t, op, `{ ledger(jobName: "plain") { nodes { id } } }`, nil).decode(t, &ledger)
	if len(ledger.Ledger.Nodes) != 1 {
		t.Fatalf("ledger of plain: %+v", ledger)
	}
	for _, c := range []struct{ id, code string }{
		{"TGVkZ2VyRW50cnk6OTk5OQ==", "NOT_FOUND"}, // LedgerEntry:9999
		{ledger.Ledger.Nodes[0].ID, "INVALID_INPUT"},
		{"UnVuOjE=", "INVALID_INPUT"}, // Run:1, not a ledger entry
	} {
		var data struct {
			ReconcileEntry struct {
				ReconcileRequest *struct{ ID string }
				UserErrors       []userError
			}
		}
		inst.post(t, op, `mutation($id: ID!) { reconcileEntry(input: {entryId: $id}) { reconcileRequest { id } userErrors { code message } } }`,
			map[string]any{"id": c.id}).decode(t, &data)
		if ue := data.ReconcileEntry.UserErrors; len(ue) != 1 || ue[0].Code != c.code || data.ReconcileEntry.ReconcileRequest != nil {
			t.Errorf("reconcileEntry(%s): %+v, want %s", c.id, data.ReconcileEntry, c.code)
		}
	}
	if n := b.count(`SELECT count(*) FROM reconcile_requests`); n != 0 {
		t.Errorf("%d reconcile requests recorded for refused input", n)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'reconcile'`); n != 3 {
		t.Errorf("%d audit rows of refused reconciles, want 3", n)
	}
}
