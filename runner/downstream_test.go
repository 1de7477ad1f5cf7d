package runner_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// startOn starts job on its own runner (instance name) and returns the runner and the run.
func startOn(b *bundle, instance string, job *dsJob, mod func(*runner.Config)) (*runner.Runner, int64) {
	b.T.Helper()
	r := b.runner(func(c *runner.Config) {
		c.Instance = instance
		if mod != nil {
			mod(c)
		}
	}, job)
	return r, mustStart(b.T, r, runner.StartParams{Job: job.name})
}

// Three instances call one downstream limited to 50 calls/s with a burst of 10: the system's
// own arrival times show at most 60 calls in any second over 30 s, and the limit is used.
func TestDownstreamRateHoldsAcrossInstances(t *testing.T) {
	b := setup(t)
	sys := &fakeSystem{latency: 5 * time.Millisecond}
	lim := bt.DownstreamLimits{RatePerSecond: 50, Burst: 10}
	var rs []*runner.Runner
	var ids []int64
	for i := 1; i <= 3; i++ {
		job := &dsJob{name: fmt.Sprintf("rate-%d", i), ds: "provider", defaults: &lim, sys: sys, n: 1_000_000, batch: 40, parallelism: 8, lease: 10 * time.Second}
		r, id := startOn(b, fmt.Sprintf("rate-instance-%d", i), job, nil)
		rs, ids = append(rs, r), append(ids, id)
	}
	waitCalls(t, sys, 1, 20*time.Second)
	calls, _, _ := sys.snapshot()
	from := calls[0]
	const span = 30 * time.Second
	testenv.Eventually(t, span+20*time.Second, "30 s of calls", func() bool {
		c, _, _ := sys.snapshot()
		return c[len(c)-1].Sub(from) >= span
	})
	stopRuns(b, rs[0], ids...)
	calls, _, _ = sys.snapshot()
	calls = between(calls, from, from.Add(span))
	if most := maxInWindow(calls, time.Second); most > 60 {
		t.Errorf("%d calls arrived within one second; the limit of 50/s with a burst of 10 allows 60", most)
	}
	if rate := float64(len(calls)) / span.Seconds(); rate < 0.9*50 {
		t.Errorf("the instances made %.1f calls/s on average; a limit of 50/s should be used to at least 45/s", rate)
	}
	for _, id := range ids {
		if n := b.count(`SELECT count(*)::int FROM job_ledger l JOIN job_runs r ON r.job_name = l.job_name WHERE r.id = $1 AND l.state = 'IN_FLIGHT'`, id); n != 0 {
			t.Errorf("run %d left %d targets IN_FLIGHT after its cancel", id, n)
		}
	}
}

// A concurrency limit of 5 holds across three instances that would each make 4 calls at
// once, and is used to the full.
func TestDownstreamConcurrencyHoldsAcrossInstances(t *testing.T) {
	b := setup(t)
	sys := &fakeSystem{latency: 30 * time.Millisecond}
	lim := bt.DownstreamLimits{Concurrency: 5}
	var ids []int64
	var r0 *runner.Runner
	for i := 1; i <= 3; i++ {
		job := &dsJob{name: fmt.Sprintf("conc-%d", i), ds: "ledger-api", defaults: &lim, sys: sys, n: 150, batch: 25, parallelism: 4, lease: 10 * time.Second}
		r, id := startOn(b, fmt.Sprintf("conc-instance-%d", i), job, nil)
		ids = append(ids, id)
		r0 = r
	}
	for _, id := range ids {
		if got := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed); got.Status != bt.StatusSucceeded || got.Succeeded != 150 {
			t.Fatalf("run %d: %s with %d succeeded; want SUCCEEDED with 150", id, got.Status, got.Succeeded)
		}
	}
	calls, _, peak := sys.snapshot()
	if peak > 5 {
		t.Errorf("%d calls were in flight at once; the limit is 5", peak)
	}
	if peak < 5 {
		t.Errorf("at most %d calls were in flight at once: the limit of 5 was never used to the full", peak)
	}
	if len(calls) != 450 {
		t.Errorf("the system took %d calls; want one per target, 450", len(calls))
	}
	d, err := r0.Downstreams().Get(context.Background(), "ledger-api")
	if err != nil {
		t.Fatal(err)
	}
	if d.Stats.InFlight != 0 {
		t.Errorf("after every run ended the downstream shows %d slots held; want 0", d.Stats.InFlight)
	}
}

