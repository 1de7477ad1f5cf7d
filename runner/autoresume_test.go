package runner_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// chainRun is one run of a job as auto-resume sees it.
type chainRun struct {
	id, resumedFrom, resumedBy int64
	status                     bt.RunStatus
	stop                       bt.StopReason
	trigger                    bt.Trigger
	attempt                    int
	outcome                    string
	due                        bool
}

// chain returns the job's runs, oldest first.
func (b *bundle) chain(job string) []chainRun {
	b.T.Helper()
	rows, err := b.Pool.Query(context.Background(), `SELECT id, COALESCE(resumed_from, 0), COALESCE(auto_resume_run_id, 0), status,
		COALESCE(stop_reason, ''), trigger, attempt, COALESCE(auto_resume_outcome, ''), auto_resume_at IS NOT NULL
		FROM job_runs WHERE job_name = $1 ORDER BY id`, job)
	if err != nil {
		b.T.Fatal(err)
	}
	defer rows.Close()
	var out []chainRun
	for rows.Next() {
		var c chainRun
		var status, stop, trigger string
		if err := rows.Scan(&c.id, &c.resumedFrom, &c.resumedBy, &status, &stop, &trigger, &c.attempt, &c.outcome, &c.due); err != nil {
			b.T.Fatal(err)
		}
		c.status, c.stop, c.trigger = bt.RunStatus(status), bt.StopReason(stop), bt.Trigger(trigger)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		b.T.Fatal(err)
	}
	return out
}

// stallingJob is a ledger job whose call for target stall never returns while hold is set: the
// holder stops renewing its lease, as a dead one would.
func stallingJob(name, stall string, targets ...string) (*ledgerJob, *atomic.Bool, chan struct{}) {
	job := newLedgerJob(name, targets...)
	job.info.Lease = time.Second
	var hold atomic.Bool
	hold.Store(true)
	gate := make(chan struct{})
	job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		if target == stall && hold.Load() {
			<-gate
		}
		return nil
	}
	return job, &hold, gate
}

func policy(maxAttempts int, backoff time.Duration) *runner.AutoResumePolicy {
	p := runner.DefaultAutoResume()
	p.MaxAttempts, p.Backoff = maxAttempts, backoff
	return &p
}

// autoResumeRunners makes two instances, "a" and "c", of one worker slot each, both running
// the scheduler (and so the recoverer).
func autoResumeRunners(b *bundle, job runner.Job) (a, c *runner.Runner) {
	mod := func(name string) func(cfg *runner.Config) {
		return func(cfg *runner.Config) {
			cfg.Instance, cfg.Scheduler, cfg.PollInterval, cfg.PoolSize = name, true, 100*time.Millisecond, 1
		}
	}
	return b.runner(mod("a"), job), b.runner(mod("c"), job)
}

// A holder that stops renewing its lease (dead, or stalled inside a call) is ended by the
// recoverer, and a RESUME run starts by itself on the instance with a free slot, continues
// from the checkpoint and finishes; the ledger keeps the in-doubt target quarantined.
func TestAutoResumeAfterHolderDies(t *testing.T) {
	b := setup(t)
	job, hold, gate := stallingJob("heal", "t3", "t1", "t2", "t3", "t4", "t5")
	job.info.AutoResume = policy(3, 0)
	a, _ := autoResumeRunners(b, job)
	first := mustStart(t, a, runner.StartParams{Job: "heal"})
	defer close(gate)
	waitFor(t, "the first run to end by its lease and a second to finish", func() bool {
		ch := b.chain("heal")
		return len(ch) == 2 && ch[1].status == bt.StatusSucceeded
	})
	hold.Store(false)
	ch := b.chain("heal")
	dead, resumed := ch[0], ch[1]
	if dead.id != first || dead.status != bt.StatusFailed || dead.stop != bt.StopLeaseExpired || dead.outcome != bt.AutoResumeResumed || dead.resumedBy != resumed.id {
		t.Fatalf("first run %+v, want FAILED by LEASE_EXPIRED and RESUMED by run %d", dead, resumed.id)
	}
	if resumed.trigger != bt.TriggerAutoResume || resumed.resumedFrom != first || resumed.attempt != 1 {
		t.Fatalf("resume %+v, want trigger AUTO_RESUME, resumed from %d, attempt 1", resumed, first)
	}
	// The stalled holder still holds a's only slot: c, with a free one, ran the resume.
	var firstOn, resumedOn string
	if err := b.Pool.QueryRow(context.Background(), `SELECT (SELECT instance FROM job_runs WHERE id = $1), (SELECT instance FROM job_runs WHERE id = $2)`,
		first, resumed.id).Scan(&firstOn, &resumedOn); err != nil {
		t.Fatal(err)
	}
	if firstOn != "a" || resumedOn != "c" {
		t.Fatalf("first run on %q, resume on %q; want a, then c (the instance with a free slot)", firstOn, resumedOn)
	}
	for _, target := range []string{"t1", "t2", "t4", "t5"} {
		if n := job.callsOf(target); n != 1 {
			t.Errorf("%s called %d times, want 1", target, n)
		}
	}
	if n := job.callsOf("t3"); n != 1 {
		t.Errorf("t3, in doubt when its holder died, called %d times, want 1: the resume called it again", n)
	}
	if e := b.mustEntry("heal", "t3"); e.State != bt.LedgerAmbiguous {
		t.Errorf("t3 is %s after the resume, want AMBIGUOUS_EFFECT (quarantined)", e.State)
	}
}

