package demo

import (
	"context"
	"sync"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

func TestCollectToken(t *testing.T) {
	t.Parallel()
	if got := collectToken("source", "2026-11-08", 742); got != "source:2026-11-08:p742" {
		t.Fatalf("token %q, want source:2026-11-08:p742", got)
	}
	src, date, page, err := parseCollectToken("source:2026-11-08:p742")
	if err != nil || src != "source" || date != "2026-11-08" || page != 742 {
		t.Fatalf("parse: %q %q %d %v", src, date, page, err)
	}
	for _, tc := range []struct {
		name, checkpoint string
		want             int
		startsOver       bool
	}{
		{"fresh", "", 1, false},
		{"same date", "source:2026-11-08:p742", 743, false},
		{"first page done", "source:2026-11-08:p1", 2, false},
		{"other date", "source:2026-11-07:p742", 1, true},
		{"other source", "orders:2026-11-08:p742", 1, true},
		{"bad date", "source:2026-13-08:p742", 1, true},
		{"no p", "source:2026-11-08:742", 1, true},
		{"page zero", "source:2026-11-08:p0", 1, true},
		{"too many parts", "source:x:2026-11-08:p742", 1, true},
		{"foreign", "42", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := resumePage(tc.checkpoint, "source", "2026-11-08")
			if got != tc.want || (why != "") != tc.startsOver {
				t.Fatalf("resumePage(%q) = %d, %q; want %d, starts over %v", tc.checkpoint, got, why, tc.want, tc.startsOver)
			}
		})
	}
}

