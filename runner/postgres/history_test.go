package postgres_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store"
)

// historyRun is a run seeded at known times: offsets from the test's window start.
type historyRun struct {
	job       string
	status    bt.RunStatus
	started   time.Duration
	activated *time.Duration // nil: never active
	finished  *time.Duration // nil: still active
	processed int64
	errors    map[string]int // failure class → error rows
}

func at(d time.Duration) *time.Duration { return &d }

// seedHistory inserts the runs, their error rows and the call statistics (minute offset →
// calls, downstream errors, rejects) of job "hist" and of a neighbour job.
func seedHistory(t *testing.T, pool *pgxpool.Pool, start time.Time, runs []historyRun, calls map[time.Duration][3]int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO job_settings (name) VALUES ('hist'), ('other')`); err != nil {
		t.Fatal(err)
	}
	ts := func(d *time.Duration) *time.Time {
		if d == nil {
			return nil
		}
		v := start.Add(*d)
		return &v
	}
	for k, r := range runs {
		var id int64
		err := pool.QueryRow(ctx, `INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token,
				lease_seconds, lease_until, generation, started_at, activated_at, finished_at, processed)
			VALUES ($1, $2, 'MANUAL', 'RESUME', 't', 'i', md5($3::int::text), 30, now(), 1, $4, $5, $6, $7) RETURNING id`,
			r.job, r.status, k, start.Add(r.started), ts(r.activated), ts(r.finished), r.processed).Scan(&id)
		if err != nil {
			t.Fatalf("run %d: %v", k, err)
		}
		for class, n := range r.errors {
			if _, err := pool.Exec(ctx, `INSERT INTO job_run_errors (run_id, item_key, failure_class, message)
				SELECT $1, 'k' || g, $2, 'boom' FROM generate_series(1, $3) g`, id, class, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	for minute, c := range calls {
		for _, job := range []string{"hist", "other"} {
			if _, err := pool.Exec(ctx, `INSERT INTO job_call_stats (job_name, minute, calls, downstream_errors, rejects) VALUES ($1, $2, $3, $4, $5)`,
				job, start.Add(minute), c[0], c[1], c[2]); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestJobHistoryBuckets seeds runs, errors and call statistics at known times around three
// hourly buckets and checks every figure of every bucket: a run counts where it ended (an end
// exactly on a bucket's edge belongs to the later bucket, an end on the window's end or before
// its start is outside), active runs and other jobs' runs never count, percentiles interpolate,
// throughput counts only activated runs, and an empty bucket is present with zeros.
func TestJobHistoryBuckets(t *testing.T) {
	t.Parallel()
	pool := testenv.Postgres(t)
	s := postgres.New(pool)
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	m, h := time.Minute, time.Hour
	seedHistory(t, pool, start, []historyRun{
		// Bucket 0: durations 60 s and 120 s; active 50 s + 120 s; 120 items.
		{job: "hist", status: bt.StatusSucceeded, started: 0, activated: at(10 * time.Second), finished: at(m), processed: 100},
		{job: "hist", status: bt.StatusFailed, started: 10 * m, activated: at(10 * m), finished: at(12 * m), processed: 20,
			errors: map[string]int{"TRANSIENT": 3, "VALIDATION_REJECTED": 1}},
		// Bucket 1: ends on its start edge, never active (duration 120 s, no throughput).
		{job: "hist", status: bt.StatusCancelled, started: 58 * m, finished: at(h)},
		{job: "hist", status: bt.StatusSucceeded, started: h + 5*m, activated: at(h + 5*m), finished: at(h + 15*m), processed: 300,
			errors: map[string]int{"CONFLICT": 2}},
		{job: "hist", status: bt.StatusPaused, started: h + 20*m, activated: at(h + 20*m), finished: at(h + 50*m), processed: 600},
		// Outside: before the window, on its end, still running, another job.
		{job: "hist", status: bt.StatusSucceeded, started: -2 * m, activated: at(-2 * m), finished: at(-time.Microsecond), processed: 7,
			errors: map[string]int{"TRANSIENT": 9}},
		{job: "hist", status: bt.StatusFailed, started: 3*h - m, activated: at(3*h - m), finished: at(3 * h), processed: 7},
		{job: "hist", status: bt.StatusRunning, started: 2*h + m, activated: at(2*h + m), processed: 50},
		{job: "other", status: bt.StatusSucceeded, started: 0, activated: at(0), finished: at(m), processed: 1000,
			errors: map[string]int{"TRANSIENT": 5}},
	}, map[time.Duration][3]int64{
		-m:         {1000, 1000, 0}, // before the window
		0:          {100, 5, 1},
		59 * m:     {50, 5, 0},
		h:          {10, 0, 2},
		3 * h:      {1000, 1000, 1000}, // the window's end
		2*h + 30*m: {0, 0, 0},
	})

	got, err := s.JobHistory(context.Background(), store.HistoryQuery{Job: "hist", Start: start, Width: h, Buckets: 3})
	if err != nil {
		t.Fatal(err)
	}
	d := func(s float64) *time.Duration { v := time.Duration(s * float64(time.Second)); return &v }
	want := []store.HistoryBucket{{
		Start:       start,
		Runs:        map[bt.RunStatus]int64{bt.StatusSucceeded: 1, bt.StatusFailed: 1},
		DurationP50: d(90), DurationP95: d(117), // 60 + 0.95 × (120 − 60)
		Processed: 120, Active: 170 * time.Second,
		Failures: map[string]int64{"TRANSIENT": 3, "VALIDATION_REJECTED": 1},
		Calls:    150, Downstream: 10, Rejects: 1,
	}, {
		Start:       start.Add(h),
		Runs:        map[bt.RunStatus]int64{bt.StatusCancelled: 1, bt.StatusSucceeded: 1, bt.StatusPaused: 1},
		DurationP50: d(600), DurationP95: d(1680), // ranks 120, 600, 1800: 600 + 0.9 × 1200
		Processed: 900, Active: 2400 * time.Second,
		Failures: map[string]int64{"CONFLICT": 2},
		Calls:    10, Rejects: 2,
	}, {
		Start:    start.Add(2 * h),
		Runs:     map[bt.RunStatus]int64{},
		Failures: map[string]int64{},
	}}
	if len(got) != len(want) {
		t.Fatalf("%d buckets, want %d: %+v", len(got), len(want), got)
	}
	for k := range want {
		checkBucket(t, k, got[k], want[k])
	}

	// The same rows in one bucket of three hours: the edges inside no longer split them.
	one, err := s.JobHistory(context.Background(), store.HistoryQuery{Job: "hist", Start: start, Width: 3 * h, Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkBucket(t, 0, one[0], store.HistoryBucket{
		Start:       start,
		Runs:        map[bt.RunStatus]int64{bt.StatusSucceeded: 2, bt.StatusFailed: 1, bt.StatusCancelled: 1, bt.StatusPaused: 1},
		DurationP50: d(120), DurationP95: d(1560), // ranks 60, 120, 120, 600, 1800: 600 + 0.8 × 1200
		Processed: 1020, Active: 2570 * time.Second,
		Failures: map[string]int64{"TRANSIENT": 3, "VALIDATION_REJECTED": 1, "CONFLICT": 2},
		Calls:    160, Downstream: 10, Rejects: 3,
	})

	// A job without runs: every bucket present and empty. Not a window: a coded error.
	empty, err := s.JobHistory(context.Background(), store.HistoryQuery{Job: "nobody", Start: start, Width: h, Buckets: 2})
	if err != nil || len(empty) != 2 || empty[1].Start != start.Add(h) || len(empty[0].Runs) != 0 || empty[0].DurationP50 != nil {
		t.Fatalf("history of a job without runs: %+v, %v", empty, err)
	}
	for _, q := range []store.HistoryQuery{{Job: "hist", Start: start, Width: 0, Buckets: 3}, {Job: "hist", Start: start, Width: h, Buckets: 0}} {
		if _, err := s.JobHistory(context.Background(), q); bt.CodeOf(err) != bt.CodeInvalidInput {
			t.Errorf("history of %+v: %v, want %s", q, err, bt.CodeInvalidInput)
		}
	}
}

func checkBucket(t *testing.T, k int, got, want store.HistoryBucket) {
	t.Helper()
	if !got.Start.Equal(want.Start) {
		t.Errorf("bucket %d starts %s, want %s", k, got.Start, want.Start)
	}
	if !maps.Equal(got.Runs, want.Runs) {
		t.Errorf("bucket %d runs %v, want %v", k, got.Runs, want.Runs)
	}
	for _, p := range []struct {
		name      string
		got, want *time.Duration
	}{{"p50", got.DurationP50, want.DurationP50}, {"p95", got.DurationP95, want.DurationP95}} {
		if (p.got == nil) != (p.want == nil) || (p.got != nil && *p.got != *p.want) {
			t.Errorf("bucket %d duration %s %v, want %v", k, p.name, fmtDur(p.got), fmtDur(p.want))
		}
	}
	if got.Processed != want.Processed || got.Active != want.Active {
		t.Errorf("bucket %d processed %d in %s active, want %d in %s", k, got.Processed, got.Active, want.Processed, want.Active)
	}
	if !maps.Equal(got.Failures, want.Failures) {
		t.Errorf("bucket %d failures %v, want %v", k, got.Failures, want.Failures)
	}
	if got.Calls != want.Calls || got.Downstream != want.Downstream || got.Rejects != want.Rejects {
		t.Errorf("bucket %d calls %d/%d/%d, want %d/%d/%d", k, got.Calls, got.Downstream, got.Rejects, want.Calls, want.Downstream, want.Rejects)
	}
}

func fmtDur(d *time.Duration) string {
	if d == nil {
		return "nil"
	}
	return d.String()
}
