package runner_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// Every audit row of a reconcile or a resolution by hand, one at a time or in bulk, accepted,
// finished or refused, names the entry's job, target key, step and generation, not only
// ledger:<id>.
func TestLedgerAuditNamesJobAndTarget(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job := ambiguousJob("named", func(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
		return runner.Reconciliation{Applied: false}, nil
	}, "acct-1", "acct-2", "acct-3", "acct-4")
	r := b.runner(nil, job)
	b.succeed(r, runner.StartParams{Job: "named"})
	entry := map[string]*bt.LedgerEntry{}
	for _, k := range []string{"acct-1", "acct-2", "acct-3", "acct-4"} {
		e, err := r.Ledger().Entry(ctx, b.mustEntry("named", k).ID)
		if err != nil {
			t.Fatal(err)
		}
		entry[k] = e
	}
	if _, err := b.reconcile(r, entry["acct-1"].ID, "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Ledger().ResolveAmbiguous(ctx, entry["acct-2"].ID, runner.ResolveNotApplied, "", "checked the provider", "erin"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Ledger().Reconcile(ctx, entry["acct-2"].ID, "ops"); code(err) != bt.CodeConflict {
		t.Fatalf("reconcile of a resolved entry: %v, want CONFLICT", err)
	}
	if _, failed, err := r.Ledger().ResolveAmbiguousMany(ctx, []int64{entry["acct-3"].ID}, runner.ResolveNotApplied, "", "bulk check", "erin"); err != nil || len(failed) != 0 {
		t.Fatalf("bulk resolve: %v %v", failed, err)
	}
	reqs, failed, err := r.Ledger().ReconcileMany(ctx, []int64{entry["acct-4"].ID}, "ops")
	if err != nil || len(failed) != 0 || len(reqs) != 1 {
		t.Fatalf("bulk reconcile: %v %v %v", reqs, failed, err)
	}
	b.awaitReconcile(r, reqs[0].ID)

	names := func(what string, args map[string]any, key string) {
		t.Helper()
		e := entry[key]
		if args["job"] != "named" || args["targetKey"] != key || args["step"] != e.Step || args["generation"] != float64(e.Generation) {
			t.Errorf("%s: arguments %v, want job named, targetKey %s, step %q, generation %d", what, args, key, e.Step, e.Generation)
		}
	}
	rows, err := b.Pool.Query(ctx, `SELECT action, outcome, arguments FROM audit_log
		WHERE action IN ('reconcile', 'resolveAmbiguous', 'reconcileMany', 'resolveAmbiguousMany') ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		action, outcome string
		args            map[string]any
	}
	var got []row
	for rows.Next() {
		var x row
		var raw []byte
		if err := rows.Scan(&x.action, &x.outcome, &raw); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &x.args); err != nil {
			t.Fatal(err)
		}
		got = append(got, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// acct-1: request, outcome; acct-2: resolution, refused reconcile; acct-3: bulk
	// resolution; acct-4: bulk request, outcome.
	want := []struct{ action, key string }{{"reconcile", "acct-1"}, {"reconcile", "acct-1"}, {"resolveAmbiguous", "acct-2"},
		{"reconcile", "acct-2"}, {"resolveAmbiguousMany", "acct-3"}, {"reconcileMany", "acct-4"}, {"reconcile", "acct-4"}}
	if len(got) != len(want) {
		t.Fatalf("%d audit rows %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		what := g.action + " " + g.outcome + " of " + w.key
		if g.action != w.action {
			t.Errorf("row %d: %s, want %s", i, g.action, w.action)
			continue
		}
		if w.action == "reconcile" || w.action == "resolveAmbiguous" {
			names(what, g.args, w.key)
			continue
		}
		members, _ := g.args["members"].([]any)
		if len(members) != 1 {
			t.Errorf("%s: members %v, want the one entry", what, g.args["members"])
			continue
		}
		m, _ := members[0].(map[string]any)
		if m["entryId"] != float64(entry[w.key].ID) {
			t.Errorf("%s: member %v, want entry %d", what, m, entry[w.key].ID)
		}
		names(what, m, w.key)
	}
}
