//go:build unix

package runner_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// chargeProvider is the outside world of the failover tests: a payment service that makes at
// most one charge per idempotency key, as a real one does, and counts every call it gets so
// a test can tell a duplicate call from a duplicate effect.
type chargeProvider struct {
	mu      sync.Mutex
	calls   map[string]int    // idempotency key → calls received
	charges map[string]string // idempotency key → the charge made under it
}

func newChargeProvider() *chargeProvider {
	return &chargeProvider{calls: map[string]int{}, charges: map[string]string{}}
}

// Charge makes the charge of key, or returns the one already made under it.
func (p *chargeProvider) Charge(key string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[key]++
	if ref, ok := p.charges[key]; ok {
		return ref
	}
	ref := fmt.Sprintf("ch_%d", len(p.charges)+1)
	p.charges[key] = ref
	return ref
}

// Lookup returns the charge made under key, if any, without making one.
func (p *chargeProvider) Lookup(key string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ref, ok := p.charges[key]
	return ref, ok
}

func (p *chargeProvider) callsOf(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[key]
}

func (p *chargeProvider) chargesMade() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.charges)
}

// chargeJob charges accounts 1..n once each through the provider, one external item per
// account, checkpointed after each, so a RESUME continues after the last committed account.
// The first call of account holdAt waits until release is closed: the test crashes the
// database while that call is out.
type chargeJob struct {
	name     string
	n        int
	lease    time.Duration
	provider *chargeProvider

	holdAt  int
	atHold  chan struct{} // closed when the call of holdAt starts
	release chan struct{} // closed by the test to let that call return
	held    sync.Once
}

func newChargeJob(name string, n, holdAt int, provider *chargeProvider) *chargeJob {
	return &chargeJob{name: name, n: n, lease: 2 * time.Second, provider: provider,
		holdAt: holdAt, atHold: make(chan struct{}), release: make(chan struct{})}
}

func chargeTarget(i int) string { return fmt.Sprintf("acct-%04d", i) }

func (j *chargeJob) Info() runner.JobInfo {
	// No stop conditions: the target whose answer was lost in the crash is ambiguous, and
	// the resumed run must carry on past it.
	return runner.JobInfo{Name: j.name, Description: "charges accounts", Version: "1", Lease: j.lease,
		Retry: runner.RetryPolicy{MaxAttempts: 1}, StopConditions: []runner.StopCondition{}}
}