// The system's true limit (20/s) is below the configured one (50/s): the 429s slow the
// downstream for everyone, so throughput settles near the true limit within 10 s with few
// 429s after that, and climbs back once the system lifts its limit.
func TestDownstreamAdaptsToPushback(t *testing.T) {
	b := setup(t)
	sys := &fakeSystem{latency: 5 * time.Millisecond}
	sys.setLimit(20, 5)
	lim := bt.DownstreamLimits{RatePerSecond: 50, Burst: 10}
	var rs []*runner.Runner
	var ids []int64
	for i := 1; i <= 3; i++ {
		job := &dsJob{name: fmt.Sprintf("storm-%d", i), ds: "llm", defaults: &lim, sys: sys, n: 1_000_000, batch: 20, parallelism: 4, lease: 10 * time.Second, attempts: 50}
		r, id := startOn(b, fmt.Sprintf("storm-instance-%d", i), job, nil)
		rs, ids = append(rs, r), append(ids, id)
	}
	waitCalls(t, sys, 1, 20*time.Second)
	calls, _, _ := sys.snapshot()
	from := calls[0]
	settled, until := from.Add(10*time.Second), from.Add(25*time.Second)
	testenv.Eventually(t, 45*time.Second, "25 s of calls under the true limit", func() bool { return time.Now().After(until) })
	sys.setLimit(0, 0)
	lifted := time.Now()

	calls, throttled, _ := sys.snapshot()
	ok, refused := len(between(calls, settled, until)), len(between(throttled, settled, until))
	rate := float64(ok) / until.Sub(settled).Seconds()
	t.Logf("after 10 s: %.1f calls/s accepted, %d of %d calls answered 429", rate, refused, ok+refused)
	if rate < 0.6*20 {
		t.Errorf("throughput after 10 s was %.1f calls/s; it should settle near the true limit of 20/s", rate)
	}
	if share := float64(refused) / float64(ok+refused); share >= 0.05 {
		t.Errorf("%.1f%% of calls after 10 s were answered 429; want under 5%%", share*100)
	}
	// Recovery: some 2 s after the lift carries more than the true limit allowed.
	testenv.Eventually(t, 40*time.Second, "throughput to climb past the old true limit", func() bool {
		c, _, _ := sys.snapshot()
		now := time.Now()
		return now.Sub(lifted) > 2*time.Second && float64(len(between(c, now.Add(-2*time.Second), now)))/2 > 35
	})
	stopRuns(b, rs[0], ids...)
}

// A limit changed on one instance applies on every instance within a second.
func TestDownstreamChangeAppliesEverywhereWithinASecond(t *testing.T) {
	b := setup(t)
	lim := bt.DownstreamLimits{RatePerSecond: 10, Burst: 2}
	var rs []*runner.Runner
	for i := 1; i <= 3; i++ {
		job := &dsJob{name: fmt.Sprintf("change-%d", i), ds: "provider", defaults: &lim, sys: &fakeSystem{}, n: 1, batch: 1, parallelism: 1}
		rs = append(rs, b.runner(func(c *runner.Config) { c.Instance = fmt.Sprintf("change-instance-%d", i) }, job))
	}
	for round, rate := range []float64{7, 123.5} {
		setLimits(t, rs[round], bt.DownstreamUpdate{Name: "provider", RatePerSecond: ptr(rate), Burst: ptr(3), Reason: "test"})
		changed := time.Now()
		for i, r := range rs {
			testenv.Eventually(t, time.Second-time.Since(changed), fmt.Sprintf("instance %d to apply rate %g within 1 s", i+1, rate), func() bool {
				l, ok := r.DownstreamLimits("provider")
				return ok && l.RatePerSecond == rate && l.Burst == 3
			})
		}
	}
}

