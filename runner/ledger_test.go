package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

func TestIdempotencyKeyIsStablePerGenerationTargetAndStep(t *testing.T) {
	t.Parallel()
	base := runner.IdempotencyKey("pay", 1, "acct-1", "charge")
	if again := runner.IdempotencyKey("pay", 1, "acct-1", "charge"); again != base {
		t.Fatalf("key not stable: %s then %s", base, again)
	}
	for _, other := range []string{
		runner.IdempotencyKey("pay", 2, "acct-1", "charge"),
		runner.IdempotencyKey("pay", 1, "acct-2", "charge"),
		runner.IdempotencyKey("pay", 1, "acct-1", "refund"),
		runner.IdempotencyKey("payx", 1, "acct-1", "charge"),
		// The parts are separated: shifting a boundary gives another key.
		runner.IdempotencyKey("pay", 1, "acct-1c", "harge"),
	} {
		if other == base {
			t.Fatalf("distinct (job, generation, target, step) share key %s", base)
		}
	}
	// Keys are stored in ledgers and handed to outside systems: they never change across
	// versions. These are the first 16 bytes of SHA-256 over "job\x00generation\x00target\x00step".
	for _, c := range []struct {
		job, target, step string
		gen               int64
		want              string
	}{
		{"pay", "acct-1", "charge", 1, "bt_ba64d2e2f3ea420e1e6c1ca889d3717e"},
		{"demo-settlement", "ünï/ç", "", -7, "bt_d199eee083c39f6ca0421b2cff74e394"},
	} {
		if got := runner.IdempotencyKey(c.job, c.gen, c.target, c.step); got != c.want {
			t.Fatalf("IdempotencyKey(%q, %d, %q, %q) = %s, want %s as in every earlier version", c.job, c.gen, c.target, c.step, got, c.want)
		}
	}
}

// The crash guarantee rests on this order: the intent is durable before the call starts.
func TestIntentCommittedBeforeEffect(t *testing.T) {
	b := setup(t)
	job := newLedgerJob("pay", "acct-1", "acct-2")
	job.step = "charge"
	job.internal["acct-2"] = true
	type seen struct {
		target string
		a      runner.Attempt
	}
	inCall := make(chan seen)
	release := make(chan struct{})
	job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		inCall <- seen{target, *a}
		<-release
		a.SetEffectRef("pay_" + target)
		a.SetEvidenceRef("rcpt_" + target)
		return nil
	}
	r := b.runner(nil, job)
	id := mustStart(t, r, runner.StartParams{Job: "pay"})

	s := <-inCall // acct-1, external, blocked in its call
	gen := b.run(id).Generation
	key := runner.IdempotencyKey("pay", gen, "acct-1", "charge")
	e := b.mustEntry("pay", "acct-1")
	if e.State != bt.LedgerInFlight || e.Attempt != 1 || e.Key != key || !e.External || e.RunID != id || e.EffectRef != nil {
		t.Fatalf("during the call acct-1 is %+v, want IN_FLIGHT attempt 1 key %s of run %d with no effect yet", e, key, id)
	}
	if s.target != "acct-1" || s.a.IdempotencyKey != key || s.a.Number != 1 || s.a.Step != "charge" {
		t.Fatalf("the call got %+v, want the intent's key %s and attempt 1", s, key)
	}
	release <- struct{}{}

	s = <-inCall // acct-2 has no external effect: no intent is written for it
	if s.target != "acct-2" {
		t.Fatalf("second call for %s", s.target)
	}
	if e := b.entry("pay", "acct-2"); e != nil {
		t.Fatalf("an internal step got an intent before its call: %+v", e)
	}
	release <- struct{}{}

	rec := b.finish(r, id)
	b.wantCounters(rec, counters{processed: 2, succeeded: 2})
	for _, target := range []string{"acct-1", "acct-2"} {
		e := b.mustEntry("pay", target)
		if e.State != bt.LedgerConfirmed || e.Attempt != 1 || deref(e.EffectRef) != "pay_"+target || deref(e.EvidenceRef) != "rcpt_"+target ||
			e.Key != runner.IdempotencyKey("pay", gen, target, "charge") || e.InputHash == "" {
			t.Errorf("after success %s is %+v (effect %s, evidence %s), want CONFIRMED with its refs and key",
				target, e, deref(e.EffectRef), deref(e.EvidenceRef))
		}
	}
	b.checkCounts(r, "pay", gen, id)
}

