package runner_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

func schedulerOn(c *runner.Config) { c.Scheduler = true; c.PollInterval = 10 * time.Second }

func TestScheduledFireRunsOnceAcrossInstances(t *testing.T) {
	b := setup(t)
	job := newItemsJob("nightly", 2)
	job.cron = "0 0 4 * * *" // the seed's 04:00 daily, six fields
	var rs []*runner.Runner
	for range 3 {
		rs = append(rs, b.runner(schedulerOn, job))
	}
	// Make the fire due now on every instance at once.
	testenv.Eventually(t, 10*time.Second, "next fire computed", func() bool {
		return b.count(`SELECT count(*) FROM job_settings WHERE name = 'nightly' AND next_scheduled_at IS NOT NULL`) == 1
	})
	if _, err := b.Pool.Exec(context.Background(), `UPDATE job_settings SET next_scheduled_at = now() - interval '1 second' WHERE name = 'nightly'`); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		r.Wake()
	}
	// The next fire is the coming 04:00, whatever the time of day the test runs at (at 03:59
	// it is a minute away, not a day).
	testenv.Eventually(t, 10*time.Second, "the fire to run and the next to be the coming 04:00", func() bool {
		return b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'nightly' AND trigger = 'SCHEDULED' AND status = 'SUCCEEDED'`) == 1 &&
			b.count(`SELECT count(*) FROM job_settings WHERE name = 'nightly' AND next_scheduled_at > now()
				AND next_scheduled_at <= now() + interval '1 day'
				AND to_char(next_scheduled_at AT TIME ZONE timezone, 'HH24:MI:SS') = '04:00:00'`) == 1
	})
	// Every instance passes again: still one run.
	for _, r := range rs {
		r.Wake()
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'nightly'`); n != 1 {
		t.Fatalf("%d runs for one due fire across 3 instances, want 1", n)
	}
	if job.bodies.Load() != 1 {
		t.Fatalf("body ran %d times", job.bodies.Load())
	}
}