// Bad input is refused with a coded error and changes nothing.
func TestDownstreamUpdateRefusesBadInput(t *testing.T) {
	b := setup(t)
	lim := bt.DownstreamLimits{RatePerSecond: 10, Burst: 2, Concurrency: 3}
	r := b.runner(nil, &dsJob{name: "bad-input", ds: "provider", defaults: &lim, sys: &fakeSystem{}, n: 1, batch: 1, parallelism: 1})
	ctx := context.Background()
	before, err := r.Downstreams().Get(ctx, "provider")
	if err != nil {
		t.Fatal(err)
	}
	window := bt.QuotaWindow("WEEK")
	cases := []struct {
		name  string
		u     bt.DownstreamUpdate
		code  bt.Code
		field string
	}{
		{"negative rate", bt.DownstreamUpdate{Name: "provider", RatePerSecond: ptr(-1.0)}, bt.CodeInvalidInput, "ratePerSecond"},
		{"zero rate", bt.DownstreamUpdate{Name: "provider", RatePerSecond: ptr(0.0)}, bt.CodeInvalidInput, "ratePerSecond"},
		{"NaN rate", bt.DownstreamUpdate{Name: "provider", RatePerSecond: ptr(math.NaN())}, bt.CodeInvalidInput, "ratePerSecond"},
		{"zero concurrency", bt.DownstreamUpdate{Name: "provider", Concurrency: ptr(0)}, bt.CodeInvalidInput, "concurrency"},
		{"negative quota", bt.DownstreamUpdate{Name: "provider", Quota: ptr(int64(-5))}, bt.CodeInvalidInput, "quota"},
		{"huge burst", bt.DownstreamUpdate{Name: "provider", Burst: ptr(1_000_000)}, bt.CodeInvalidInput, "burst"},
		{"unknown window", bt.DownstreamUpdate{Name: "provider", Quota: ptr(int64(5)), QuotaWindow: &window}, bt.CodeInvalidInput, "quotaWindow"},
		{"set and cleared", bt.DownstreamUpdate{Name: "provider", RatePerSecond: ptr(5.0), Clear: []bt.DownstreamLimit{bt.LimitRate}}, bt.CodeInvalidInput, "clear"},
		{"nothing", bt.DownstreamUpdate{Name: "provider"}, bt.CodeInvalidInput, "input"},
		{"unknown downstream", bt.DownstreamUpdate{Name: "nobody", RatePerSecond: ptr(5.0)}, bt.CodeNotFound, ""},
		{"long name", bt.DownstreamUpdate{Name: strings.Repeat("x", 101), RatePerSecond: ptr(5.0)}, bt.CodeInvalidInput, "name"},
	}
	for _, c := range cases {
		_, err := r.Downstreams().Update(ctx, "test-operator", c.u)
		var e *bt.Error
		if !errors.As(err, &e) || e.Code != c.code || e.Field != c.field {
			t.Errorf("%s: got %v; want %s on field %q", c.name, err, c.code, c.field)
		}
	}
	// A burst without a rate is refused after the rate is cleared in the same update.
	if _, err := r.Downstreams().Update(ctx, "test-operator", bt.DownstreamUpdate{Name: "provider", Clear: []bt.DownstreamLimit{bt.LimitConcurrency}, Burst: ptr(4)}); err != nil {
		t.Fatalf("a burst with the rate kept: %v", err)
	}
	after, err := r.Downstreams().Get(ctx, "provider")
	if err != nil {
		t.Fatal(err)
	}
	want := before.Limits
	want.Concurrency, want.Burst = 0, 4
	if after.Limits != want || after.Version != before.Version+1 {
		t.Errorf("after the refused updates and one good one: %+v version %d; want %+v version %d", after.Limits, after.Version, want, before.Version+1)
	}
	if n := b.count(`SELECT count(*)::int FROM audit_log WHERE action = 'updateDownstream'`); n != len(cases)+1 {
		t.Errorf("%d updateDownstream audit entries; want one per attempt, %d", n, len(cases)+1)
	}
}