// After the policy's last attempt nothing starts again and AUTO_RESUME_EXHAUSTED is raised;
// a RESUME by an operator clears it.
func TestAutoResumeStopsAfterMaxAttempts(t *testing.T) {
	b := setup(t)
	job, hold, gate := stallingJob("doomed", "t2", "t1", "t2", "t3")
	job.info.AutoResume = policy(2, 0)
	job.internal["t2"] = true // an internal step: nothing in doubt, so each resume calls it again
	mod := func(cfg *runner.Config) {
		cfg.Scheduler, cfg.PollInterval, cfg.PoolSize = true, 100*time.Millisecond, 4
	}
	r := b.runner(mod, job)
	mustStart(t, r, runner.StartParams{Job: "doomed"})
	defer close(gate)
	waitFor(t, "three runs, the last given up", func() bool {
		ch := b.chain("doomed")
		return len(ch) == 3 && ch[2].outcome == bt.AutoResumeExhausted
	})
	ch := b.chain("doomed")
	for i, c := range ch {
		if c.status != bt.StatusFailed || c.stop != bt.StopLeaseExpired || c.attempt != i {
			t.Errorf("run %d of the chain: %+v, want FAILED by LEASE_EXPIRED with attempt %d", i, c, i)
		}
		if i > 0 && (c.trigger != bt.TriggerAutoResume || c.resumedFrom != ch[i-1].id) {
			t.Errorf("run %d of the chain: %+v, want AUTO_RESUME of run %d", i, c, ch[i-1].id)
		}
	}
	if ch[2].due {
		t.Fatalf("the last attempt is still due to be resumed: %+v", ch[2])
	}
	// Every instance looks again: nothing is due, nothing starts.
	r.RecoverExpired(context.Background())
	if wait := r.ResumeDue(context.Background()); wait >= 0 {
		t.Fatalf("an auto-resume is still pending after the last attempt (next in %s)", wait)
	}
	if n := len(b.chain("doomed")); n != 3 {
		t.Fatalf("%d runs after the last attempt, want 3", n)
	}
	alerts, err := r.Alarms().Active(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var found *bt.Alert
	for i := range alerts {
		if alerts[i].Kind == bt.AlertAutoResumeExhausted && alerts[i].JobName == "doomed" {
			found = &alerts[i]
		}
	}
	if found == nil || found.RunID == nil || *found.RunID != ch[2].id || found.Severity != "CRITICAL" {
		t.Fatalf("alerts %+v, want a CRITICAL AUTO_RESUME_EXHAUSTED naming run %d", alerts, ch[2].id)
	}

	hold.Store(false)
	b.succeed(r, runner.StartParams{Job: "doomed", Mode: bt.ModeResume, Actor: "operator"})
	alerts, err = r.Alarms().Active(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, al := range alerts {
		if al.Kind == bt.AlertAutoResumeExhausted {
			t.Fatalf("the alarm stays after an operator's RESUME finished the job: %+v", al)
		}
	}
}

// A HIGH-risk job is auto-resumed too: its in-doubt target is not called again, the rest are
// called once.
func TestAutoResumeHighRiskSkipsAmbiguousTargets(t *testing.T) {
	b := setup(t)
	job, hold, gate := stallingJob("payout", "t2", "t1", "t2", "t3", "t4")
	job.info.Risk = bt.RiskHigh
	job.info.AutoResume = nil // the default policy: on for HIGH risk too
	job.info.Lease = time.Second
	a, _ := autoResumeRunners(b, job)
	if j, err := a.Jobs().Get(context.Background(), "payout"); err != nil || !j.AutoResume.Enabled {
		t.Fatalf("HIGH-risk job's default policy %+v (%v), want on", j, err)
	}
	if _, err := a.Jobs().SetAutoResume(context.Background(), "payout", runner.AutoResumeUpdate{Backoff: ptr(time.Duration(0)), Actor: "ops"}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, a, runner.StartParams{Job: "payout"})
	defer close(gate)
	waitFor(t, "the resume to finish", func() bool {
		ch := b.chain("payout")
		return len(ch) == 2 && !ch[1].status.Active()
	})
	hold.Store(false)
	ch := b.chain("payout")
	if ch[1].trigger != bt.TriggerAutoResume || ch[1].status != bt.StatusSucceeded {
		t.Fatalf("second run %+v, want a SUCCEEDED AUTO_RESUME", ch[1])
	}
	if n := job.callsOf("t2"); n != 1 {
		t.Fatalf("the in-doubt payout t2 was called %d times, want 1", n)
	}
	for _, target := range []string{"t1", "t3", "t4"} {
		if n := job.callsOf(target); n != 1 {
			t.Errorf("%s called %d times, want 1", target, n)
		}
	}
	b.wantStates("payout", map[string]bt.LedgerState{"t1": bt.LedgerConfirmed, "t2": bt.LedgerAmbiguous, "t3": bt.LedgerConfirmed, "t4": bt.LedgerConfirmed})
}

// An instance that shuts down mid-run ends its run (SHUTDOWN_TIMEOUT here: the job is inside a
// call past the timeout); another instance resumes it.
func TestAutoResumeAfterShutdown(t *testing.T) {
	b := setup(t)
	job, hold, gate := stallingJob("rolling", "t2", "t1", "t2", "t3")
	job.info.AutoResume = policy(3, 0)
	job.internal["t2"] = true
	job.info.Lease = 30 * time.Second
	mod := func(cfg *runner.Config) {
		cfg.Scheduler, cfg.PollInterval, cfg.ShutdownTimeout = true, 100*time.Millisecond, 200*time.Millisecond
	}
	leaving := b.NewRunner(withMod(b, mod), job)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- leaving.Run(ctx) }()
	first := mustStart(t, leaving, runner.StartParams{Job: "rolling"})
	waitFor(t, "the run to reach t2", func() bool { return job.callsOf("t2") == 1 })
	hold.Store(false) // the next call of t2 returns
	cancel()
	<-done
	close(gate)
	if rec := b.run(first); rec.Status != bt.StatusFailed || (rec.StopReason != bt.StopShutdownTimer && rec.StopReason != bt.StopShutdown) {
		t.Fatalf("run after shutdown %+v, want FAILED by SHUTDOWN or SHUTDOWN_TIMEOUT", rec)
	}
	b.runner(mod, job)
	waitFor(t, "the resume to succeed on the other instance", func() bool {
		ch := b.chain("rolling")
		return len(ch) == 2 && ch[1].status == bt.StatusSucceeded
	})
	if ch := b.chain("rolling"); ch[1].trigger != bt.TriggerAutoResume || ch[0].outcome != bt.AutoResumeResumed {
		t.Fatalf("chain %+v, want the first run RESUMED by an AUTO_RESUME", ch)
	}
	if job.callsOf("t1") != 1 || job.callsOf("t3") != 1 {
		t.Fatalf("t1 called %d, t3 %d times, want 1 each", job.callsOf("t1"), job.callsOf("t3"))
	}
}

// The policy is edited at runtime and audited; a bad value is refused with its field and
// nothing is written; off means a dead run is marked OFF and not resumed; an operator's RESUME
// before the backoff ends supersedes the pending one.
func TestAutoResumePolicyAtRuntime(t *testing.T) {
	b := setup(t)
	job, hold, gate := stallingJob("edited", "t1", "t1", "t2")
	job.internal["t1"] = true // nothing in doubt: a RESTART may follow
	r := b.runner(func(cfg *runner.Config) { cfg.Scheduler, cfg.PollInterval = true, 100*time.Millisecond }, job)
	ctx := context.Background()
	j, err := r.Jobs().Get(ctx, "edited")
	if err != nil {
		t.Fatal(err)
	}
	if want := runner.DefaultAutoResume(); !j.AutoResume.Enabled || j.AutoResume.MaxAttempts != want.MaxAttempts || j.AutoResume.Backoff != want.Backoff || len(j.AutoResume.On) != 3 {
		t.Fatalf("registered policy %+v, want the default %+v", j.AutoResume, want)
	}
	for _, bad := range []runner.AutoResumeUpdate{
		{MaxAttempts: ptr(0)}, {MaxAttempts: ptr(101)}, {Backoff: ptr(-time.Second)}, {Backoff: ptr(1500 * time.Millisecond)},
		{Backoff: ptr(25 * time.Hour)}, {On: []runner.ResumeCause{"PANIC"}}, {On: []runner.ResumeCause{"SHUTDOWN", "SHUTDOWN"}},
	} {
		bad.Actor = "ops"
		if _, err := r.Jobs().SetAutoResume(ctx, "edited", bad); code(err) != bt.CodeInvalidInput || fieldOf(err) == "" {
			t.Errorf("SetAutoResume(%+v) = %v, want INVALID_INPUT naming its field", bad, err)
		}
	}
	if _, err := r.Jobs().SetAutoResume(ctx, "missing", runner.AutoResumeUpdate{Enabled: ptr(false)}); code(err) != bt.CodeNotFound {
		t.Errorf("SetAutoResume of an unknown job = %v, want NOT_FOUND", err)
	}
	if got, _ := r.Jobs().Get(ctx, "edited"); got.Version != j.Version {
		t.Fatalf("refused edits wrote the job: version %d → %d", j.Version, got.Version)
	}
	off, err := r.Jobs().SetAutoResume(ctx, "edited", runner.AutoResumeUpdate{Enabled: ptr(false), Actor: "ops"})
	if err != nil || off.AutoResume.Enabled || off.AutoResume.MaxAttempts != 3 {
		t.Fatalf("turning it off: %+v, %v", off, err)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'updateJobAutoResume' AND target = 'job:edited' AND actor = 'ops'`); n != 8 {
		t.Fatalf("%d audit rows for the edits, want 8 (7 refused, 1 applied)", n)
	}

	first := mustStart(t, r, runner.StartParams{Job: "edited"})
	waitFor(t, "the run to end by its lease", func() bool { return b.chain("edited")[0].status == bt.StatusFailed })
	if c := b.chain("edited")[0]; c.outcome != bt.AutoResumeOff || c.due {
		t.Fatalf("dead run with the policy off: %+v, want outcome OFF and not due", c)
	}

	// On again, with a long backoff: an operator's RESUME comes first and supersedes it.
	if _, err := r.Jobs().SetAutoResume(ctx, "edited", runner.AutoResumeUpdate{Enabled: ptr(true), Backoff: ptr(time.Hour), Actor: "ops"}); err != nil {
		t.Fatal(err)
	}
	close(gate)
	hold.Store(false)
	waitFor(t, "the stalled worker to let go", func() bool { return !r.Active(first) })
	hold.Store(true)
	gate2 := make(chan struct{})
	job.mu.Lock()
	job.behave = func(ctx context.Context, target string, a *runner.Attempt) error {
		if target == "t1" && hold.Load() {
			<-gate2
		}
		return nil
	}
	job.mu.Unlock()
	defer close(gate2)
	second := mustStart(t, r, runner.StartParams{Job: "edited", Mode: bt.ModeRestart})
	waitFor(t, "the second run to end by its lease, due in an hour", func() bool {
		c := b.chain("edited")
		return len(c) == 2 && c[1].status == bt.StatusFailed && c[1].due
	})
	hold.Store(false)
	b.succeed(r, runner.StartParams{Job: "edited", Mode: bt.ModeRestart, Actor: "operator"})
	r.ResumeDue(ctx)
	if c := b.chain("edited")[1]; c.id != second || c.outcome != bt.AutoResumeSuperseded {
		t.Fatalf("the pending auto-resume after an operator's run: %+v, want SUPERSEDED", c)
	}
}

func withMod(b *bundle, mod func(*runner.Config)) runner.Config {
	cfg := b.Config()
	cfg.DefaultLease = 2 * time.Second
	mod(&cfg)
	return cfg
}

func ptr[T any](v T) *T { return &v }

func fieldOf(err error) string {
	var e *bt.Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}
