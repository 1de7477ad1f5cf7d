//go:build unix

package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
)

// BenchmarkHAPostgresPromotion fails PostgreSQL over under a run, once per iteration, on a
// fresh primary and synchronous standby and a fresh runner reaching them through the
// multi-host URL: a run is charging accounts (a call out) when the primary is SIGKILLed and
// the standby promoted at once. It reports, averaged over the iterations, s/promotion (kill
// to the standby accepting writes) and s/first-commit (kill to the first account committed
// again: by the AUTO_RESUME run that continues the job, which starts once the cut run has
// ended and the job's auto-resume backoff, 5s by default, has passed; or by the cut run itself
// when its retried writes reach the new primary before its 2s lease runs out).
func BenchmarkHAPostgresPromotion(b *testing.B) {
	var promotion, firstCommit time.Duration
	for i := 0; i < b.N; i++ {
		p, c := promoteOnce(b)
		promotion += p
		firstCommit += c
	}
	b.ReportMetric(promotion.Seconds()/float64(b.N), "s/promotion")
	b.ReportMetric(firstCommit.Seconds()/float64(b.N), "s/first-commit")
}

// promoteOnce runs one failover under a run and returns how long the promotion took and how
// long until the first commit after it, both from the kill. It stops its runner and servers.
func promoteOnce(b *testing.B) (promotion, firstCommit time.Duration) {
	b.Helper()
	pair := testenv.PrivatePostgresPair(b)
	defer pair.Primary.Stop(b)
	defer pair.Standby.Stop(b)
	tb := testbundle.New(b, func(tb testing.TB) string { return pairDatabase(tb, pair, "ha_") })
	job := newChargeJob("charge", 300, 50, newChargeProvider())
	cfg := tb.BenchConfig()
	cfg.PoolSize, cfg.Scheduler, cfg.PollInterval, cfg.DefaultLease = 4, true, 200*time.Millisecond, 2*time.Second
	cfg.DB = testenv.Pool(b, tb.URL)
	defer cfg.DB.Close()
	r := tb.NewRunner(cfg, job)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	name := dbName(b, tb.Pool)
	first := mustStart(b, r, runner.StartParams{Job: "charge", Actor: "bench"})
	<-job.atHold
	pair.Primary.Kill(b)
	killed := time.Now()
	close(job.release)
	pair.Promote(b)
	promotion = time.Since(killed)

	direct := testenv.Pool(b, pair.Standby.URL(name))
	defer direct.Close()
	pollFast(b, time.Minute, "an account committed after the failover", func() bool {
		return testbundle.Count(b, direct, `SELECT count(*) FROM job_ledger WHERE job_name = 'charge' AND state = 'CONFIRMED'`) > job.holdAt-1
	})
	firstCommit = time.Since(killed)
	logCutRun(b, direct, first)
	return promotion, firstCommit
}

// logCutRun waits for the run cut by the failover to end, and logs how it ended.
func logCutRun(b *testing.B, db *pgxpool.Pool, cut int64) {
	b.Helper()
	pollFast(b, time.Minute, "the cut run to end", func() bool {
		return testbundle.Count(b, db, `SELECT count(*) FROM job_runs WHERE id = $1 AND status NOT IN ('STARTING', 'RUNNING')`, cut) == 1
	})
	var status, reason string
	if err := db.QueryRow(context.Background(), `SELECT status, COALESCE(stop_reason, '') FROM job_runs WHERE id = $1`, cut).Scan(&status, &reason); err != nil {
		b.Fatal(err)
	}
	b.Logf("the cut run ended %s (%s)", status, reason)
}

// pollFast polls cond every 5ms, so that a measured moment is not rounded up to a longer poll.
func pollFast(b *testing.B, within time.Duration, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func dbName(b *testing.B, pool *pgxpool.Pool) string {
	b.Helper()
	var name string
	if err := pool.QueryRow(context.Background(), `SELECT current_database()`).Scan(&name); err != nil {
		b.Fatal(err)
	}
	return name
}