func TestCronStormFiresEachSecondOnce(t *testing.T) {
	b := setup(t)
	job := newItemsJob("every-second", 1)
	job.cron = "* * * * * *"
	for range 3 {
		b.runner(schedulerOn, job)
	}
	testenv.Eventually(t, 20*time.Second, "5 scheduled runs", func() bool {
		return b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'every-second' AND status = 'SUCCEEDED'`) >= 5
	})
	if dup := b.count(`SELECT count(*) FROM (SELECT scheduled_for FROM job_runs WHERE job_name = 'every-second'
		GROUP BY scheduled_for HAVING count(*) > 1) d`); dup != 0 {
		t.Fatalf("%d fires ran more than once", dup)
	}
	// Fires do not wait for the 10 s poll: each starts well within it. (The figure itself is
	// in BENCHMARKS.md; this only tells "sleeps until the fire" from "waits for the poll".)
	var worst float64
	if err := b.Pool.QueryRow(context.Background(), `SELECT max(EXTRACT(EPOCH FROM started_at - scheduled_for))
		FROM job_runs WHERE job_name = 'every-second'`).Scan(&worst); err != nil {
		t.Fatal(err)
	}
	if worst >= 5 {
		t.Fatalf("a fire started %.1fs late: the scheduler waited for its 10s poll", worst)
	}
}

func TestCronChangeAppliesWithoutRestart(t *testing.T) {
	b := setup(t)
	job := newItemsJob("rescheduled", 1)
	job.cron = "0 0 1 1 *" // yearly
	r1 := b.runner(schedulerOn, job)
	b.runner(schedulerOn, job) // a second instance, told only through the database
	every := "* * * * * *"
	if _, err := r1.Jobs().UpdateSchedule(context.Background(), "rescheduled", runner.ScheduleUpdate{Cron: &every, Actor: "ops"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 8*time.Second, "a run under the new cron (the poll is 10s)", func() bool {
		return b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'rescheduled' AND trigger = 'SCHEDULED'`) >= 1
	})
	// Disable: no fire after the change lands.
	off := false
	if _, err := r1.Jobs().UpdateSchedule(context.Background(), "rescheduled", runner.ScheduleUpdate{Enabled: &off, Actor: "ops"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "runs to settle", func() bool {
		return b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'rescheduled' AND status IN ('STARTING', 'RUNNING')`) == 0
	})
	before := b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'rescheduled'`)
	// Wait past two would-be fires, measured by the database's clock.
	b.waitTwoFires()
	if after := b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'rescheduled'`); after != before {
		t.Fatalf("%d runs started after the job was disabled", after-before)
	}
}

func TestInvalidScheduleRefused(t *testing.T) {
	b := setup(t)
	job := newItemsJob("strict", 1)
	job.cron = "@daily"
	r := b.runner(nil, job)
	for _, tc := range []struct {
		cron, tz string
		code     bt.Code
	}{
		{"not a cron", "", bt.CodeInvalidCron},
		{"61 * * * *", "", bt.CodeInvalidCron},
		{"* * * * * * *", "", bt.CodeInvalidCron},
		{"0 0 30 2 *", "", bt.CodeInvalidCron},
		{"0 0 4 * * *", "../../etc/passwd", bt.CodeInvalidTimezone},
		{"@daily", "Mars/Olympus", bt.CodeInvalidTimezone},
	} {
		cron, tz := tc.cron, tc.tz
		u := runner.ScheduleUpdate{Cron: &cron, Actor: "ops"}
		if tz != "" {
			u.Timezone = &tz
		}
		_, err := r.Jobs().UpdateSchedule(context.Background(), "strict", u)
		if code(err) != tc.code {
			t.Errorf("cron %q tz %q: %v, want %s", tc.cron, tc.tz, err, tc.code)
		}
	}
	j, err := r.Jobs().Get(context.Background(), "strict")
	if err != nil {
		t.Fatal(err)
	}
	if j.Cron != "@daily" || j.Timezone != "UTC" || j.Version != 1 {
		t.Fatalf("a refused update changed the job: %+v", j)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'updateJobSchedule' AND outcome = 'INVALID_CRON'`); n != 4 {
		t.Fatalf("%d refused updates audited, want 4", n)
	}
	// Accepted forms: five fields, six fields, descriptors, with a timezone.
	for _, spec := range []string{"*/5 * * * *", "0 0 4 * * *", "@every 90s", "@hourly"} {
		cron, tz := spec, "Asia/Seoul"
		if _, err := r.Jobs().UpdateSchedule(context.Background(), "strict", runner.ScheduleUpdate{Cron: &cron, Timezone: &tz}); err != nil {
			t.Errorf("cron %q refused: %v", spec, err)
		}
	}
	fires, err := r.Jobs().NextFires(context.Background(), "0 0 4 * * *", "Asia/Seoul", 3)
	if err != nil || len(fires) != 3 {
		t.Fatalf("next fires: %v %v", fires, err)
	}
	seoul, _ := time.LoadLocation("Asia/Seoul")
	for _, f := range fires {
		if l := f.In(seoul); l.Hour() != 4 || l.Minute() != 0 {
			t.Fatalf("fire %s is not 04:00 in Seoul", f)
		}
	}
}

