package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// filterFixture is 60 runs over three jobs, with known triggers, instances, statuses and start
// times (one per minute, run i started i minutes after base).
type filterFixture struct {
	s    store.Store
	ids  []int64 // in insertion order
	base time.Time
}

func newFilterFixture(t *testing.T, open Open) *filterFixture {
	t.Helper()
	ctx := context.Background()
	db := open(t)
	s, pool := db.Store, db.Pool
	var defaults []store.JobDefaults
	for _, j := range []string{"a", "b", "c"} {
		defaults = append(defaults, store.JobDefaults{Name: j, Timezone: "UTC", RiskLevel: bt.RiskLow, RetentionDays: 90})
	}
	if err := s.EnsureJobs(ctx, defaults); err != nil {
		t.Fatal(err)
	}
	f := &filterFixture{s: s, base: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	triggers := []bt.Trigger{bt.TriggerScheduled, bt.TriggerManual, bt.TriggerReplay}
	statuses := []bt.RunStatus{bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled, bt.StatusPaused}
	for i := range 60 {
		var id int64
		err := pool.QueryRow(ctx, `INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token,
				lease_seconds, lease_until, generation, started_at, finished_at)
			VALUES ($1, $2, $3, 'RESTART', 't', $4, $5, 30, now(), 1, $6, $6) RETURNING id`,
			[]string{"a", "b", "c"}[i%3], string(statuses[i%4]), string(triggers[i/20]),
			fmt.Sprintf("i-%d", i%2), fmt.Sprint(i), f.base.Add(time.Duration(i)*time.Minute)).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		f.ids = append(f.ids, id)
	}
	return f
}

// want returns the ids of the fixture's runs i for which keep(i) holds, newest first.
func (f *filterFixture) want(keep func(i int) bool) []int64 {
	var out []int64
	for i := len(f.ids) - 1; i >= 0; i-- {
		if keep(i) {
			out = append(out, f.ids[i])
		}
	}
	return out
}

// all pages through the runs rf selects, size at a time, and returns their ids in order.
func (f *filterFixture) all(t *testing.T, rf store.RunFilter, size int) []int64 {
	t.Helper()
	var out []int64
	rf.Limit = size
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("paging does not end")
		}
		runs, err := f.s.Runs(context.Background(), rf)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			out = append(out, r.ID)
		}
		if len(runs) < size {
			return out
		}
		rf.BeforeID = runs[len(runs)-1].ID
	}
}

// testRunsFilters lists runs by each filter alone and combined, in pages of 7: each list holds
// exactly the runs that match, newest first, without duplicates or gaps across pages.
func testRunsFilters(t *testing.T, open Open) {
	t.Parallel()
	f := newFilterFixture(t, open)
	at := func(i int) *time.Time { v := f.base.Add(time.Duration(i) * time.Minute); return &v }
	statuses := []bt.RunStatus{bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled, bt.StatusPaused}
	trig := func(i int) bt.Trigger {
		return []bt.Trigger{bt.TriggerScheduled, bt.TriggerManual, bt.TriggerReplay}[i/20]
	}
	job := func(i int) string { return []string{"a", "b", "c"}[i%3] }
	cases := []struct {
		name string
		rf   store.RunFilter
		keep func(i int) bool
	}{
		{"all", store.RunFilter{}, func(int) bool { return true }},
		{"job", store.RunFilter{JobName: "b"}, func(i int) bool { return job(i) == "b" }},
		{"status", store.RunFilter{Statuses: []bt.RunStatus{bt.StatusFailed}}, func(i int) bool { return statuses[i%4] == bt.StatusFailed }},
		{"statuses", store.RunFilter{Statuses: []bt.RunStatus{bt.StatusFailed, bt.StatusPaused}},
			func(i int) bool { return i%4 == 1 || i%4 == 3 }},
		{"trigger", store.RunFilter{Triggers: []bt.Trigger{bt.TriggerManual}}, func(i int) bool { return trig(i) == bt.TriggerManual }},
		{"triggers", store.RunFilter{Triggers: []bt.Trigger{bt.TriggerManual, bt.TriggerReplay}}, func(i int) bool { return i >= 20 }},
		{"instance", store.RunFilter{Instance: "i-1"}, func(i int) bool { return i%2 == 1 }},
		{"from", store.RunFilter{StartedFrom: at(45)}, func(i int) bool { return i >= 45 }},
		{"before", store.RunFilter{StartedBefore: at(10)}, func(i int) bool { return i < 10 }},
		{"range", store.RunFilter{StartedFrom: at(10), StartedBefore: at(30)}, func(i int) bool { return i >= 10 && i < 30 }},
		{"number", store.RunFilter{Number: f.ids[17]}, func(i int) bool { return i == 17 }},
		{"number/other job", store.RunFilter{Number: f.ids[17], JobName: "a"}, func(int) bool { return false }},
		{"unknown number", store.RunFilter{Number: f.ids[59] + 1000}, func(int) bool { return false }},
		{"unknown instance", store.RunFilter{Instance: "nowhere"}, func(int) bool { return false }},
		{"combined", store.RunFilter{JobName: "a", Statuses: []bt.RunStatus{bt.StatusSucceeded, bt.StatusCancelled},
			Triggers: []bt.Trigger{bt.TriggerScheduled, bt.TriggerManual}, Instance: "i-0", StartedFrom: at(3), StartedBefore: at(40)},
			func(i int) bool {
				return job(i) == "a" && (i%4 == 0 || i%4 == 2) && i < 40 && i%2 == 0 && i >= 3
			}},
	}
	for _, c := range cases {
		want := f.want(c.keep)
		for _, size := range []int{7, 100} {
			got := f.all(t, c.rf, size)
			if !slices.Equal(got, want) {
				t.Errorf("%s (pages of %d): got %v, want %v", c.name, size, got, want)
			}
		}
	}
	if len(f.want(func(i int) bool { return job(i) == "a" && (i%4 == 0 || i%4 == 2) && i < 40 && i%2 == 0 && i >= 3 })) < 3 {
		t.Fatal("the combined case selects too few runs to exercise paging")
	}
}