// A paused downstream holds the calls at the boundary: nothing is sent and no intent is
// written, the run keeps its lease well past it and does not fail, and a resume lets it finish.
func TestDownstreamPauseHoldsCallsAtTheBoundary(t *testing.T) {
	b := setup(t)
	sys := &fakeSystem{}
	lim := bt.DownstreamLimits{RatePerSecond: 100, Burst: 10}
	job := &dsJob{name: "paused", ds: "provider", defaults: &lim, sys: sys, n: 30, batch: 10, parallelism: 4, lease: 2 * time.Second}
	r := b.runner(nil, job)
	setLimits(t, r, bt.DownstreamUpdate{Name: "provider", Paused: ptr(true), Reason: "provider maintenance"})
	id := mustStart(t, r, runner.StartParams{Job: job.name})
	started := time.Now()
	testenv.Eventually(t, 20*time.Second, "the run to hold for three leases", func() bool {
		return time.Since(started) > 3*job.lease && b.run(id).Status == bt.StatusRunning
	})
	if calls, _, _ := sys.snapshot(); len(calls) != 0 {
		t.Fatalf("%d calls went to a paused downstream", len(calls))
	}
	if got := b.run(id); got.Status != bt.StatusRunning || got.Processed != 0 {
		t.Fatalf("held run: %s with %d processed; want RUNNING with none", got.Status, got.Processed)
	}
	if n := b.count(`SELECT count(*)::int FROM job_ledger WHERE job_name = 'paused'`); n != 0 {
		t.Fatalf("%d ledger rows written while held; want none (the hold is before the intents)", n)
	}
	setLimits(t, r, bt.DownstreamUpdate{Name: "provider", Paused: ptr(false)})
	if got := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed); got.Status != bt.StatusSucceeded || got.Succeeded != 30 {
		t.Fatalf("after the resume: %s with %d succeeded; want SUCCEEDED with 30", got.Status, got.Succeeded)
	}
	if calls, _, _ := sys.snapshot(); len(calls) != 30 {
		t.Errorf("%d calls; want one per target, 30", len(calls))
	}
}

// A call that gets no turn before half its lease is not made: the target is retried in the
// run, without counting as an attempt, and ends CONFIRMED with a single call.
func TestDownstreamNoTurnIsNotAFailure(t *testing.T) {
	b := setup(t)
	sys := &fakeSystem{}
	lim := bt.DownstreamLimits{RatePerSecond: 4, Burst: 1}
	job := &dsJob{name: "slow-turns", ds: "provider", defaults: &lim, sys: sys, n: 12, batch: 12, parallelism: 12, lease: 2 * time.Second}
	reg := prometheus.NewRegistry()
	r := b.runner(func(c *runner.Config) { c.Registerer = reg }, job)
	id := mustStart(t, r, runner.StartParams{Job: job.name})
	if got := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed); got.Status != bt.StatusSucceeded || got.Succeeded != 12 || got.Failed != 0 {
		t.Fatalf("run: %s (%s), %d succeeded, %d failed; want SUCCEEDED with 12 and none failed", got.Status, got.Message, got.Succeeded, got.Failed)
	}
	if calls, _, _ := sys.snapshot(); len(calls) != 12 {
		t.Errorf("%d calls; want one per target, 12", len(calls))
	}
	if n := b.count(`SELECT count(*)::int FROM job_ledger WHERE job_name = 'slow-turns' AND (state <> 'CONFIRMED' OR attempt <> 1)`); n != 0 {
		t.Errorf("%d targets not CONFIRMED on their first attempt", n)
	}
	// At 4 calls/s a call waits at most half of a 2 s lease: 12 calls at once cannot all get
	// their turn in the first round.
	if n := counterValue(t, reg, "baton_downstream_calls_total", map[string]string{"downstream": "provider", "outcome": "not_called"}); n == 0 {
		t.Error("no call went without its turn: the test did not reach the not-called path")
	}
	if n := counterValue(t, reg, "baton_downstream_calls_total", map[string]string{"downstream": "provider", "outcome": "ok"}); n != 12 {
		t.Errorf("baton_downstream_calls_total{outcome=ok} = %v; want 12", n)
	}
}

// A spent quota holds the calls at the boundary until the window ends or the quota is raised.
func TestDownstreamQuotaHoldsUntilRaised(t *testing.T) {
	b := setup(t)
	sys := &fakeSystem{}
	lim := bt.DownstreamLimits{Quota: 5, QuotaWindow: bt.QuotaDay}
	job := &dsJob{name: "quota", ds: "search-api", defaults: &lim, sys: sys, n: 8, batch: 1, parallelism: 1, lease: 2 * time.Second}
	r := b.runner(nil, job)
	id := mustStart(t, r, runner.StartParams{Job: job.name})
	waitCalls(t, sys, 5, 20*time.Second)
	held := time.Now()
	testenv.Eventually(t, 20*time.Second, "the run to hold past two leases", func() bool {
		return time.Since(held) > 2*job.lease && b.run(id).Status == bt.StatusRunning
	})
	if calls, _, _ := sys.snapshot(); len(calls) != 5 {
		t.Fatalf("%d calls under a quota of 5", len(calls))
	}
	setLimits(t, r, bt.DownstreamUpdate{Name: "search-api", Quota: ptr(int64(100)), Reason: "bought more"})
	if got := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed); got.Status != bt.StatusSucceeded || got.Succeeded != 8 {
		t.Fatalf("after the raise: %s with %d succeeded; want SUCCEEDED with 8", got.Status, got.Succeeded)
	}
	d, err := r.Downstreams().Get(context.Background(), "search-api")
	if err != nil {
		t.Fatal(err)
	}
	if d.Stats.QuotaUsed != 8 {
		t.Errorf("quota used %d; want 8", d.Stats.QuotaUsed)
	}
}