func TestPauseAndResumeJob(t *testing.T) {
	b := setup(t)
	job := newItemsJob("pausable", 6)
	job.cron = "* * * * * *"
	job.reached = make(chan int, 100)
	hold := make(chan struct{})
	job.gate = func(i int) <-chan struct{} {
		if i == 3 {
			return hold
		}
		return nil
	}
	r := b.runner(schedulerOn, job)
	// The every-second cron starts a run; hold it at item 3.
	var id int64
	testenv.Eventually(t, 10*time.Second, "a scheduled run", func() bool {
		_ = b.Pool.QueryRow(context.Background(), `SELECT COALESCE(max(id), 0) FROM job_runs WHERE job_name = 'pausable'`).Scan(&id)
		return id != 0
	})
	for got := range job.reached {
		if got == 3 {
			break
		}
	}
	if _, err := r.Jobs().Pause(context.Background(), "pausable", "ops"); err != nil {
		t.Fatal(err)
	}
	close(hold)
	got := b.waitStatus(id, bt.StatusPaused, bt.StatusSucceeded, bt.StatusFailed)
	if got.Status != bt.StatusPaused || got.Checkpoint != "3" {
		t.Fatalf("after pause: %s at %q, want PAUSED at \"3\"", got.Status, got.Checkpoint)
	}
	if _, err := r.Start(context.Background(), runner.StartParams{Job: "pausable"}); code(err) != bt.CodeJobPaused {
		t.Fatalf("manual start of a paused job: %v, want JOB_PAUSED", err)
	}
	// No scheduled fire while paused (the cron fires every second).
	b.waitTwoFires()
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'pausable'`); n != 1 {
		t.Fatalf("%d runs while paused, want the 1 paused run", n)
	}
	if ok, _, _ := testLockHolder(b, "pausable"); ok {
		t.Fatalf("the paused run still holds its lock")
	}
	before := job.callsOf(4)
	_, resumed, err := r.Jobs().Resume(context.Background(), "pausable", "ops")
	if err != nil || resumed == nil {
		t.Fatalf("resume: run %+v, %v", resumed, err)
	}
	if resumed.Mode != bt.ModeResume || resumed.JobName != "pausable" {
		t.Fatalf("Resume returned run %+v, want the RESUME run of pausable", resumed)
	}
	res := b.waitStatus(resumed.ID, bt.StatusSucceeded)
	if res.Mode != bt.ModeResume || res.Generation != got.Generation || job.callsOf(3) != 1 || job.callsOf(4) != before+1 {
		t.Fatalf("resume run: mode %s gen %d (want %d); item 3 calls %d (want 1)", res.Mode, res.Generation, got.Generation, job.callsOf(3))
	}
}

func TestMaintenancePausesEveryJob(t *testing.T) {
	b := setup(t)
	var jobs []*itemsJob
	holds := map[string]chan struct{}{}
	var rjobs []runner.Job
	for _, name := range []string{"m1", "m2"} {
		j := newItemsJob(name, 4)
		hold := make(chan struct{})
		holds[name] = hold
		j.gate = func(i int) <-chan struct{} {
			if i == 2 {
				return hold
			}
			return nil
		}
		j.reached = make(chan int, 10)
		jobs = append(jobs, j)
		rjobs = append(rjobs, j)
	}
	r := b.runner(nil, rjobs...)
	ids := map[string]int64{}
	for _, j := range jobs {
		ids[j.name] = mustStart(t, r, runner.StartParams{Job: j.name})
		<-j.reached
		<-j.reached
	}
	if _, err := r.SetMaintenance(context.Background(), true, "ops"); err != nil {
		t.Fatal(err)
	}
	for _, h := range holds {
		close(h)
	}
	for name, id := range ids {
		got := b.waitStatus(id, bt.StatusPaused, bt.StatusSucceeded)
		if got.Status != bt.StatusPaused || got.StopReason != bt.StopMaintenance {
			t.Fatalf("%s: %s (%s), want PAUSED by MAINTENANCE", name, got.Status, got.StopReason)
		}
	}
	if _, err := r.Start(context.Background(), runner.StartParams{Job: "m1"}); code(err) != bt.CodeMaintenance {
		t.Fatalf("start during maintenance: %v, want MAINTENANCE", err)
	}
	res, err := r.SetMaintenance(context.Background(), false, "ops")
	if err != nil || len(res.Resumed) != 2 {
		t.Fatalf("lift maintenance: %+v %v", res, err)
	}
	for name, id := range res.Resumed {
		got := b.waitStatus(id, bt.StatusSucceeded)
		if got.Mode != bt.ModeResume || got.Processed != 2 {
			t.Fatalf("%s resumed run: mode %s processed %d, want RESUME and 2", name, got.Mode, got.Processed)
		}
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'setMaintenance'`); n != 2 {
		t.Fatalf("%d maintenance audit rows, want 2", n)
	}
}

func testLockHolder(b *bundle, job string) (bool, string, error) {
	tok, ok, err := lockHolder(b, job)
	return ok, tok, err
}

var _ = errors.New