// testRunsOfJobsFilters applies the same filters per job in the batched read the job pages use.
func testRunsOfJobsFilters(t *testing.T, open Open) {
	t.Parallel()
	f := newFilterFixture(t, open)
	got, err := f.s.RunsOfJobs(context.Background(), []string{"a", "b"}, store.RunFilter{Instance: "i-1", Triggers: []bt.Trigger{bt.TriggerReplay}, Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"a", "b"} {
		want := f.want(func(i int) bool { return []string{"a", "b", "c"}[i%3] == j && i%2 == 1 && i >= 40 })
		var ids []int64
		for _, r := range got[j] {
			ids = append(ids, r.ID)
		}
		if !slices.Equal(ids, want) || len(want) == 0 {
			t.Errorf("job %s: got %v, want %v", j, ids, want)
		}
	}
}

// testRunEventsRecorded drives a run through the store as a worker and an operator would:
// activation, two renewals, a job pause and its lifting, maintenance on and off, a cancel
// request and an end by a stop condition. Each is recorded once, in order, with its actor; a
// refused renewal (wrong token) records nothing; the read keeps only the latest renewals when
// asked to.
func testRunEventsRecorded(t *testing.T, open Open) {
	t.Parallel()
	ctx := context.Background()
	s := open(t).Store
	if err := s.EnsureJobs(ctx, []store.JobDefaults{{Name: "j", Timezone: "UTC", RiskLevel: bt.RiskLow, RetentionDays: 90}}); err != nil {
		t.Fatal(err)
	}
	run, err := s.InsertRun(ctx, store.NewRun{JobName: "j", Trigger: bt.TriggerManual, Mode: bt.ModeRestart, Actor: "t", Instance: "i", Token: "tok", LeaseSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	f := store.Fence{RunID: run.ID, Token: "tok"}
	if _, _, err := s.Activate(ctx, f); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, _, err := s.Renew(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Renew(ctx, store.Fence{RunID: run.ID, Token: "stale"}); bt.CodeOf(err) != bt.CodeLeaseLost {
		t.Fatalf("renewal with a stale token: %v, want LEASE_LOST", err)
	}
	pauseAndLift(t, s, "j")
	if _, err := s.RequestCancel(ctx, run.ID, "carol"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(ctx, f, bt.StatusFailed, bt.StopCondition, `stopped itself: stop condition "errors" tripped`); err != nil {
		t.Fatal(err)
	}
	// An ended run takes no cancel, and records none.
	if _, err := s.RequestCancel(ctx, run.ID, "dave"); bt.CodeOf(err) != bt.CodeNotActive {
		t.Fatalf("cancel of an ended run: %v, want NOT_ACTIVE", err)
	}

	type ev struct {
		kind  store.RunEventKind
		actor string
	}
	read := func(maxRenewals int) []ev {
		t.Helper()
		m, err := s.RunEventsOfRuns(ctx, []int64{run.ID}, maxRenewals)
		if err != nil {
			t.Fatal(err)
		}
		var out []ev
		var last time.Time
		for _, e := range m[run.ID] {
			if e.At.Before(last) {
				t.Errorf("events out of time order: %v after %v", e.At, last)
			}
			if e.Shard != nil {
				t.Errorf("event %s has shard %q, want the whole run", e.Kind, *e.Shard)
			}
			last = e.At
			out = append(out, ev{e.Kind, e.Actor})
		}
		return out
	}
	want := []ev{
		{store.EventLeaseRenewed, ""}, {store.EventLeaseRenewed, ""},
		{store.EventPauseRequested, "alice"}, {store.EventPauseLifted, "alice"},
		{store.EventPauseRequested, "bob"}, {store.EventPauseLifted, "bob"},
		{store.EventCancelRequested, "carol"}, {store.EventStopCondition, ""},
	}
	if got := read(100); !slices.Equal(got, want) {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
	if got := read(1); !slices.Equal(got, want[1:]) {
		t.Fatalf("events with one renewal kept:\n got %v\nwant %v", got, want[1:])
	}
}

// pauseAndLift pauses job and lifts the pause (alice), then turns maintenance on and off (bob).
func pauseAndLift(t *testing.T, s store.Store, job string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.SetPaused(ctx, job, true, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPaused(ctx, job, false, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMaintenance(ctx, true, "bob"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMaintenance(ctx, false, "bob"); err != nil {
		t.Fatal(err)
	}
}