func (j *chargeJob) Run(ctx context.Context, run *runner.Run) error {
	last, err := checkpointNumber(run)
	if err != nil {
		return err
	}
	for i := last + 1; i <= j.n; i++ {
		item := runner.Item{Target: chargeTarget(i), Checkpoint: strconv.Itoa(i), External: true, Input: i}
		err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			if i == j.holdAt {
				j.held.Do(func() { close(j.atHold); <-j.release })
			}
			a.SetEffectRef(j.provider.Charge(a.IdempotencyKey))
			a.SetEvidenceRef("receipt:" + a.IdempotencyKey)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Reconcile asks the provider whether the charge of key was made.
func (j *chargeJob) Reconcile(_ context.Context, _, _, key string) (runner.Reconciliation, error) {
	ref, ok := j.provider.Lookup(key)
	if !ok {
		return runner.Reconciliation{}, nil
	}
	return runner.Reconciliation{Applied: true, EffectRef: ref, EvidenceRef: "receipt:" + key}, nil
}

// pairDatabase creates a migrated database of its own on the pair's primary, adds the
// job_output table of itemsJob, and returns its multi-host URL.
func pairDatabase(tb testing.TB, pair *testenv.PostgresPair, prefix string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := pair.MultiHostURL(pair.Primary.Database(tb, prefix))
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close(context.Background())
	if _, err := db.Exec(ctx, `CREATE TABLE job_output (target text PRIMARY KEY, run_id bigint)`); err != nil {
		tb.Fatal(err)
	}
	return url
}

// failoverOutage is how long the failover tests leave the database down between the kill
// and the promotion: a few fires of an every-second schedule and more than a 2s lease.
const failoverOutage = 3 * time.Second

// listeners counts the sessions of the pool's database waiting in a LISTEN.
func listeners(t testing.TB, pool *pgxpool.Pool) int {
	return testbundle.Count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`)
}

// TestPostgresFailoverMidRun: a run is charging accounts through an idempotent provider when
// the PostgreSQL primary is SIGKILLed with a call out, and its streaming standby is promoted.
// The instances reach the new primary through their multi-host URL (target_session_attrs=
// read-write); the cut run is auto-resumed there and the job completes, every account charged
// exactly once (the one whose answer was lost is reconciled from the provider); an
// every-second schedule's fires during the outage each either ran or are recorded missed, none
// twice; and the schedulers' LISTEN comes back: a schedule change made after the failover
// wakes a scheduler whose poll is 10s away.
func TestPostgresFailoverMidRun(t *testing.T) {
	var pair *testenv.PostgresPair
	work := &bundle{Bundle: testbundle.Setup(t, func(tb testing.TB) string {
		pair = testenv.PrivatePostgresPair(tb)
		return pairDatabase(tb, pair, "work_")
	})}
	wake := &bundle{Bundle: testbundle.New(t, func(tb testing.TB) string { return pairDatabase(tb, pair, "wake_") })}

	provider := newChargeProvider()
	const n, holdAt = 300, 100
	charge := newChargeJob("charge", n, holdAt, provider)
	ticker := newItemsJob("ticker", 1)
	ticker.cron = "* * * * * *"
	workDB := testenv.Pool(t, work.URL)
	r := work.runner(func(c *runner.Config) { c.DB = workDB; c.Scheduler = true; c.PollInterval = 200 * time.Millisecond }, charge, ticker)
	woken := newItemsJob("woken", 1)
	woken.cron = "0 0 1 1 *" // yearly
	wake.runner(schedulerOn, woken)
	api := wake.runner(nil, woken)

	first := mustStart(t, r, runner.StartParams{Job: "charge", Actor: "test"})
	<-charge.atHold
	if got := work.count(`SELECT count(*) FROM job_ledger WHERE job_name = 'charge' AND state = 'CONFIRMED'`); got != holdAt-1 {
		t.Fatalf("%d accounts confirmed before the crash; want %d", got, holdAt-1)
	}
	testenv.Eventually(t, 20*time.Second, "the schedulers' first passes and LISTENs on the primary", func() bool {
		return wake.count(`SELECT count(*) FROM job_settings WHERE name = 'woken' AND next_scheduled_at IS NOT NULL`) == 1 &&
			listeners(t, wake.Pool) >= 1 && listeners(t, work.Pool) >= 1 &&
			work.count(`SELECT count(*) FROM job_runs WHERE job_name = 'ticker' AND trigger = 'SCHEDULED'`) >= 1
	})

	pair.Primary.Kill(t)
	killed := time.Now()
	close(charge.release) // the call out returns into a dead database: its answer is lost
	testenv.Eventually(t, 10*time.Second, "the held call to return", func() bool { return provider.chargesMade() == holdAt })
	// Not a wait for the runner: the outage lasts as long as a failover manager takes to see
	// the primary gone and promote the standby, so that scheduled fires fall due in it.
	<-time.After(time.Until(killed.Add(failoverOutage)))
	pair.Promote(t)
	t.Logf("kill to promotion: %s", time.Since(killed).Round(time.Millisecond))
	promoted := time.Now()
	// The test's own pools drop their sessions of the dead primary at once; the runner's
	// find out as they use them.
	work.Pool.Reset()
	wake.Pool.Reset()

	waitReconnected(t, workDB, pair)
	final := completeAfterFailover(t, work, first)
	checkCharges(t, work, r, provider, n, final)
	checkFiresAcrossOutage(t, work, promoted)
	checkListenBack(t, wake, api)
}

// waitReconnected waits until a query through the runner's pool runs on the promoted standby.
func waitReconnected(t *testing.T, pool *pgxpool.Pool, pair *testenv.PostgresPair) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "the runner's pool to reach the promoted standby", func() bool {
		var port int
		var recovering bool
		err := pool.QueryRow(context.Background(), `SELECT current_setting('port')::int, pg_is_in_recovery()`).Scan(&port, &recovering)
		return err == nil && port == pair.Standby.Port && !recovering
	})
}

// completeAfterFailover waits for the run cut by the failover to end FAILED for the
// database's sake (its lease expired meanwhile, or its write found the database gone) and for
// auto-resume to complete the job: the chain from the cut run to the job's last run is made of
// AUTO_RESUME runs, each resuming the one before, the last SUCCEEDED. It returns that run.
func completeAfterFailover(t *testing.T, b *bundle, first int64) *bt.RunRecord {
	t.Helper()
	cut := b.waitStatus(first, bt.StatusFailed, bt.StatusSucceeded)
	t.Logf("the run cut by the failover ended %s (%s): %s", cut.Status, cut.StopReason, cut.Message)
	if cut.Status != bt.StatusFailed || (cut.StopReason != bt.StopLeaseExpired && cut.StopReason != bt.StopDatabase) {
		t.Fatalf("the run cut by the failover ended %s (%s); want FAILED by LEASE_EXPIRED or DATABASE_UNAVAILABLE", cut.Status, cut.StopReason)
	}
	var ch []chainRun
	testenv.Eventually(t, time.Minute, "auto-resume to complete the job", func() bool {
		ch = b.chain("charge")
		return ch[len(ch)-1].status == bt.StatusSucceeded
	})
	if ch[0].id != first || len(ch) < 2 {
		t.Fatalf("runs of the job %+v; want the cut run %d, then its auto-resumes", ch, first)
	}
	for i, c := range ch[1:] {
		prev := ch[i]
		if c.trigger != bt.TriggerAutoResume || c.resumedFrom != prev.id || prev.outcome != bt.AutoResumeResumed || prev.resumedBy != c.id {
			t.Fatalf("run %+v after %+v; want an AUTO_RESUME run resuming it", c, prev)
		}
	}
	return b.run(ch[len(ch)-1].id)
}

// checkCharges resolves the ambiguous accounts from the provider and checks that every
// account is CONFIRMED with the one charge made under its key, called once.
func checkCharges(t *testing.T, b *bundle, r *runner.Runner, p *chargeProvider, n int, final *bt.RunRecord) {
	t.Helper()
	ctx := context.Background()
	amb, err := r.Ledger().Entries(ctx, runner.LedgerFilter{JobName: "charge", States: []runner.LedgerState{bt.LedgerAmbiguous}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d accounts ambiguous after the failover", len(amb))
	for _, e := range amb {
		if _, err := b.reconcile(r, e.ID, "ops"); err != nil {
			t.Fatalf("reconcile %s: %v", e.Target, err)
		}
	}
	rows, err := b.Pool.Query(ctx, `SELECT target_key, state, idempotency_key, COALESCE(effect_ref, '') FROM job_ledger
		WHERE job_name = 'charge' AND generation = $1 ORDER BY target_key`, final.Generation)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for rows.Next() {
		var target, state, key, ref string
		if err := rows.Scan(&target, &state, &key, &ref); err != nil {
			t.Fatal(err)
		}
		seen++
		charge, made := p.Lookup(key)
		switch {
		case state != string(bt.LedgerConfirmed):
			t.Errorf("%s is %s; want CONFIRMED", target, state)
		case !made || ref != charge:
			t.Errorf("%s is CONFIRMED with effect %q; the provider has %q (made %v)", target, ref, charge, made)
		case p.callsOf(key) != 1:
			t.Errorf("%s: the provider was called %d times under its key; want once", target, p.callsOf(key))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen != n || p.chargesMade() != n {
		t.Fatalf("%d ledger rows and %d charges; want %d of each", seen, p.chargesMade(), n)
	}
}

// checkFiresAcrossOutage waits for the every-second job to fire after the promotion, then
// checks every second from its first fire to its last: each either ran or is recorded as a
// fire that did not run (missed in the outage, or skipped as running), never both, never twice.
func checkFiresAcrossOutage(t *testing.T, b *bundle, promoted time.Time) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, "the every-second job to fire after the promotion", func() bool {
		return b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'ticker' AND trigger = 'SCHEDULED' AND scheduled_for > $1`, promoted) >= 1
	})
	if got := b.count(`SELECT count(*) FROM job_schedule_events WHERE job_name = 'ticker' AND outcome = 'SKIPPED_MISSED'`); got == 0 {
		t.Error("no fire recorded missed across the outage")
	}
	const fires = `SELECT scheduled_for, 'run' AS what FROM job_runs WHERE job_name = 'ticker' AND scheduled_for IS NOT NULL
		UNION ALL SELECT scheduled_for, outcome FROM job_schedule_events WHERE job_name = 'ticker'`
	if dup := b.count(`SELECT count(*) FROM (SELECT scheduled_for FROM (` + fires + `) f GROUP BY 1 HAVING count(*) > 1) d`); dup != 0 {
		t.Errorf("%d fires ran or were recorded more than once", dup)
	}
	if gaps := b.count(`WITH f AS (` + fires + `)
		SELECT count(*) FROM generate_series((SELECT min(scheduled_for) FROM f), (SELECT max(scheduled_for) FROM f), interval '1 second') s
		WHERE s NOT IN (SELECT scheduled_for FROM f)`); gaps != 0 {
		t.Errorf("%d fires neither ran nor were recorded", gaps)
	}
}