// A worker that dies mid-call leaves IN_FLIGHT; the recoverer makes it AMBIGUOUS_EFFECT, and no
// later run calls it again.
func TestDeadWorkersIntentBecomesAmbiguousAndIsNeverRecalled(t *testing.T) {
	b := setup(t)
	job := newLedgerJob("settle", "t1", "t2", "t3")
	job.info.Lease = time.Second
	gate := make(chan struct{})
	reached := make(chan string, 10)
	var hold atomic.Bool
	hold.Store(true)
	job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		reached <- target
		if target == "t2" && hold.Load() {
			<-gate // a call that never comes back while the lease runs out
		}
		return nil
	}
	r := b.runner(func(c *runner.Config) { c.Scheduler = true; c.PollInterval = 100 * time.Millisecond }, job)
	first := mustStart(t, r, runner.StartParams{Job: "settle"})
	for _, want := range []string{"t1", "t2"} {
		if got := <-reached; got != want {
			t.Fatalf("reached %s, want %s", got, want)
		}
	}
	dead := b.waitStatus(first, bt.StatusFailed)
	if dead.StopReason != bt.StopLeaseExpired {
		t.Fatalf("stop reason %s, want LEASE_EXPIRED", dead.StopReason)
	}
	waitFor(t, "the recoverer to mark t2 ambiguous", func() bool { return b.mustEntry("settle", "t2").State == bt.LedgerAmbiguous })
	if e := b.mustEntry("settle", "t2"); e.Attempt != 1 || e.RunID != first {
		t.Fatalf("t2 after recovery: %+v, want attempt 1 of run %d", e, first)
	}
	hold.Store(false)
	close(gate) // the stale worker wakes up; its result write is fenced off
	waitFor(t, "the stale worker to give up", func() bool { return !r.Active(first) })
	if e := b.mustEntry("settle", "t2"); e.State != bt.LedgerAmbiguous {
		t.Fatalf("the stale worker's late result landed: t2 is %s", e.State)
	}
	if rec, _ := r.Runs().Get(context.Background(), first); rec.Ambiguous != 1 {
		t.Fatalf("dead run's ambiguous counter %d, want 1", rec.Ambiguous)
	}

	resume := b.succeed(r, runner.StartParams{Job: "settle", Mode: bt.ModeResume})
	if resume.Generation != dead.Generation {
		t.Fatalf("resume opened generation %d, want %d", resume.Generation, dead.Generation)
	}
	if n := job.callsOf("t2"); n != 1 {
		t.Fatalf("t2 was called %d times, want 1: a RESUME called an in-doubt target again", n)
	}
	if job.callsOf("t3") != 1 || job.callsOf("t1") != 1 {
		t.Fatalf("calls t1=%d t3=%d, want 1 each", job.callsOf("t1"), job.callsOf("t3"))
	}
	b.wantStates("settle", map[string]bt.LedgerState{"t1": bt.LedgerConfirmed, "t2": bt.LedgerAmbiguous, "t3": bt.LedgerConfirmed})
	b.wantCounters(resume, counters{processed: 2, succeeded: 1, ambiguous: 1})
	b.checkCounts(r, "settle", resume.Generation, first)
}

