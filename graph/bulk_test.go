package graph_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
)

// ambiguousEntries runs job once and returns its AMBIGUOUS_EFFECT entries' ids by target.
func (i *instance) ambiguousEntries(t *testing.T, token, job string) map[string]string {
	t.Helper()
	i.waitRunStatus(t, token, i.startJob(t, token, job), "SUCCEEDED")
	var data struct {
		Ledger struct {
			Nodes []struct{ ID, TargetKey string }
		}
	}
	i.post(t, token, `query($j: String!) { ledger(jobName: $j, state: [AMBIGUOUS_EFFECT]) { nodes { id targetKey } } }`,
		map[string]any{"j": job}).decode(t, &data)
	out := map[string]string{}
	for _, n := range data.Ledger.Nodes {
		out[n.TargetKey] = n.ID
	}
	return out
}

// bulkAudit is the one audit row a bulk mutation writes.
type bulkAuditRow struct {
	Outcome   string
	Target    string
	Arguments struct {
		EntryIDs []any   `json:"entryIds"`
		Done     []int64 `json:"done"`
		Refused  []struct {
			EntryID int64 `json:"entryId"`
			Code    string
		} `json:"refused"`
	}
}

func (b *bundle) bulkAudits(action string) []bulkAuditRow {
	b.T.Helper()
	rows, err := b.Pool.Query(context.Background(), `SELECT outcome, target, arguments FROM audit_log WHERE action = $1 ORDER BY id`, action)
	if err != nil {
		b.T.Fatal(err)
	}
	defer rows.Close()
	var out []bulkAuditRow
	for rows.Next() {
		var r bulkAuditRow
		var raw []byte
		if err := rows.Scan(&r.Outcome, &r.Target, &raw); err != nil {
			b.T.Fatal(err)
		}
		if err := json.Unmarshal(raw, &r.Arguments); err != nil {
			b.T.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

const resolveMany = `mutation($in: ResolveAmbiguousManyInput!) { resolveAmbiguousMany(input: $in) {
	ledgerEntries { id state lastError } userErrors { code field message } } }`

type resolveManyPayload struct {
	ResolveAmbiguousMany struct {
		LedgerEntries []struct{ ID, State, LastError string }
		UserErrors    []userError
	}
}

// Resolving many entries with one note resolves each still in doubt, gives each other member
// its own user error at its place in the input, and writes ONE audit entry listing them all.
func TestResolveAmbiguousMany(t *testing.T) {
	b := setup(t)
	job := &doubtJob{name: "refunds", targets: []string{"r1", "r2", "r3"}}
	i := b.instance(instanceOpts{jobs: []runner.Job{job}})
	op := b.token(model.RoleOperator)
	e := i.ambiguousEntries(t, op, "refunds")
	if len(e) != 3 {
		t.Fatalf("ambiguous entries %v, want 3", e)
	}
	// r1 is resolved first, on its own: in the bulk call it is no longer in doubt.
	var one struct {
		ResolveAmbiguous struct{ UserErrors []userError }
	}
	i.post(t, op, `mutation($id: ID!) { resolveAmbiguous(input: {entryId: $id, resolution: NOT_APPLIED, note: "checked"}) { userErrors { code } } }`,
		map[string]any{"id": e["r1"]}).decode(t, &one)

	// Refusals of the whole call change nothing and write one audit row each.
	for _, in := range []map[string]any{
		{"entryIds": []string{e["r2"]}, "resolution": "NOT_APPLIED", "note": "  "},
		{"entryIds": []string{e["r2"]}, "resolution": "CONFIRMED", "note": "paid"},
		{"entryIds": []string{}, "resolution": "NOT_APPLIED", "note": "x"},
	} {
		var p resolveManyPayload
		i.post(t, op, resolveMany, map[string]any{"in": in}).decode(t, &p)
		if len(p.ResolveAmbiguousMany.LedgerEntries) != 0 || !oneCode(p.ResolveAmbiguousMany.UserErrors, "INVALID_INPUT") {
			t.Fatalf("resolveAmbiguousMany(%v) = %+v, want one INVALID_INPUT and nothing resolved", in, p.ResolveAmbiguousMany)
		}
	}

	var p resolveManyPayload
	i.post(t, op, resolveMany, map[string]any{"in": map[string]any{
		"entryIds": []string{e["r1"], e["r2"], "garbage", e["r3"]}, "resolution": "NOT_APPLIED", "note": "provider says never sent"}}).decode(t, &p)
	got := p.ResolveAmbiguousMany
	if len(got.LedgerEntries) != 2 {
		t.Fatalf("resolved %+v, want r2 and r3", got.LedgerEntries)
	}
	for _, le := range got.LedgerEntries {
		if le.State != "NOT_APPLIED" || (le.ID != e["r2"] && le.ID != e["r3"]) {
			t.Fatalf("resolved %+v, want r2 and r3 NOT_APPLIED", got.LedgerEntries)
		}
	}
	ues := got.UserErrors
	if len(ues) != 2 || ues[0].Code != "CONFLICT" || deref(ues[0].Field) != "entryIds[0]" ||
		ues[1].Code != "INVALID_INPUT" || deref(ues[1].Field) != "entryIds[2]" {
		t.Fatalf("user errors %+v, want CONFLICT at entryIds[0] (r1) and INVALID_INPUT at entryIds[2]", ues)
	}

	audits := b.bulkAudits("resolveAmbiguousMany")
	if len(audits) != 4 {
		t.Fatalf("%d resolveAmbiguousMany audit rows, want 4 (3 refused calls, 1 bulk)", len(audits))
	}
	last := audits[3]
	if last.Outcome != "PARTIAL" || len(last.Arguments.EntryIDs) != 3 || len(last.Arguments.Done) != 2 ||
		len(last.Arguments.Refused) != 1 || last.Arguments.Refused[0].Code != "CONFLICT" {
		t.Fatalf("bulk audit row %+v, want PARTIAL listing 3 members: 2 done, r1 refused CONFLICT", last)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'resolveAmbiguous'`); n != 1 {
		t.Fatalf("%d single resolveAmbiguous rows, want 1: the bulk call is one entry, not one per member", n)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'refunds' AND state = 'AMBIGUOUS_EFFECT'`); n != 0 {
		t.Fatalf("%d entries still in doubt", n)
	}
	if n := b.count(`SELECT sum(n) FROM job_ledger_counts WHERE job_name = 'refunds' AND run_id = 0 AND state = 'NOT_APPLIED'`); n != 3 {
		t.Fatalf("generation counter NOT_APPLIED = %d, want 3", n)
	}
}

const reconcileMany = `mutation($in: ReconcileEntriesInput!) { reconcileEntries(input: $in) {
	reconcileRequests { id status entry { id } } more userErrors { code field message } } }`

type reconcileManyPayload struct {
	ReconcileEntries struct {
		ReconcileRequests []struct {
			ID, Status string
			Entry      struct{ ID string }
		}
		More       bool
		UserErrors []userError
	}
}

// Reconciling all of a job's entries in doubt, or the selected ones, makes one request per
// entry that can have one, a user error for each other member, and ONE audit entry per call.
func TestReconcileEntries(t *testing.T) {
	b := setup(t)
	job := &doubtJob{name: "mails", targets: []string{"m1", "m2", "m3"}, hook: func(ctx context.Context, target string) (runner.Reconciliation, error) {
		return runner.Reconciliation{Applied: false}, nil
	}}
	i := b.instance(instanceOpts{jobs: []runner.Job{job}})
	op := b.token(model.RoleOperator)
	e := i.ambiguousEntries(t, op, "mails")

	var p reconcileManyPayload
	i.post(t, op, reconcileMany, map[string]any{"in": map[string]any{"jobName": "mails"}}).decode(t, &p)
	if len(p.ReconcileEntries.ReconcileRequests) != 3 || p.ReconcileEntries.More || len(p.ReconcileEntries.UserErrors) != 0 {
		t.Fatalf("reconcile all = %+v, want 3 requests", p.ReconcileEntries)
	}
	testenv.Eventually(t, 20*time.Second, "the three reconciles to resolve their entries", func() bool {
		return b.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'mails' AND state = 'NOT_APPLIED'`) == 3
	})

	// Selected: all three are settled now, so each member is refused at its place.
	var q reconcileManyPayload
	i.post(t, op, reconcileMany, map[string]any{"in": map[string]any{"entryIds": []string{e["m2"], e["m1"]}}}).decode(t, &q)
	ues := q.ReconcileEntries.UserErrors
	if len(q.ReconcileEntries.ReconcileRequests) != 0 || len(ues) != 2 || ues[0].Code != "CONFLICT" || deref(ues[0].Field) != "entryIds[0]" ||
		deref(ues[1].Field) != "entryIds[1]" {
		t.Fatalf("reconcile of settled entries = %+v, want CONFLICT for each, at its place", q.ReconcileEntries)
	}
	// Both or neither of entryIds and jobName: refused whole.
	var r reconcileManyPayload
	i.post(t, op, reconcileMany, map[string]any{"in": map[string]any{"entryIds": []string{e["m1"]}, "jobName": "mails"}}).decode(t, &r)
	if !oneCode(r.ReconcileEntries.UserErrors, "INVALID_INPUT") {
		t.Fatalf("both entryIds and jobName: %+v", r.ReconcileEntries)
	}

	audits := b.bulkAudits("reconcileMany")
	if len(audits) != 3 {
		t.Fatalf("%d reconcileMany audit rows, want 3 (one per call)", len(audits))
	}
	if a := audits[0]; a.Outcome != "PENDING" || len(a.Arguments.Done) != 3 || len(a.Arguments.EntryIDs) != 3 {
		t.Fatalf("first audit row %+v, want PENDING listing 3 members done", a)
	}
	if a := audits[1]; a.Outcome != "REFUSED" || len(a.Arguments.Refused) != 2 {
		t.Fatalf("second audit row %+v, want REFUSED listing 2 members", a)
	}
	// The worker audits each outcome as it comes; the requests themselves are the bulk row.
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'reconcile' AND outcome = 'PENDING'`); n != 0 {
		t.Fatalf("%d single reconcile request rows: the bulk call is one entry", n)
	}
}