// slotHolderJob takes both slots of downstream "scarce" (concurrency 2) with calls that never
// return, for a worker process the test kills.
func slotHolderJob() runner.Job {
	info := runner.JobInfo{Name: "slot-holder", Lease: 3 * time.Second, StopConditions: []runner.StopCondition{},
		Downstreams: []runner.Downstream{{Name: "scarce", Defaults: bt.DownstreamLimits{Concurrency: 2}}}}
	return runner.NewJob(info, func(ctx context.Context, run *runner.Run) error {
		items := []runner.Item{{Target: "a", Downstream: "scarce"}, {Target: "b", Downstream: "scarce"}, {Target: "c", Downstream: "scarce"}}
		return run.ProcessBatch(ctx, items, 3, func(ctx context.Context, _ runner.Item, _ *runner.Attempt) error {
			select {} // a call that hangs, its context ignored
		})
	})
}

// An instance SIGKILLed while its calls hold concurrency slots: the slots come back by
// themselves within the calls' lease, and another instance's calls take them.
func TestDownstreamSlotsOfAKilledInstanceComeBack(t *testing.T) {
	b := setup(t)
	w := testenv.StartWorker(t, "slot holder", b.URL, b.Env, "BATON_TEST_CHILD_JOB=slots")
	sys := &fakeSystem{}
	job := &dsJob{name: "slot-taker", ds: "scarce", sys: sys, n: 4, batch: 4, parallelism: 2, lease: 5 * time.Second}
	r := b.runner(nil, job)
	inFlight := func() int {
		d, err := r.Downstreams().Get(context.Background(), "scarce")
		if err != nil {
			t.Fatal(err)
		}
		return d.Stats.InFlight
	}
	testenv.Eventually(t, 20*time.Second, "the worker process to hold both slots", func() bool { return inFlight() == 2 })
	w.Kill()
	killed := time.Now()
	if n := inFlight(); n != 2 {
		t.Fatalf("just after the kill %d slots are held; want the dead instance's 2", n)
	}
	testenv.Eventually(t, 3*time.Second+2*time.Second, "the slots to come back within the dead calls' lease (3 s)", func() bool { return inFlight() == 0 })
	t.Logf("slots back %s after the kill", time.Since(killed).Round(10*time.Millisecond))
	id := mustStart(t, r, runner.StartParams{Job: job.name})
	if got := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed); got.Status != bt.StatusSucceeded || got.Succeeded != 4 {
		t.Fatalf("a run after the slots came back: %s with %d succeeded; want SUCCEEDED with 4", got.Status, got.Succeeded)
	}
}