func TestCollectRunsToSucceeded(t *testing.T) {
	b := setup(t)
	cfg := FastConfig().Collect
	job := newCollectJob(b.Pool, cfg)
	r := b.runner(job)
	id := b.start(r, runner.StartParams{Job: CollectJobName})
	got := b.waitStatus(r, id, bt.StatusSucceeded)
	date := b.runDate(id)
	if got.Succeeded != 30 || got.Failed != 0 || got.Total == nil || *got.Total != 30 {
		t.Fatalf("succeeded %d failed %d total %v, want 30, 0, 30", got.Succeeded, got.Failed, got.Total)
	}
	if want := collectToken("source", date, 30); got.Checkpoint != want {
		t.Fatalf("checkpoint %q, want %q", got.Checkpoint, want)
	}
	if n := b.count(`SELECT count(*) FROM demo_collected WHERE business_date = $1::date AND run_id = $2 AND items BETWEEN 1 AND 50`, date, id); n != 30 {
		t.Fatalf("%d demo_collected rows for %s, want one per page (30)", n, date)
	}
	if n := b.count(`SELECT count(DISTINCT page) FROM demo_collected WHERE page BETWEEN 1 AND 30`); n != 30 {
		t.Fatalf("%d distinct pages collected, want 30", n)
	}
	// The seed makes some first fetches fail: they were retried, not lost.
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND state = 'CONFIRMED' AND attempt > 1`, CollectJobName); n == 0 {
		t.Fatalf("no page needed a retry; the fake source's transient failures are not injected")
	}
}

// fetchCounter counts fetch calls per page.
type fetchCounter struct {
	mu      sync.Mutex
	fetches map[int]int
}

func (c *fetchCounter) of(page int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches[page]
}

func TestCollectCancelThenResume(t *testing.T) {
	b := setup(t)
	cfg := FastConfig().Collect
	cfg.Pages, cfg.FailureRate = 40, Off // no retries: every page is fetched exactly once
	job := newCollectJob(b.Pool, cfg)
	counter := &fetchCounter{fetches: map[int]int{}}
	reached, release := make(chan struct{}), make(chan struct{})
	job.beforeFetch = func(page, _ int) {
		counter.mu.Lock()
		counter.fetches[page]++
		first := page == 11 && counter.fetches[page] == 1
		counter.mu.Unlock()
		if first {
			close(reached)
			<-release
		}
	}
	r := b.runner(job)
	first := b.start(r, runner.StartParams{Job: CollectJobName})
	<-reached // page 11 is being fetched
	if _, err := r.Runs().Cancel(context.Background(), first, "test"); err != nil {
		t.Fatal(err)
	}
	close(release)
	got := b.waitStatus(r, first, bt.StatusCancelled)
	date := b.runDate(first)
	if want := collectToken("source", date, 11); got.Checkpoint != want || got.Processed != 11 {
		t.Fatalf("cancelled run: checkpoint %q processed %d, want %q and 11", got.Checkpoint, got.Processed, want)
	}
	if n := b.count(`SELECT count(*) FROM demo_collected WHERE run_id = $1`, first); n != 11 {
		t.Fatalf("%d pages written by the cancelled run, want 11", n)
	}

	second := b.start(r, runner.StartParams{Job: CollectJobName, Mode: bt.ModeResume})
	got = b.waitStatus(r, second, bt.StatusSucceeded)
	if got.Processed != 29 || got.Skipped != 0 || got.Succeeded != 29 {
		t.Fatalf("resumed run: processed %d skipped %d succeeded %d, want 29, 0, 29 (pages 12-40 only)", got.Processed, got.Skipped, got.Succeeded)
	}
	if want := collectToken("source", date, 40); got.Checkpoint != want {
		t.Fatalf("resumed run checkpoint %q, want %q (same business date)", got.Checkpoint, want)
	}
	for p := 1; p <= 40; p++ {
		if n := counter.of(p); n != 1 {
			t.Fatalf("page %d fetched %d times, want once", p, n)
		}
	}
	if n := b.count(`SELECT count(*) FROM demo_collected WHERE business_date = $1::date AND run_id = CASE WHEN page <= 11 THEN $2::bigint ELSE $3::bigint END`, date, first, second); n != 40 {
		t.Fatalf("%d pages written by the run that should have written them, want 40", n)
	}
}

func TestCollectCheckpointOfAnotherDateStartsOver(t *testing.T) {
	b := setup(t)
	cfg := FastConfig().Collect
	cfg.Pages, cfg.FailureRate = 5, Off
	job := newCollectJob(b.Pool, cfg)
	var mu sync.Mutex
	fetches := 0
	job.beforeFetch = func(int, int) { mu.Lock(); fetches++; mu.Unlock() }
	r := b.runner(job)
	first := b.start(r, runner.StartParams{Job: CollectJobName})
	b.waitStatus(r, first, bt.StatusSucceeded)

	// A RESUME of a finished date has nothing to do.
	again := b.start(r, runner.StartParams{Job: CollectJobName, Mode: bt.ModeResume})
	if got := b.waitStatus(r, again, bt.StatusSucceeded); got.Processed != 0 {
		t.Fatalf("resume of a collected date processed %d pages, want 0", got.Processed)
	}

	if _, err := b.Pool.Exec(context.Background(), `UPDATE job_checkpoints SET token = 'source:1999-01-01:p5' WHERE job_name = $1`, CollectJobName); err != nil {
		t.Fatal(err)
	}
	third := b.start(r, runner.StartParams{Job: CollectJobName, Mode: bt.ModeResume})
	got := b.waitStatus(r, third, bt.StatusSucceeded)
	// Walked again from page 1; the ledger skipped what the generation had confirmed.
	if got.Processed != 5 || got.Skipped != 5 {
		t.Fatalf("run after a foreign checkpoint: processed %d skipped %d, want 5 and 5", got.Processed, got.Skipped)
	}
	if want := collectToken("source", b.runDate(first), 5); got.Checkpoint != want {
		t.Fatalf("checkpoint %q, want %q", got.Checkpoint, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if fetches != 5 {
		t.Fatalf("%d fetches over three runs, want 5 (confirmed pages are never fetched again)", fetches)
	}
}