func TestMissedFiresAreRecorded(t *testing.T) {
	b := setup(t)
	job := newItemsJob("outage", 1)
	job.cron = "* * * * * *"
	r := b.runner(nil, job)
	ctx := context.Background()
	// Every scheduler was down for five seconds: the fire due then is still claimed once.
	if _, err := b.Pool.Exec(ctx, `UPDATE job_settings SET next_scheduled_at = date_trunc('second', now()) - interval '5 seconds'
		WHERE name = 'outage'`); err != nil {
		t.Fatal(err)
	}
	late := b.runner(schedulerOn, job)
	_, _ = r, late
	testenv.Eventually(t, 10*time.Second, "the due fire to run and the missed ones to be recorded", func() bool {
		return b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'outage'`) >= 1 &&
			b.count(`SELECT count(*) FROM job_schedule_events WHERE job_name = 'outage' AND outcome = 'SKIPPED_MISSED'`) >= 4
	})
	// Each missed second is accounted for exactly once, and none of them also ran.
	if n := b.count(`SELECT count(*) FROM (SELECT scheduled_for FROM job_schedule_events WHERE outcome = 'SKIPPED_MISSED'
		GROUP BY 1 HAVING count(*) > 1) d`); n != 0 {
		t.Fatalf("%d missed fires recorded twice", n)
	}
	if n := b.count(`SELECT count(*) FROM job_schedule_events e JOIN job_runs r ON r.scheduled_for = e.scheduled_for
		WHERE e.outcome = 'SKIPPED_MISSED'`); n != 0 {
		t.Fatalf("%d fires both ran and were recorded missed", n)
	}
}

// A due fire that finds every slot busy starts as soon as a slot frees, not at the job's next
// fire (a year away here) or the next poll (a minute away).
func TestDueFireStartsWhenASlotFrees(t *testing.T) {
	b := setup(t)
	busy := newItemsJob("busy", 1)
	gate := make(chan struct{})
	busy.gate = func(int) <-chan struct{} { return gate }
	yearly := newItemsJob("yearly", 1)
	yearly.cron = "0 0 1 1 *"
	r := b.runner(func(c *runner.Config) { c.Scheduler = true; c.PollInterval = time.Minute; c.PoolSize = 1 }, busy, yearly)
	testenv.Eventually(t, 10*time.Second, "next fire computed", func() bool {
		return b.count(`SELECT count(*) FROM job_settings WHERE name = 'yearly' AND next_scheduled_at IS NOT NULL`) == 1
	})
	held := mustStart(t, r, runner.StartParams{Job: "busy"})
	if _, err := b.Pool.Exec(context.Background(), `UPDATE job_settings SET next_scheduled_at = now() - interval '1 second' WHERE name = 'yearly'`); err != nil {
		t.Fatal(err)
	}
	r.Wake()
	testenv.Eventually(t, 10*time.Second, "the due fire to find the only slot busy", r.SlotWanted)
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'yearly'`); n != 0 {
		t.Fatalf("%d runs of yearly while the only slot is busy", n)
	}
	close(gate)
	b.waitStatus(held, bt.StatusSucceeded)
	testenv.Eventually(t, 10*time.Second, "the waiting fire to run once the slot is free", func() bool {
		return b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'yearly' AND trigger = 'SCHEDULED'`) == 1
	})
}

// A fire whose claim is made again (next_scheduled_at set back to an instant that already ran,
// as by a restored backup or a hand edit) does not run twice: the second start returns 0 and
// no error, like a claim lost to another instance, the body runs once, and nothing is recorded
// for the instant beyond its one run.
func TestStaleClaimDoesNotRunAFireTwice(t *testing.T) {
	b := setup(t)
	job := newItemsJob("stale-claim", 1)
	job.cron = "0 0 4 * * *"
	r := b.runner(nil, job)
	ctx := context.Background()
	var due time.Time
	if err := b.Pool.QueryRow(ctx, `UPDATE job_settings SET next_scheduled_at = date_trunc('second', now()) - interval '1 second'
		WHERE name = 'stale-claim' RETURNING next_scheduled_at`).Scan(&due); err != nil {
		t.Fatal(err)
	}
	next := due.Add(24 * time.Hour)
	fire := func() (*runner.RunRecord, error) {
		return r.Start(ctx, runner.StartParams{Job: "stale-claim", Trigger: bt.TriggerScheduled, Mode: bt.ModeRestart,
			Actor: "scheduler", Due: due, Next: next})
	}
	first, err := fire()
	if err != nil || first == nil {
		t.Fatalf("first fire: run %v, %v", first, err)
	}
	b.waitStatus(first.ID, bt.StatusSucceeded)

	// The claim is reset to the instant that already ran.
	if _, err := b.Pool.Exec(ctx, `UPDATE job_settings SET next_scheduled_at = $1 WHERE name = 'stale-claim'`, due); err != nil {
		t.Fatal(err)
	}
	again, err := fire()
	if err != nil || again != nil {
		t.Fatalf("second fire of %s: run %v, %v; want none and no error", due, again, err)
	}
	if n := b.count(`SELECT count(*) FROM job_runs WHERE job_name = 'stale-claim'`); n != 1 {
		t.Fatalf("%d runs for one fire, want 1", n)
	}
	if n := b.count(`SELECT count(*) FROM job_schedule_events WHERE job_name = 'stale-claim'`); n != 0 {
		t.Fatalf("%d schedule events recorded for a fire that ran", n)
	}
	if job.bodies.Load() != 1 {
		t.Fatalf("body ran %d times", job.bodies.Load())
	}
	if n := b.count(`SELECT count(*) FROM job_settings WHERE name = 'stale-claim' AND next_scheduled_at = $1`, next); n != 1 {
		t.Fatal("the claim did not move on to the next fire")
	}
}

// Zone "Local" is each host's own, so one job would fire at different instants on different
// instances: it is refused wherever a zone is given, with INVALID_TIMEZONE, and changes nothing.
func TestLocalZoneRefused(t *testing.T) {
	b := setup(t)
	job := newItemsJob("zoned", 1)
	job.cron = "@daily"
	r := b.runner(nil, job)
	ctx := context.Background()
	noop := func(context.Context, *runner.Run) error { return nil }
	for _, info := range []runner.JobInfo{
		{Name: "local-cron", Cron: "0 4 * * *", Timezone: "Local"},
		{Name: "local-manual", Timezone: "Local"},
	} {
		err := r.Register(ctx, runner.NewJob(info, noop))
		if code(err) != bt.CodeInvalidTimezone || !strings.Contains(err.Error(), `"Europe/Berlin"`) {
			t.Errorf("Register %+v: %v, want INVALID_TIMEZONE naming a zone to use", info, err)
		}
	}
	if n := b.count(`SELECT count(*) FROM job_settings WHERE name LIKE 'local-%'`); n != 0 {
		t.Fatalf("%d refused jobs registered", n)
	}
	local := "Local"
	if _, err := r.Jobs().UpdateSchedule(ctx, "zoned", runner.ScheduleUpdate{Timezone: &local, Actor: "ops"}); code(err) != bt.CodeInvalidTimezone {
		t.Fatalf("UpdateSchedule to Local: %v, want INVALID_TIMEZONE", err)
	}
	if _, err := r.Jobs().NextFires(ctx, "0 4 * * *", "Local", 3); code(err) != bt.CodeInvalidTimezone {
		t.Fatalf("NextFires in Local: %v, want INVALID_TIMEZONE", err)
	}
	if j, err := r.Jobs().Get(ctx, "zoned"); err != nil || j.Timezone != "UTC" || j.Version != 1 {
		t.Fatalf("the refused update changed the job: %+v, %v", j, err)
	}
}

// waitTwoFires waits, by the database's clock, until two fires of a job due every second
// have passed.
func (b *bundle) waitTwoFires() {
	b.T.Helper()
	var until time.Time
	_ = b.Pool.QueryRow(context.Background(), `SELECT now() + interval '2.2 seconds'`).Scan(&until)
	testenv.Eventually(b.T, 10*time.Second, "two would-be fires to pass", func() bool {
		var past bool
		_ = b.Pool.QueryRow(context.Background(), `SELECT now() > $1`, until).Scan(&past)
		return past
	})
}
