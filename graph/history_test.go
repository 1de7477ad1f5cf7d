package graph_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

type historyBucket struct {
	Start, End time.Time
	Runs       []struct {
		Status string
		Count  int
	}
	Ended              int
	DurationP50Seconds *float64
	DurationP95Seconds *float64
	Processed          int
	ActiveSeconds      float64
	ItemsPerSecond     *float64
	Failures           []struct {
		Class string
		Count int
		Rate  *float64
	}
	FailureRate         *float64
	Calls               int
	DownstreamErrors    int
	Rejects             int
	DownstreamErrorRate *float64
}

type historyPage struct {
	Window         string
	BucketSeconds  int
	From, To, Now  time.Time
	FailureClasses []string
	Buckets        []historyBucket
}

const historyQuery = `query($w: HistoryWindow!) { job(name: "job-000") { history(window: $w) {
	window bucketSeconds from to now failureClasses
	buckets { start end runs { status count } ended durationP50Seconds durationP95Seconds processed activeSeconds
		itemsPerSecond failures { class count rate } failureRate calls downstreamErrors rejects downstreamErrorRate } } } }`

// TestJobHistoryWindows reads a job's history over each window through the API, with one run
// and its errors and calls seeded 150 minutes before the end of the current hour by the
// database clock: every window has its number of buckets of its width, contiguous and aligned,
// the last one holding now; the run is in the bucket holding its end, in every window, with
// its rates computed (items/s, failure rate by class, downstream error rate); empty buckets
// have null rates. A window that is not one of the enum is refused, by GraphQL and by the
// runner, with a code.
func TestJobHistoryWindows(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: manyJobs(1), poolSize: -1, noRun: true})
	viewer := b.token(model.RoleViewer)
	ctx := context.Background()

	// T = the end of the current UTC hour − 150 min. Run: requested T − 10 min, active from
	// T − 8 min (480 s) with 960 items: 2 items/s; 48 TRANSIENT + 12 CONFLICT failed items;
	// 200 calls in T's minute, 30 failed downstream, 4 rejected.
	var end time.Time
	err := b.Pool.QueryRow(ctx, `SELECT date_bin('1 hour', now(), '2000-01-01 00:00+00') + interval '1 hour' - interval '150 minutes'`).Scan(&end)
	if err != nil {
		t.Fatal(err)
	}
	var runID int64
	if err := b.Pool.QueryRow(ctx, `INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token,
			lease_seconds, lease_until, generation, started_at, activated_at, finished_at, processed, failed)
		VALUES ('job-000', 'SUCCEEDED', 'MANUAL', 'RESUME', 't', 'i', 'x', 30, now(), 1,
			$1::timestamptz - interval '10 minutes', $1::timestamptz - interval '8 minutes', $1, 960, 60) RETURNING id`, end).Scan(&runID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pool.Exec(ctx, `INSERT INTO job_run_errors (run_id, item_key, failure_class, message)
		SELECT $1, 'k' || g, CASE WHEN g <= 48 THEN 'TRANSIENT' ELSE 'CONFLICT' END, 'boom' FROM generate_series(1, 60) g`, runID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pool.Exec(ctx, `INSERT INTO job_call_stats (job_name, minute, calls, downstream_errors, rejects) VALUES ('job-000', $1, 200, 30, 4)`, end); err != nil {
		t.Fatal(err)
	}

	near := func(got *float64, want float64) bool { return got != nil && math.Abs(*got-want) < 1e-9 }
	for _, w := range []struct {
		window string
		width  time.Duration
		n      int
	}{{"LAST_24_HOURS", time.Hour, 24}, {"LAST_7_DAYS", 6 * time.Hour, 28}, {"LAST_30_DAYS", 24 * time.Hour, 30}} {
		var data struct{ Job struct{ History historyPage } }
		i.post(t, viewer, historyQuery, map[string]any{"w": w.window}).decode(t, &data)
		h := data.Job.History
		if h.Window != w.window || h.BucketSeconds != int(w.width.Seconds()) || len(h.Buckets) != w.n {
			t.Fatalf("%s: window %s, %d s buckets, %d of them; want %v × %d", w.window, h.Window, h.BucketSeconds, len(h.Buckets), w.width, w.n)
		}
		if !h.To.Equal(h.Now.UTC().Truncate(w.width).Add(w.width)) || !h.From.Equal(h.To.Add(-time.Duration(w.n)*w.width)) {
			t.Errorf("%s: from %s to %s at now %s: not the %d buckets of %s ending after now", w.window, h.From, h.To, h.Now, w.n, w.width)
		}
		if len(h.FailureClasses) != 2 || h.FailureClasses[0] != "CONFLICT" || h.FailureClasses[1] != "TRANSIENT" {
			t.Errorf("%s: failure classes %v, want [CONFLICT TRANSIENT]", w.window, h.FailureClasses)
		}
		found := 0
		for k, bk := range h.Buckets {
			if !bk.Start.Equal(h.From.Add(time.Duration(k)*w.width)) || !bk.End.Equal(bk.Start.Add(w.width)) {
				t.Fatalf("%s: bucket %d is [%s, %s)", w.window, k, bk.Start, bk.End)
			}
			if end.Before(bk.Start) || !end.Before(bk.End) {
				if bk.Ended != 0 || bk.Calls != 0 || bk.ItemsPerSecond != nil || bk.FailureRate != nil || bk.DownstreamErrorRate != nil ||
					bk.DurationP50Seconds != nil || len(bk.Runs) != 0 || len(bk.Failures) != 0 {
					t.Errorf("%s: bucket %d should be empty: %+v", w.window, k, bk)
				}
				continue
			}
			found++
			if bk.Ended != 1 || len(bk.Runs) != 1 || bk.Runs[0].Status != "SUCCEEDED" || bk.Runs[0].Count != 1 {
				t.Errorf("%s: bucket %d runs %+v (ended %d), want one SUCCEEDED", w.window, k, bk.Runs, bk.Ended)
			}
			if !near(bk.DurationP50Seconds, 600) || !near(bk.DurationP95Seconds, 600) {
				t.Errorf("%s: durations p50 %v p95 %v, want 600 s", w.window, bk.DurationP50Seconds, bk.DurationP95Seconds)
			}
			if bk.Processed != 960 || bk.ActiveSeconds != 480 || !near(bk.ItemsPerSecond, 2) {
				t.Errorf("%s: %d items in %v s: %v items/s, want 960 in 480: 2", w.window, bk.Processed, bk.ActiveSeconds, bk.ItemsPerSecond)
			}
			if len(bk.Failures) != 2 || bk.Failures[0].Class != "CONFLICT" || bk.Failures[0].Count != 12 || !near(bk.Failures[0].Rate, 12.0/960) ||
				bk.Failures[1].Class != "TRANSIENT" || bk.Failures[1].Count != 48 || !near(bk.Failures[1].Rate, 0.05) || !near(bk.FailureRate, 60.0/960) {
				t.Errorf("%s: failures %+v rate %v", w.window, bk.Failures, bk.FailureRate)
			}
			if bk.Calls != 200 || bk.DownstreamErrors != 30 || bk.Rejects != 4 || !near(bk.DownstreamErrorRate, 0.15) {
				t.Errorf("%s: calls %d/%d/%d rate %v, want 200/30/4 at 0.15", w.window, bk.Calls, bk.DownstreamErrors, bk.Rejects, bk.DownstreamErrorRate)
			}
		}
		if found != 1 {
			t.Errorf("%s: the run is in %d buckets, want 1", w.window, found)
		}
	}

	// Not a window: GraphQL refuses it before any resolver; the runner, for other callers, too.
	if r := i.post(t, viewer, historyQuery, map[string]any{"w": "LAST_YEAR"}); r.code() != "GRAPHQL_VALIDATION_FAILED" {
		t.Errorf("window LAST_YEAR: code %q (%+v), want GRAPHQL_VALIDATION_FAILED", r.code(), r.Errors)
	}
	if _, err := i.r.Jobs().History(ctx, "job-000", runner.HistoryWindow("LAST_YEAR")); bt.CodeOf(err) != bt.CodeInvalidInput {
		t.Errorf("runner history of window LAST_YEAR: %v, want %s", err, bt.CodeInvalidInput)
	}
	if _, err := i.r.Jobs().History(ctx, "no-such-job", runner.HistoryLast24Hours); bt.CodeOf(err) != bt.CodeNotFound {
		t.Errorf("runner history of an unknown job: %v, want %s", err, bt.CodeNotFound)
	}
}