// A run that finds an IN_FLIGHT intent (its worker died and nobody recovered it yet, or the
// recoverer lost a race) must not call: the target becomes AMBIGUOUS_EFFECT.
func TestInFlightFoundByNewRunBecomesAmbiguousWithoutCall(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	job := newLedgerJob("notify", "n1")
	job.noCheckpoint = true
	r := b.runner(nil, job)
	first := b.succeed(r, runner.StartParams{Job: "notify"})

	// Plant a dead worker's intent for n2, counters included, as the intent write would.
	key := runner.IdempotencyKey("notify", first.Generation, "n2", "")
	if _, err := b.Pool.Exec(ctx, `INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, external, run_id)
		VALUES ('notify', $1, 'n2', '', 'IN_FLIGHT', 1, $2, true, $3)`, first.Generation, key, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pool.Exec(ctx, `INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n) VALUES ('notify', $1, 0, 'IN_FLIGHT', 1)
		ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + 1`, first.Generation); err != nil {
		t.Fatal(err)
	}
	job.setTargets("n1", "n2", "n3")
	second := b.succeed(r, runner.StartParams{Job: "notify", Mode: bt.ModeResume})
	if n := job.callsOf("n2"); n != 0 {
		t.Fatalf("n2 was called %d times with an IN_FLIGHT intent on record, want 0", n)
	}
	if job.callsOf("n1") != 1 || job.callsOf("n3") != 1 {
		t.Fatalf("calls n1=%d n3=%d, want 1 each (n1 CONFIRMED is skipped, n3 is new)", job.callsOf("n1"), job.callsOf("n3"))
	}
	e := b.mustEntry("notify", "n2")
	if e.State != bt.LedgerAmbiguous || e.Attempt != 1 || e.RunID != second.ID || e.Key != key {
		t.Fatalf("n2 is %+v, want AMBIGUOUS_EFFECT attempt 1 recorded by run %d", e, second.ID)
	}
	b.wantCounters(second, counters{processed: 3, succeeded: 1, skipped: 1, ambiguous: 1})
	if got := b.runErrors(second.ID); len(got) != 1 || got["n2"] != string(bt.LedgerAmbiguous) {
		t.Fatalf("error rows %v, want n2 AMBIGUOUS_EFFECT", got)
	}
	b.checkCounts(r, "notify", second.Generation, second.ID)
}

// Every failure class, end to end: what the first run records, then what a TRANSIENT and a
// FAILED replay do with each.
func TestFailureClassesEndToEnd(t *testing.T) {
	b := setup(t)
	job := newLedgerJob("classes", "ok", "transient", "rejected", "conflict", "policy", "ambiguous",
		"ext-unclassified", "int-unclassified", "ext-deadline", "int-deadline", "panic")
	job.internal["int-unclassified"], job.internal["int-deadline"] = true, true
	var phase atomic.Int32
	phase.Store(1)
	job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		if phase.Load() > 1 {
			return nil // the downstream has recovered: whatever is called now succeeds
		}
		switch target {
		case "transient":
			return runner.Transient(errors.New("HTTP 503 from provider"))
		case "rejected":
			return runner.Rejected(errors.New("HTTP 422: iban invalid"))
		case "conflict":
			return runner.Conflict(errors.New("HTTP 409: already settled elsewhere"))
		case "policy":
			return runner.Policy(errors.New("daily limit reached"))
		case "ambiguous":
			return runner.Ambiguous(errors.New("timeout after the request was sent"))
		case "ext-unclassified":
			return errors.New("connection reset by peer")
		case "int-unclassified":
			return errors.New("cache lookup failed")
		case "ext-deadline", "int-deadline":
			dctx, cancel := context.WithTimeout(ctx, time.Millisecond)
			defer cancel()
			<-dctx.Done()
			return fmt.Errorf("call provider: %w", dctx.Err())
		case "panic":
			var m map[string]int
			m["boom"]++ // a bug in the job
		}
		return nil
	}
	r := b.runner(nil, job)
	first := b.succeed(r, runner.StartParams{Job: "classes"})

	want := map[string]bt.LedgerState{
		"ok": bt.LedgerConfirmed, "transient": bt.LedgerTransient, "rejected": bt.LedgerValidationRejected,
		"conflict": bt.LedgerConflict, "policy": bt.LedgerPolicyBlocked, "ambiguous": bt.LedgerAmbiguous,
		"ext-unclassified": bt.LedgerAmbiguous, "int-unclassified": bt.LedgerTransient,
		"ext-deadline": bt.LedgerAmbiguous, "int-deadline": bt.LedgerTransient, "panic": bt.LedgerBugSuspected,
	}
	b.wantStates("classes", want)
	b.wantCounters(first, counters{processed: 11, succeeded: 1, failed: 7, ambiguous: 3})
	errs := b.runErrors(first.ID)
	for target, st := range want {
		switch {
		case st == bt.LedgerConfirmed && errs[target] != "":
			t.Errorf("confirmed %s has an error row %s", target, errs[target])
		case st != bt.LedgerConfirmed && errs[target] != string(st):
			t.Errorf("error row of %s has class %q, want %s", target, errs[target], st)
		}
	}
	if len(errs) != 10 {
		t.Errorf("%d error rows, want 10", len(errs))
	}
	counts := b.checkCounts(r, "classes", first.Generation, first.ID)
	wantCounts := map[bt.LedgerState]int64{bt.LedgerConfirmed: 1, bt.LedgerTransient: 3, bt.LedgerValidationRejected: 1,
		bt.LedgerConflict: 1, bt.LedgerPolicyBlocked: 1, bt.LedgerAmbiguous: 3, bt.LedgerBugSuspected: 1}
	if !sameCounts(counts, wantCounts) {
		t.Fatalf("ledger counts %v, want %v", counts, wantCounts)
	}
	for target := range want {
		if n := job.callsOf(target); n != 1 {
			t.Fatalf("%s called %d times in the first run, want 1 (MaxAttempts 1)", target, n)
		}
	}

	// A target the generation never processed: partial replays must not touch it.
	job.addTarget("new")
	phase.Store(2)
	callsBefore := map[string]int{}
	snapshot := func() {
		for target := range want {
			callsBefore[target] = job.callsOf(target)
		}
	}
	wantCalled := func(scope string, called ...string) {
		t.Helper()
		isCalled := map[string]bool{}
		for _, c := range called {
			isCalled[c] = true
		}
		for target := range want {
			d := job.callsOf(target) - callsBefore[target]
			if isCalled[target] && d != 1 || !isCalled[target] && d != 0 {
				t.Errorf("%s replay called %s %d times, want %v", scope, target, d, isCalled[target])
			}
		}
		if n := job.callsOf("new"); n != 0 {
			t.Errorf("%s replay called a target the generation never processed", scope)
		}
	}

	snapshot()
	rep := b.replayNow(r, first.ID, bt.ScopeTransient)
	wantCalled("TRANSIENT", "transient", "int-unclassified", "int-deadline")
	for _, target := range []string{"transient", "int-unclassified", "int-deadline"} {
		want[target] = bt.LedgerConfirmed
		if a := job.attemptsOf(target); a[len(a)-1] != 2 {
			t.Errorf("%s retried as attempt %d, want 2", target, a[len(a)-1])
		}
	}
	b.wantStates("classes", want)
	if e := b.entry("classes", "new"); e != nil {
		t.Fatalf("partial replay wrote a row for an unprocessed target: %+v", e)
	}
	// 3 retried; ok skipped, 3 rejected classes and the bug out of scope, new out of scope; 3 in doubt left alone.
	b.wantCounters(rep, counters{processed: 12, succeeded: 3, skipped: 6, ambiguous: 3})
	b.checkCounts(r, "classes", first.Generation, rep.ID)

	snapshot()
	rep = b.replayNow(r, first.ID, bt.ScopeFailed)
	wantCalled("FAILED", "rejected", "conflict", "policy")
	for _, target := range []string{"rejected", "conflict", "policy"} {
		want[target] = bt.LedgerConfirmed
	}
	b.wantStates("classes", want) // panic stays BUG_SUSPECTED, the ambiguous ones stay quarantined
	b.wantCounters(rep, counters{processed: 12, succeeded: 3, skipped: 6, ambiguous: 3})
	counts = b.checkCounts(r, "classes", first.Generation, rep.ID)
	wantCounts = map[bt.LedgerState]int64{bt.LedgerConfirmed: 7, bt.LedgerAmbiguous: 3, bt.LedgerBugSuspected: 1}
	if !sameCounts(counts, wantCounts) {
		t.Fatalf("ledger counts after replays %v, want %v", counts, wantCounts)
	}

	// Nothing is left in a partial scope: the request is recorded BLOCKED, no run starts.
	req, err := r.Replays().Request(context.Background(), runner.ReplayParams{RunID: first.ID, Scope: bt.ScopeTransient, Reason: "again", Actor: "ops"})
	if code(err) != bt.CodeReplayBlocked || req == nil || req.Status != bt.ReplayBlocked {
		t.Fatalf("replay with nothing in scope: %v %+v, want REPLAY_BLOCKED", err, req)
	}
}