// checkListenBack waits for a scheduler's LISTEN on the promoted standby, then changes a
// schedule on another instance: only the notification can bring the change to the scheduler
// before its 10s poll.
func checkListenBack(t *testing.T, b *bundle, api *runner.Runner) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, "the scheduler's LISTEN on the promoted standby", func() bool { return listeners(t, b.Pool) >= 1 })
	every := "* * * * * *"
	if _, err := api.Jobs().UpdateSchedule(context.Background(), "woken", runner.ScheduleUpdate{Cron: &every, Actor: "ops"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 8*time.Second, "a run under the new cron (the poll is 10s)", func() bool {
		return b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'woken' AND trigger = 'SCHEDULED'`) >= 1
	})
}

// TestPostgresFailoverRunEndsByItsWorker: when the standby is promoted as soon as the worker
// has found the database gone, well inside the cut run's 10s lease, the run's worker ends the
// run itself, DATABASE_UNAVAILABLE, and auto-resume continues it: the job does not wait for
// the lease to run out. (Promoted before the worker's result write, the write could dial the
// new primary and the run simply go on: under load that happened, and the test failed.)
//
// The first statement after a failover often draws a pooled session of the dead primary and
// fails: "finish run N: begin: conn closed" or "terminating connection due to unexpected
// postmaster exit (SQLSTATE 57P01)". The end used to be retried only when no connection could
// be had, so it was given up, and the run stayed RUNNING until the recoverer ended it by its
// lease (about half the runs here); the end is now retried while the database is away.
func TestPostgresFailoverRunEndsByItsWorker(t *testing.T) {
	var pair *testenv.PostgresPair
	b := &bundle{Bundle: testbundle.Setup(t, func(tb testing.TB) string {
		pair = testenv.PrivatePostgresPair(tb)
		return pairDatabase(tb, pair, "end_")
	})}
	provider := newChargeProvider()
	const n = 60
	charge := newChargeJob("charge", n, 20, provider)
	charge.lease = 10 * time.Second
	// The worker's decision is awaited before the promotion: a result write that found no
	// open connection dials again, and would reach the promoted standby if it came up first.
	cut := make(chan struct{}, 1)
	r := b.runner(func(c *runner.Config) {
		c.Scheduler = true
		c.PollInterval = 200 * time.Millisecond
		c.Logger = slog.New(signalHandler{msg: "run ends: the database went away mid-run", c: cut})
	}, charge)
	first := mustStart(t, r, runner.StartParams{Job: "charge", Actor: "test"})
	<-charge.atHold
	pair.Primary.Kill(t)
	close(charge.release)
	select {
	case <-cut:
	case <-time.After(time.Minute):
		t.Fatal("the worker did not decide within a minute that the database went away")
	}
	pair.Promote(t)
	b.Pool.Reset()

	var ended *bt.RunRecord
	testenv.Eventually(t, time.Minute, "the cut run to end", func() bool { ended = b.run(first); return !ended.Status.Active() })
	if ended.Status != bt.StatusFailed || ended.StopReason != bt.StopDatabase {
		t.Fatalf("the cut run ended %s (%s: %s); want FAILED by DATABASE_UNAVAILABLE, ended by its worker before its lease ran out",
			ended.Status, ended.StopReason, ended.Message)
	}
	final := completeAfterFailover(t, b, first)
	checkCharges(t, b, r, provider, n, final)
}
