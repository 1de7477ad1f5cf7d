package demo

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// bundle is one test's migrated schema and Redis prefix (the shared bundle); a provider test
// sets only T, URL and Pool.
type bundle struct {
	*testbundle.Bundle
}

func setup(t *testing.T) *bundle {
	t.Helper()
	tb := testbundle.Setup(t, demoSchema)
	return &bundle{Bundle: tb}
}

// demoSchema returns a fresh schema migrated as a demo server migrates it: the product's
// migrations (testenv.Schema), then the demo's own.
func demoSchema(t testing.TB) string {
	t.Helper()
	url := testenv.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := Migrate(ctx, url); err != nil {
		t.Fatalf("demo migrations: %v", err)
	}
	return url
}

// runner starts a Runner with jobs registered, running until the test ends.
func (b *bundle) runner(jobs ...runner.Job) *runner.Runner {
	b.T.Helper()
	return b.Runner(b.Config(), jobs...)
}

func (b *bundle) start(r *runner.Runner, p runner.StartParams) int64 {
	b.T.Helper()
	run, err := r.Start(context.Background(), p)
	if err != nil || run == nil {
		b.T.Fatalf("start %s: run %v, %v", p.Job, run, err)
	}
	return run.ID
}

// waitEnd polls until run id has finished and returns it.
func (b *bundle) waitEnd(r *runner.Runner, id int64) *bt.RunRecord {
	b.T.Helper()
	var last *bt.RunRecord
	testenv.Eventually(b.T, 30*time.Second, fmt.Sprintf("run %d to finish", id), func() bool {
		run, err := r.Runs().Get(context.Background(), id)
		if err != nil {
			b.T.Fatal(err)
		}
		last = run
		return !run.Status.Active() && !r.Active(id)
	})
	return last
}

// waitStatus waits for run id to finish with status want.
func (b *bundle) waitStatus(r *runner.Runner, id int64, want bt.RunStatus) *bt.RunRecord {
	b.T.Helper()
	got := b.waitEnd(r, id)
	if got.Status != want {
		b.T.Fatalf("run %d ended %s (%s: %s), want %s", id, got.Status, got.StopReason, got.Message, want)
	}
	return got
}

func (b *bundle) count(sql string, args ...any) int {
	b.T.Helper()
	return testbundle.Count(b.T, b.Pool, sql, args...)
}

// ledgerStates counts job's ledger rows by state.
func (b *bundle) ledgerStates(job string) map[string]int {
	b.T.Helper()
	rows, err := b.Pool.Query(context.Background(), `SELECT state, count(*) FROM job_ledger WHERE job_name = $1 GROUP BY state`, job)
	if err != nil {
		b.T.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			b.T.Fatal(err)
		}
		out[s] = n
	}
	if err := rows.Err(); err != nil {
		b.T.Fatal(err)
	}
	return out
}

// runDate is the UTC date, by the database clock, on which run id started.
func (b *bundle) runDate(id int64) string {
	b.T.Helper()
	var d string
	err := b.Pool.QueryRow(context.Background(), `SELECT to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM job_runs WHERE id = $1`, id).Scan(&d)
	if err != nil {
		b.T.Fatal(err)
	}
	return d
}