// TRANSIENT failures are retried within the run; the same unclassified failure three times is
// a bug, not bad luck.
func TestTransientRetriedWithinRun(t *testing.T) {
	b := setup(t)
	job := newLedgerJob("retrying", "always", "flaky", "flaky-int", "same-bug")
	job.internal["flaky-int"], job.internal["same-bug"] = true, true
	job.info.Retry = runner.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	var intentErrs []string
	var mu sync.Mutex
	job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		if target == "always" || target == "flaky" {
			// Each retry of an external step writes a fresh intent first.
			var state string
			var attempt int
			err := b.Pool.QueryRow(ctx, `SELECT state, attempt FROM job_ledger WHERE target_key = $1`, target).Scan(&state, &attempt)
			if err != nil || state != string(bt.LedgerInFlight) || attempt != a.Number {
				mu.Lock()
				intentErrs = append(intentErrs, fmt.Sprintf("%s attempt %d: row %s attempt %d (%v)", target, a.Number, state, attempt, err))
				mu.Unlock()
			}
		}
		switch {
		case target == "always":
			return runner.Transient(fmt.Errorf("HTTP 429: retry after %d ms", a.Number*100))
		case target == "flaky" && a.Number == 1:
			return runner.Transient(errors.New("HTTP 503"))
		case target == "flaky-int" && a.Number == 1:
			return errors.New("deadlock detected")
		case target == "same-bug":
			return fmt.Errorf("mapper: nil pointer for row %d", 40+a.Number)
		}
		return nil
	}
	r := b.runner(nil, job)
	rec := b.succeed(r, runner.StartParams{Job: "retrying"})
	if len(intentErrs) > 0 {
		t.Fatalf("retries without a fresh intent: %v", intentErrs)
	}
	for target, want := range map[string][]int{"always": {1, 2, 3}, "flaky": {1, 2}, "flaky-int": {1, 2}, "same-bug": {1, 2, 3}} {
		if got := job.attemptsOf(target); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s was called with attempts %v, want %v", target, got, want)
		}
	}
	b.wantStates("retrying", map[string]bt.LedgerState{
		"always":    bt.LedgerTransient, // an explicit TRANSIENT stays retryable however often it repeats
		"flaky":     bt.LedgerConfirmed,
		"flaky-int": bt.LedgerConfirmed,
		"same-bug":  bt.LedgerBugSuspected,
	})
	if e := b.mustEntry("retrying", "always"); e.Attempt != 3 {
		t.Errorf("always recorded attempt %d, want 3", e.Attempt)
	}
	if e := b.mustEntry("retrying", "flaky"); e.Attempt != 2 {
		t.Errorf("flaky recorded attempt %d, want 2", e.Attempt)
	}
	if e := b.mustEntry("retrying", "same-bug"); e.SameErrorCount != 3 || e.Attempt != 3 {
		t.Errorf("same-bug recorded attempt %d, same error %d times; want 3 and 3", e.Attempt, e.SameErrorCount)
	}
	b.wantCounters(rec, counters{processed: 4, succeeded: 2, failed: 2})
	errs := b.runErrors(rec.ID)
	if len(errs) != 2 || errs["always"] != string(bt.LedgerTransient) || errs["same-bug"] != string(bt.LedgerBugSuspected) {
		t.Fatalf("error rows %v, want one per failed target (always TRANSIENT, same-bug BUG_SUSPECTED)", errs)
	}
	if n := b.count(`SELECT attempt FROM job_run_errors WHERE item_key = 'always'`); n != 3 {
		t.Fatalf("error row of always has attempt %d, want 3", n)
	}
	b.checkCounts(r, "retrying", rec.Generation, rec.ID)
}

