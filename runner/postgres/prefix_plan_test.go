package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store"
)

// A targetPrefix filter of the ledger reaches the rows it wants through an index on the target
// key, not by walking every row of the job: the store's own statement, explained with its
// arguments after ANALYZE over a job of 60,000 rows of which the prefix names 10.
func TestLedgerTargetPrefixUsesIndex(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := testenv.Schema(t)
	admin := testenv.Pool(t, url)
	for _, sql := range []string{
		`INSERT INTO job_ledger (job_name, generation, target_key, state, idempotency_key, run_id)
			SELECT 'payouts', 1 + k % 3, 'acct-' || lpad(k::text, 6, '0'), 'CONFIRMED', 'k' || k, 1 + k / 1000
			FROM generate_series(1, 60000) AS k`,
		`INSERT INTO job_ledger (job_name, generation, target_key, state, idempotency_key, run_id)
			SELECT 'other', 1, 'acct-' || k, 'CONFIRMED', 'o' || k, 1 FROM generate_series(1, 5000) AS k`,
		`ANALYZE job_ledger`,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}

	rec := &statementRecorder{args: map[string][]any{}}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := postgres.New(pool)

	for _, q := range []store.LedgerQuery{
		{JobName: "payouts", TargetPrefix: "acct-01234"},
		{JobName: "payouts", TargetPrefix: "acct-01234", Generation: 2},
		{JobName: "payouts", TargetPrefix: "acct-0123_", AfterID: 5}, // the _ is a character, not a wildcard
	} {
		rec.begin(q.TargetPrefix)
		got, err := s.Ledger(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want := 10
		if q.Generation != 0 {
			want = 4 // 12340, 12343, 12346, 12349: 1 + k % 3 = 2
		}
		if q.TargetPrefix == "acct-0123_" {
			want = 0
		}
		if len(got) != want {
			t.Fatalf("%+v: %d entries, want %d", q, len(got), want)
		}
		sqls := rec.end()
		if len(sqls) != 1 {
			t.Fatalf("%+v ran %d statements", q, len(sqls))
		}
		args := append([]any{pgx.QueryExecModeExec}, rec.args[sqls[0]]...)
		var plan []struct{ Plan planNode }
		if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sqls[0], args...).Scan(&plan); err != nil {
			t.Fatalf("explain: %v\n%s", err, sqls[0])
		}
		checkPlan(t, "ledger/job/prefix", sqls[0], &plan[0].Plan, "target_key")
	}
}