// With Redis unreachable each instance limits on its share of the limit: the rate holds
// within the shares' rounding, and the DOWNSTREAM_LIMIT_DEGRADED alarm fires.
func TestDownstreamRedisDownFallsBackToLocalShare(t *testing.T) {
	b := setup(t)
	srv := testenv.PrivateRedis(t)
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled, opt.MaxRetries = true, -1
	rc := redis.NewClient(opt)
	t.Cleanup(func() { _ = rc.Close() })
	sys := &fakeSystem{latency: 2 * time.Millisecond}
	lim := bt.DownstreamLimits{RatePerSecond: 30, Burst: 3}
	var rs []*runner.Runner
	var ids []int64
	for i := 1; i <= 3; i++ {
		job := &dsJob{name: fmt.Sprintf("share-%d", i), ds: "provider", defaults: &lim, sys: sys, n: 1_000_000, batch: 10, parallelism: 4, lease: 10 * time.Second}
		r, id := startOn(b, fmt.Sprintf("share-instance-%d", i), job, func(c *runner.Config) { c.Redis = rc })
		rs, ids = append(rs, r), append(ids, id)
	}
	waitCalls(t, sys, 50, 30*time.Second)
	testenv.Eventually(t, 15*time.Second, "every instance to count 3 live instances", func() bool {
		return b.count(`SELECT count(*)::int FROM runner_instances WHERE heartbeat_at > now() - interval '5 seconds'`) >= 3
	})
	srv.Stop(t)
	down := time.Now()
	testenv.Eventually(t, 30*time.Second, "the DOWNSTREAM_LIMIT_DEGRADED alarm", func() bool {
		alerts, err := rs[1].Alarms().Active(context.Background())
		if err != nil {
			return false
		}
		for _, a := range alerts {
			if a.Kind == bt.AlertDownstreamDegraded {
				return true
			}
		}
		return false
	})
	from := time.Now()
	testenv.Eventually(t, 30*time.Second, "10 s of calls on the local shares", func() bool { return time.Since(from) > 10*time.Second })
	calls, _, _ := sys.snapshot()
	calls = between(calls, from, from.Add(10*time.Second))
	// Each instance: 10/s with a burst of ceil(3/3) = 1, so at most 11 in a second, 33 in all.
	if most := maxInWindow(calls, time.Second); most > 33 {
		t.Errorf("%d calls within one second with Redis down; the shares allow 3 × (10 + 1) = 33", most)
	}
	if len(calls) < 10*15 {
		t.Errorf("only %d calls in 10 s with Redis down: the local shares (30/s in all) should keep the calls going", len(calls))
	}
	t.Logf("Redis down %s: %d calls in 10 s, at most %d in a second", time.Since(down).Round(time.Second), len(calls), maxInWindow(calls, time.Second))
	// The runs end while Redis is down; with no call left to find Redis back, the instances'
	// heartbeats must, and the alarm clears.
	stopRuns(b, rs[0], ids...)
	srv.Start(t)
	testenv.Eventually(t, 30*time.Second, "the DOWNSTREAM_LIMIT_DEGRADED alarm to clear once Redis is back", func() bool {
		alerts, err := rs[2].Alarms().Active(context.Background())
		if err != nil {
			return false
		}
		for _, a := range alerts {
			if a.Kind == bt.AlertDownstreamDegraded {
				return false
			}
		}
		return true
	})
}

// A downstream an item names without a declaration is unlimited, listed for an operator to
// limit, and limited once they do; a downstream name no limit could be set on is refused.
func TestDownstreamUndeclaredIsListedAndBadNamesRefused(t *testing.T) {
	b := setup(t)
	sys := &fakeSystem{}
	job := &dsJob{name: "undeclared", ds: "search-api", sys: sys, n: 20, batch: 10, parallelism: 4, lease: 5 * time.Second}
	r := b.runner(nil, job)
	id := mustStart(t, r, runner.StartParams{Job: job.name})
	if got := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed); got.Status != bt.StatusSucceeded || got.Succeeded != 20 {
		t.Fatalf("run on an undeclared downstream: %s (%s) with %d succeeded; want SUCCEEDED with 20", got.Status, got.Message, got.Succeeded)
	}
	testenv.Eventually(t, 10*time.Second, "the undeclared downstream to be listed", func() bool {
		_, err := r.Downstreams().Get(context.Background(), "search-api")
		return err == nil
	})
	d := setLimits(t, r, bt.DownstreamUpdate{Name: "search-api", Concurrency: ptr(2), Reason: "found it calling"})
	if d.Limits.Concurrency != 2 || d.Defaults != (bt.DownstreamLimits{QuotaWindow: bt.QuotaHour}) {
		t.Errorf("after the update: %+v, defaults %+v; want concurrency 2 and no defaults", d.Limits, d.Defaults)
	}

	bad := &dsJob{name: "bad-name", ds: "search api!", sys: sys, n: 1, batch: 1, parallelism: 1, lease: 5 * time.Second}
	r2 := b.runner(nil, bad)
	id = mustStart(t, r2, runner.StartParams{Job: bad.name})
	got := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed)
	if got.Status != bt.StatusFailed || !strings.Contains(got.Message, "INVALID_INPUT") || !strings.Contains(got.Message, "downstream name") {
		t.Errorf("an item naming downstream %q: %s (%s); want FAILED with INVALID_INPUT on the name", bad.ds, got.Status, got.Message)
	}
	if n := b.count(`SELECT count(*)::int FROM job_ledger WHERE job_name = 'bad-name'`); n != 0 {
		t.Errorf("%d ledger rows for a refused item; want none", n)
	}
}