// The same unclassified failure on one target across three runs goes to the fix queue; a
// changed input is flagged on the run that sees it.
func TestSameFailureAcrossRunsIsBugSuspected(t *testing.T) {
	b := setup(t)
	job := newLedgerJob("import", "row", "fine")
	job.internal["row"], job.internal["fine"] = true, true
	job.noCheckpoint = true
	job.setInput("row", map[string]int{"amount": 100})
	job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		if target == "row" {
			return fmt.Errorf("decode row at offset %d: bad utf-8", 1000*a.Number)
		}
		return nil
	}
	r := b.runner(nil, job)
	first := b.succeed(r, runner.StartParams{Job: "import"})
	e := b.mustEntry("import", "row")
	if e.State != bt.LedgerTransient || e.SameErrorCount != 1 || e.InputChanged {
		t.Fatalf("after run 1 row is %s same=%d changed=%v, want TRANSIENT 1 false", e.State, e.SameErrorCount, e.InputChanged)
	}
	hash1 := e.InputHash

	job.setInput("row", map[string]int{"amount": 250})
	b.succeed(r, runner.StartParams{Job: "import", Mode: bt.ModeResume})
	e = b.mustEntry("import", "row")
	if e.State != bt.LedgerTransient || e.SameErrorCount != 2 || e.Attempt != 2 || !e.InputChanged || e.InputHash == hash1 {
		t.Fatalf("after run 2 row is %s attempt %d same=%d changed=%v, want TRANSIENT 2 2 with the changed input flagged",
			e.State, e.Attempt, e.SameErrorCount, e.InputChanged)
	}

	third := b.succeed(r, runner.StartParams{Job: "import", Mode: bt.ModeResume})
	e = b.mustEntry("import", "row")
	if e.State != bt.LedgerBugSuspected || e.SameErrorCount != 3 || e.InputChanged {
		t.Fatalf("after run 3 row is %s same=%d changed=%v, want BUG_SUSPECTED 3 (input unchanged since run 2)", e.State, e.SameErrorCount, e.InputChanged)
	}
	if got := b.runErrors(third.ID); got["row"] != string(bt.LedgerBugSuspected) {
		t.Fatalf("run 3 error rows %v, want row BUG_SUSPECTED", got)
	}

	fourth := b.succeed(r, runner.StartParams{Job: "import", Mode: bt.ModeResume})
	if n := job.callsOf("row"); n != 3 {
		t.Fatalf("row called %d times, want 3: a BUG_SUSPECTED target is not retried", n)
	}
	if n := job.callsOf("fine"); n != 1 {
		t.Fatalf("fine called %d times, want 1: CONFIRMED is skipped on RESUME", n)
	}
	b.wantCounters(fourth, counters{processed: 2, skipped: 2})
	pf, err := r.Replays().Preflight(context.Background(), fourth.ID, bt.ScopeFailed)
	if err != nil {
		t.Fatal(err)
	}
	if pf.FixQueue != 1 || pf.TargetsInScope != 0 || !hasCheck(pf, "fix queue", bt.VerdictWarn) {
		t.Fatalf("preflight fix queue %d, in scope %d, checks %+v; want 1 in the fix queue, none to retry", pf.FixQueue, pf.TargetsInScope, pf.Checks)
	}
	b.checkCounts(r, "import", first.Generation)
}

