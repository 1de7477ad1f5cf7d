package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// TestMain lets the test binary double as a worker process that the crash test kills.
func TestMain(m *testing.M) { testenv.WorkerMain(m, crashChild) }

// crashConfig is demo-settlement with a quick provider that still fails in every way,
// including timeouts after applying.
// batch, above 1, has it pay that many accounts per ProcessBatch.
func crashConfig(accounts, batch int) Config {
	return Config{
		Settlement: SettlementConfig{Accounts: accounts, Batch: batch, StopConditions: []runner.StopCondition{}},
		Provider: ProviderConfig{Latency: 2 * time.Millisecond, ServerErrorRate: 0.03, ThrottleRate: 0.03,
			TimeoutAfterApplyRate: 0.03, RejectRate: 0.01},
	}
}

// crashChild resumes demo-settlement and works until it is killed.
func crashChild() int {
	pool, rc, env, err := testenv.WorkerDeps()
	if err != nil {
		return 2
	}
	accounts, _ := strconv.Atoi(os.Getenv("BATON_CRASH_ACCOUNTS"))
	batch, _ := strconv.Atoi(os.Getenv("BATON_CRASH_BATCH"))
	jobs, _ := Jobs(pool, crashConfig(accounts, batch))
	// A short lease: a killed worker's concurrency slots at the provider come back when its
	// calls' lease would have ended (the test expires the run's lease in the database at once,
	// but not the slots in Redis), so with a long lease the kills would hold them all.
	r, err := runner.New(runner.Config{DB: pool, Redis: rc, Env: env, PoolSize: 1,
		DefaultLease: 3 * time.Second, MaintenanceCron: "-", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := r.Register(context.Background(), jobs[2]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	started, err := r.Start(context.Background(), runner.StartParams{Job: SettlementJobName, Mode: bt.ModeResume})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	id := started.ID
	fmt.Printf("run %d\n", id)
	select {} // until killed
}

// TestCrashAnywhereMakesNoEffectTwice kills a worker running demo-settlement at random
// points, again and again, recovering and resuming each time — every other worker paying in
// batches through ProcessBatch, the rest one account at a time through Process; then finishes
// the work, reconciles what is in doubt and checks that no effect was ever made twice.
func TestCrashAnywhereMakesNoEffectTwice(t *testing.T) {
	b := setup(t)
	trials := 50
	if v, err := strconv.Atoi(os.Getenv("BATON_CRASH_TRIALS")); err == nil && v > 0 {
		trials = v
	}
	accounts := trials * 6
	jobs, provider := Jobs(b.Pool, crashConfig(accounts, 1))
	settle := jobs[2]
	r := b.runner(settle)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	t.Logf("%d trials over %d accounts", trials, accounts)

	inFlightAtKill := map[string]int64{}
	notCalled := 0
	for trial := range trials {
		// Every other worker pays in batches (intents and results for many accounts per
		// commit, results updating the intents in place), the rest one by one.
		batch := 1
		if trial%2 == 1 {
			batch = 6
		}
		w := testenv.StartWorker(t, fmt.Sprintf("trial %d: child", trial), b.URL, b.Env,
			"BATON_CRASH_ACCOUNTS="+strconv.Itoa(accounts), "BATON_CRASH_BATCH="+strconv.Itoa(batch))
		id := w.Run
		// Kill at a random point: before, during or after calls and commits.
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond) // the crash point, not a wait for async work
		w.Kill()

		// The worker is dead: let its lease run out now (as time would). This UPDATE waits for
		// any write the worker sent before dying (it holds the run's row lock), and fences off
		// the rest, so what is IN_FLIGHT after it is exactly what the kill left in doubt. The
		// lease ends an hour back: a statement the dead worker began a moment ago judges the
		// fence by its own start time, and must find the lease over too.
		if _, err := b.Pool.Exec(ctx, `UPDATE job_runs SET lease_until = now() - interval '1 hour'
			WHERE id = $1 AND status IN ('STARTING', 'RUNNING')`, id); err != nil {
			t.Fatal(err)
		}
		rows, err := b.Pool.Query(ctx, `SELECT target_key FROM job_ledger WHERE run_id = $1 AND state = 'IN_FLIGHT'`, id)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var target string
			_ = rows.Scan(&target)
			inFlightAtKill[target] = id
		}
		rows.Close()
		// The recoverer skips a run whose row the dead worker's last statement still locks
		// (its backend may not have noticed the death yet); a later pass takes it.
		testenv.Eventually(t, 10*time.Second, fmt.Sprintf("trial %d: the dead worker's run to be recovered", trial), func() bool {
			r.RecoverExpired(ctx)
			return b.count(`SELECT count(*) FROM job_runs WHERE status IN ('STARTING', 'RUNNING')`) == 0
		})
		if n := b.count(`SELECT count(*) FROM job_ledger WHERE state = 'IN_FLIGHT'`); n != 0 {
			t.Fatalf("trial %d: %d IN_FLIGHT rows survived recovery", trial, n)
		}
		// A target whose holder died waiting for its downstream turn was never called: the
		// recoverer settles it "not called" rather than in doubt. It must have made no effect.
		for target, run := range inFlightAtKill {
			if run != id {
				continue
			}
			if s := b.stateOf(target); s != string(bt.LedgerAmbiguous) {
				if effects := b.count(`SELECT count(*) FROM demo_provider_effects e JOIN job_ledger l
					ON e.idempotency_key = l.idempotency_key WHERE l.target_key = $1`, target); effects != 0 {
					t.Errorf("trial %d: %s was settled %s after the kill, as not called, but made %d effects", trial, target, s, effects)
				}
				delete(inFlightAtKill, target)
				notCalled++
			}
		}
	}

	// Finish the work in this process, then reconcile everything in doubt.
	last := b.waitStatus(r, b.start(r, runner.StartParams{Job: SettlementJobName, Mode: bt.ModeResume}), bt.StatusSucceeded)
	t.Logf("killed %d times; %d targets were in flight at a kill, %d more waited for a turn and were not called; provider %+v",
		trials, len(inFlightAtKill), notCalled, provider.Stats())
	for target := range inFlightAtKill {
		if s := b.stateOf(target); s != string(bt.LedgerAmbiguous) {
			var run, attempt, effects int
			_ = b.Pool.QueryRow(ctx, `SELECT run_id, attempt, (SELECT count(*) FROM demo_provider_effects e WHERE e.idempotency_key = l.idempotency_key)
				FROM job_ledger l WHERE target_key = $1`, target).Scan(&run, &attempt, &effects)
			t.Errorf("%s was IN_FLIGHT at a kill (run %d) and is %s (run %d, attempt %d, %d effects), want AMBIGUOUS_EFFECT",
				target, inFlightAtKill[target], s, run, attempt, effects)
		}
	}
	checkNoDuplicateEffects(t, b)
	checkCountsAddUp(t, b, last.Generation)

	ambiguous, err := r.Ledger().Entries(ctx, runner.LedgerFilter{JobName: SettlementJobName, States: []runner.LedgerState{bt.LedgerAmbiguous}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ambiguous {
		req, err := r.Ledger().Reconcile(ctx, e.ID, "crash-test")
		if err == nil {
			req, err = r.Ledger().AwaitReconcile(ctx, req.ID)
		}
		if err != nil || req.Status != bt.ReconcileDone {
			t.Fatalf("reconcile %s: %v %+v", e.Target, err, req)
		}
		got, err := r.Ledger().Entry(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		effects := b.count(`SELECT count(*) FROM demo_provider_effects WHERE idempotency_key = $1`, e.IdempotencyKey)
		switch {
		case got.State == bt.LedgerConfirmed && effects != 1:
			t.Errorf("%s reconciled CONFIRMED with %d effects", e.Target, effects)
		case got.State == bt.LedgerNotApplied && effects != 0:
			t.Errorf("%s reconciled NOT_APPLIED with %d effects", e.Target, effects)
		}
	}
	// A replay of what was not applied pays those, once (with a healthy provider, so the
	// replay itself leaves nothing in doubt).
	provider.SetConfig(ProviderConfig{Latency: Off, ServerErrorRate: Off, ThrottleRate: Off, TimeoutAfterApplyRate: Off, RejectRate: Off})
	if len(ambiguous) > 0 || b.count(`SELECT count(*) FROM job_ledger WHERE state = 'TRANSIENT'`) > 0 {
		b.waitStatus(r, b.start(r, runner.StartParams{Job: SettlementJobName, Trigger: bt.TriggerReplay, Mode: bt.ModeResume,
			Generation: last.Generation, FromStart: true, ReplayScope: bt.ScopeTransient}), bt.StatusSucceeded)
	}
	checkNoDuplicateEffects(t, b)
	checkCountsAddUp(t, b, last.Generation)
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE state IN ('AMBIGUOUS_EFFECT', 'IN_FLIGHT', 'NOT_APPLIED')`); n != 0 {
		t.Fatalf("%d targets still in doubt or unapplied after reconcile and replay", n)
	}
}

func (b *bundle) stateOf(target string) string {
	var s string
	if err := b.Pool.QueryRow(context.Background(), `SELECT state FROM job_ledger WHERE target_key = $1`, target).Scan(&s); err != nil {
		b.T.Fatal(err)
	}
	return s
}

// checkNoDuplicateEffects: no key has two provider effects, and every CONFIRMED target has
// exactly one.
func checkNoDuplicateEffects(t *testing.T, b *bundle) {
	t.Helper()
	if n := b.count(`SELECT count(*) FROM (SELECT idempotency_key FROM demo_provider_effects GROUP BY 1 HAVING count(*) > 1) d`); n != 0 {
		t.Fatalf("%d idempotency keys have two or more provider effects: an effect was made twice", n)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger l WHERE l.state = 'CONFIRMED' AND
		(SELECT count(*) FROM demo_provider_effects e WHERE e.idempotency_key = l.idempotency_key) <> 1`); n != 0 {
		t.Fatalf("%d CONFIRMED targets without exactly one provider effect", n)
	}
}

// checkCountsAddUp: the generation's counters equal a COUNT over the ledger.
func checkCountsAddUp(t *testing.T, b *bundle, gen int64) {
	t.Helper()
	if n := b.count(`SELECT count(*) FROM (
		SELECT state, count(*) AS n FROM job_ledger WHERE generation = $1 GROUP BY state
	) l FULL JOIN (SELECT state, sum(n) AS n FROM job_ledger_counts WHERE generation = $1 AND run_id = 0 GROUP BY state HAVING sum(n) <> 0) c USING (state)
	WHERE l.n IS DISTINCT FROM c.n`, gen); n != 0 {
		t.Fatalf("%d ledger states whose counter disagrees with the rows", n)
	}
}