// The batch path: one intent commit for the whole batch before any call, calls in parallel,
// one result commit, the last item's checkpoint.
func TestProcessBatch(t *testing.T) {
	b := setup(t)
	const n, parallelism = 40, 8
	external := func(i int) bool { return i%5 != 0 }
	var (
		mu          sync.Mutex
		problems    []string
		calls       = map[string]int{}
		cur, maxCur atomic.Int32
		overlap     = make(chan struct{})
		once        sync.Once
		afterFirst  bt.RunRecord
		dupErr      error
		afterDup    bt.RunRecord
	)
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	job := runner.NewJob(runner.JobInfo{Name: "bulk", Version: "1", Lease: 30 * time.Second,
		Retry: runner.RetryPolicy{MaxAttempts: 1}, StopConditions: []runner.StopCondition{}},
		func(ctx context.Context, run *runner.Run) error {
			items := make([]runner.Item, n)
			for i := 1; i <= n; i++ {
				items[i-1] = runner.Item{Target: fmt.Sprintf("b%02d", i), Checkpoint: strconv.Itoa(i), External: external(i), Input: i}
			}
			err := run.ProcessBatch(ctx, items, parallelism, func(ctx context.Context, item runner.Item, a *runner.Attempt) error {
				mu.Lock()
				calls[item.Target]++
				mu.Unlock()
				c := cur.Add(1)
				defer cur.Add(-1)
				for m := maxCur.Load(); c > m && !maxCur.CompareAndSwap(m, c); m = maxCur.Load() {
				}
				if c >= 2 {
					once.Do(func() { close(overlap) })
				}
				// Every external item of the batch is IN_FLIGHT, all from one statement, before
				// any call returns; internal items have no intent.
				var inFlight, stamps, internalRows int
				err := b.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'IN_FLIGHT' AND external),
						count(DISTINCT created_at), count(*) FILTER (WHERE NOT external)
					FROM job_ledger WHERE job_name = 'bulk' AND target_key LIKE 'b%'`).Scan(&inFlight, &stamps, &internalRows)
				if err != nil || inFlight != 32 || stamps != 1 || internalRows != 0 {
					problem("in call %s: %d IN_FLIGHT from %d statements, %d internal rows (%v); want 32 from 1, 0", item.Target, inFlight, stamps, internalRows, err)
				}
				if item.External && a.IdempotencyKey != runner.IdempotencyKey("bulk", run.Generation(), item.Target, "") {
					problem("%s got key %s", item.Target, a.IdempotencyKey)
				}
				// Hold the call until another is in flight too: fails (slowly) if calls are serial.
				select {
				case <-overlap:
				case <-time.After(5 * time.Second):
				}
				switch item.Target {
				case "b07":
					return runner.Rejected(errors.New("bad account"))
				case "b13":
					return runner.Ambiguous(errors.New("timeout after send"))
				}
				target := item.Target
				a.SetEffectRef("eff-" + target)
				a.Tx(func(ctx context.Context, tx pgx.Tx) error {
					_, err := tx.Exec(ctx, `INSERT INTO job_output (target, run_id) VALUES ($1, $2)`, target, run.ID())
					return err
				})
				return nil
			})
			if err != nil {
				return err
			}
			afterFirst = run.Snapshot()

			// A target twice in one batch is refused before anything is written.
			dupErr = run.ProcessBatch(ctx, []runner.Item{{Target: "c1", Checkpoint: "x"}, {Target: "c2"}, {Target: "c1"}}, 4,
				func(ctx context.Context, item runner.Item, a *runner.Attempt) error {
					problem("called %s of a refused batch", item.Target)
					return nil
				})
			afterDup = run.Snapshot()

			// The ledger decides per item in a batch too: b01 is CONFIRMED, d1 is new.
			return run.ProcessBatch(ctx, []runner.Item{{Target: "b01", External: true, Input: 1}, {Target: "d1", External: true, Checkpoint: "41"}}, 2,
				func(ctx context.Context, item runner.Item, a *runner.Attempt) error {
					mu.Lock()
					calls[item.Target]++
					mu.Unlock()
					return nil
				})
		})
	r := b.runner(nil, job)
	id := mustStart(t, r, runner.StartParams{Job: "bulk"})
	rec := b.finish(r, id)
	if rec.Status != bt.StatusSucceeded {
		t.Fatalf("run %s (%s)", rec.Status, rec.Message)
	}
	if len(problems) > 0 {
		t.Fatalf("%d problems, first: %s", len(problems), strings.Join(problems[:min(5, len(problems))], "; "))
	}
	if m := maxCur.Load(); m < 2 || m > parallelism {
		t.Fatalf("at most %d calls in flight, want between 2 and %d", m, parallelism)
	}
	for i := 1; i <= n; i++ {
		target := fmt.Sprintf("b%02d", i)
		if calls[target] != 1 {
			t.Fatalf("%s called %d times, want 1", target, calls[target])
		}
	}
	if calls["d1"] != 1 {
		t.Fatalf("d1 called %d times, want 1", calls["d1"])
	}
	if afterFirst.Checkpoint != "40" || afterFirst.Processed != n || afterFirst.Succeeded != n-2 || afterFirst.Failed != 1 || afterFirst.Ambiguous != 1 {
		t.Fatalf("after the batch: checkpoint %q processed %d succeeded %d failed %d ambiguous %d; want \"40\" 40 38 1 1",
			afterFirst.Checkpoint, afterFirst.Processed, afterFirst.Succeeded, afterFirst.Failed, afterFirst.Ambiguous)
	}
	if code(dupErr) != bt.CodeInvalidInput {
		t.Fatalf("batch with a duplicate target: %v, want INVALID_INPUT", dupErr)
	}
	if afterDup.Processed != afterFirst.Processed || afterDup.Checkpoint != afterFirst.Checkpoint {
		t.Fatalf("a refused batch changed the run: %+v", afterDup)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE target_key IN ('c1', 'c2')`); n != 0 {
		t.Fatalf("a refused batch wrote %d ledger rows", n)
	}
	// One result commit: every outcome of the batch carries the same transaction time.
	if n := b.count(`SELECT count(DISTINCT updated_at) FROM job_ledger WHERE job_name = 'bulk' AND target_key LIKE 'b%'`); n != 1 {
		t.Fatalf("the batch's outcomes were committed by %d statements, want 1", n)
	}
	if got := b.count(`SELECT count(*) FROM job_output`); got != n-2 {
		t.Fatalf("%d job writes committed with the batch, want %d", got, n-2)
	}
	b.wantStates("bulk", map[string]bt.LedgerState{"b01": bt.LedgerConfirmed, "b05": bt.LedgerConfirmed, "b07": bt.LedgerValidationRejected,
		"b13": bt.LedgerAmbiguous, "b40": bt.LedgerConfirmed, "d1": bt.LedgerConfirmed})
	if e := b.mustEntry("bulk", "b02"); deref(e.EffectRef) != "eff-b02" || !e.External {
		t.Fatalf("b02 %+v, want effect eff-b02", e)
	}
	if e := b.mustEntry("bulk", "b05"); e.External {
		t.Fatalf("b05 recorded as external")
	}
	if rec.Checkpoint != "41" {
		t.Fatalf("final checkpoint %q, want \"41\"", rec.Checkpoint)
	}
	b.wantCounters(rec, counters{processed: 42, succeeded: 39, failed: 1, skipped: 1, ambiguous: 1})
	if errs := b.runErrors(id); len(errs) != 2 || errs["b07"] != string(bt.LedgerValidationRejected) || errs["b13"] != string(bt.LedgerAmbiguous) {
		t.Fatalf("error rows %v", errs)
	}
	b.checkCounts(r, "bulk", rec.Generation, id)
}

// A stop condition trips: the run stops itself at the next boundary, FAILED with the
// condition named; what was committed stays, later items are never called.
func TestStopConditionTrips(t *testing.T) {
	b := setup(t)
	targets := make([]string, 20)
	for i := range targets {
		targets[i] = fmt.Sprintf("s%02d", i+1)
	}
	job := newLedgerJob("mailer", targets...)
	job.info.StopConditions = []runner.StopCondition{{Name: "reject rate over 10%", Metric: runner.RejectRate, Threshold: 0.10, MinCalls: 5, Window: time.Minute}}
	job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		if target > "s03" {
			return runner.Rejected(errors.New("HTTP 400: invalid address"))
		}
		return nil
	}
	r := b.runner(nil, job)
	id := mustStart(t, r, runner.StartParams{Job: "mailer"})
	rec := b.finish(r, id)
	if rec.Status != bt.StatusFailed || rec.StopReason != bt.StopCondition || !strings.Contains(rec.Message, "reject rate over 10%") {
		t.Fatalf("run ended %s / %s / %q, want FAILED / STOP_CONDITION naming the condition", rec.Status, rec.StopReason, rec.Message)
	}
	// No verdict under 5 calls; after the 5th (2 rejects of 5 = 40%) it trips.
	for i, target := range targets {
		want := 0
		if i < 5 {
			want = 1
		}
		if n := job.callsOf(target); n != want {
			t.Fatalf("%s called %d times, want %d", target, n, want)
		}
	}
	b.wantCounters(rec, counters{processed: 5, succeeded: 3, failed: 2})
	if rec.Checkpoint != "5" {
		t.Fatalf("checkpoint %q, want \"5\": the tripping item's outcome is committed", rec.Checkpoint)
	}
	b.wantStates("mailer", map[string]bt.LedgerState{"s01": bt.LedgerConfirmed, "s03": bt.LedgerConfirmed,
		"s04": bt.LedgerValidationRejected, "s05": bt.LedgerValidationRejected})
	if e := b.entry("mailer", "s06"); e != nil {
		t.Fatalf("s06 has a ledger row after the stop: %+v", e)
	}
	b.checkCounts(r, "mailer", rec.Generation, id)
}

// A target already CONFIRMED that a later run offers with another input is not called again;
// the ledger flags the change and keeps the hash of the input that was applied.
func TestChangedInputOnConfirmedTargetIsFlagged(t *testing.T) {
	b := setup(t)
	job := newLedgerJob("export", "done", "other")
	job.noCheckpoint = true
	job.setInput("done", map[string]int{"amount": 100})
	r := b.runner(nil, job)
	b.succeed(r, runner.StartParams{Job: "export"})
	e := b.mustEntry("export", "done")
	if e.State != bt.LedgerConfirmed || e.InputChanged {
		t.Fatalf("after run 1 done is %s changed=%v, want CONFIRMED, not flagged", e.State, e.InputChanged)
	}
	applied := e.InputHash

	job.setInput("done", map[string]int{"amount": 999})
	b.succeed(r, runner.StartParams{Job: "export", Mode: bt.ModeResume})
	e = b.mustEntry("export", "done")
	if e.State != bt.LedgerConfirmed || !e.InputChanged || e.InputHash != applied {
		t.Fatalf("after run 2 done is %s changed=%v hash %s (applied %s), want CONFIRMED, flagged, hash of the applied input",
			e.State, e.InputChanged, e.InputHash, applied)
	}
	if n := job.callsOf("done"); n != 1 {
		t.Fatalf("done called %d times, want 1: a confirmed target is never called again", n)
	}
	if o := b.mustEntry("export", "other"); o.InputChanged {
		t.Fatalf("other is flagged although its input did not change")
	}
}
