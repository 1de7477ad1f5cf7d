package demo

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

func TestCrawlPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ pages, shards int }{{3200, 16}, {64, 16}, {100, 16}, {5, 16}, {1, 1}} {
		plan := pageRanges(tc.pages, tc.shards)
		if len(plan) != tc.shards {
			t.Fatalf("%d pages: %d shards, want %d", tc.pages, len(plan), tc.shards)
		}
		next := 1
		for _, s := range plan {
			lo, hi, err := parseRange(s.Spec)
			if err != nil || lo != next || s.Key != fmt.Sprintf("pages %d-%d", lo, hi) {
				t.Fatalf("%d pages in %d: shard %+v (%d-%d, %v) does not follow page %d", tc.pages, tc.shards, s, lo, hi, err, next-1)
			}
			next = hi + 1
		}
		if next != tc.pages+1 {
			t.Fatalf("%d pages in %d shards cover pages 1-%d", tc.pages, tc.shards, next-1)
		}
	}
	for _, bad := range []string{"", "12", "a-b", "0-4", "9-3", "1-x"} {
		if _, _, err := parseRange(bad); err == nil {
			t.Errorf("parseRange(%q) accepted", bad)
		}
	}
	for _, tc := range []struct {
		cp       string
		want     int
		explains bool
	}{{"", 11, false}, {"p14", 15, false}, {"p20", 21, false}, {"p9", 11, true}, {"p21", 11, true}, {"x", 11, true}} {
		if got, why := crawlStart(tc.cp, 11, 20); got != tc.want || (why != "") != tc.explains {
			t.Errorf("crawlStart(%q, 11, 20) = %d, %q; want %d (explained: %v)", tc.cp, got, why, tc.want, tc.explains)
		}
	}
	if c := (CrawlConfig{}).withDefaults(); c.Pages != 3200 || c.PageLatency != 20*time.Millisecond || c.Shards != 16 {
		t.Fatalf("crawl defaults %+v", c)
	}
	if c := FastConfig().Crawl.withDefaults(); c.Shards != 16 {
		t.Fatalf("the fast demo-crawl has %d shards, want 16", c.Shards)
	}
}

// TestCrawlShardsResumeFromTheirCheckpoints: demo-crawl's run is 16 shards, each its range
// of pages with a checkpoint per page; cancelled mid-run and resumed, every shard continues
// after its own checkpoint, and no page is fetched twice.
func TestCrawlShardsResumeFromTheirCheckpoints(t *testing.T) {
	b := setup(t)
	cfg := FastConfig()
	cfg.Crawl.PageLatency = 15 * time.Millisecond // long enough to cancel mid-run
	jobs, _ := Jobs(b.Pool, cfg)
	r := b.runner(jobs...)
	id := b.start(r, runner.StartParams{Job: CrawlJobName})
	testenv.Eventually(t, 30*time.Second, "some pages crawled", func() bool {
		run, err := r.Runs().Get(context.Background(), id)
		return err == nil && run.Processed >= 8
	})
	if _, err := r.Runs().Cancel(context.Background(), id, "test"); err != nil {
		t.Fatal(err)
	}
	first := b.waitStatus(r, id, bt.StatusCancelled)
	before := shardsByKey(t, r, id)
	if len(before) != 16 {
		t.Fatalf("%d shards, want 16", len(before))
	}
	progressed := 0
	for _, s := range before {
		if s.Checkpoint != "" {
			progressed++
		}
	}
	if progressed == 0 || first.Processed == 0 || first.Processed >= 64 {
		t.Fatalf("cancelled run processed %d pages, %d shards with a checkpoint: want a run cut mid-way", first.Processed, progressed)
	}

	again := b.start(r, runner.StartParams{Job: CrawlJobName, Mode: bt.ModeResume})
	second := b.waitStatus(r, again, bt.StatusSucceeded)
	if second.Skipped != 0 || first.Processed+second.Processed != 64 {
		t.Fatalf("resume processed %d (skipped %d) after %d: want the 64 pages walked once", second.Processed, second.Skipped, first.Processed)
	}
	for key, s := range shardsByKey(t, r, again) {
		_, hi, _ := parseRange(s.Shard.Spec)
		if s.Status != bt.StatusSucceeded || s.StartCheckpoint != before[key].Checkpoint || s.Checkpoint != crawlToken(hi) {
			t.Errorf("shard %q: %s from %q to %q; want SUCCEEDED from the cancelled shard's %q to %q", key, s.Status,
				s.StartCheckpoint, s.Checkpoint, before[key].Checkpoint, crawlToken(hi))
		}
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND state = 'CONFIRMED'`, CrawlJobName); n != 64 {
		t.Fatalf("%d pages confirmed in the ledger, want 64", n)
	}
}

// TestShardedSettlementPaysEachAccountOnce: demo-settlement-sharded pays demo-settlement's
// accounts in 12 ranges through the same provider, each account once under its own key.
func TestShardedSettlementPaysEachAccountOnce(t *testing.T) {
	b := setup(t)
	cfg := FastConfig()
	cfg.Provider = ProviderConfig{Latency: time.Millisecond, ServerErrorRate: Off, ThrottleRate: Off,
		TimeoutAfterApplyRate: Off, RejectRate: Off}
	jobs, _ := Jobs(b.Pool, cfg)
	info := jobs[4].Info()
	if info.Name != ShardedSettlementJobName || info.Shards == nil || info.Shards.Count != 12 || info.Risk != bt.RiskHigh || info.Cron != "" {
		t.Fatalf("info %+v", info)
	}
	r := b.runner(jobs...)
	id := b.start(r, runner.StartParams{Job: ShardedSettlementJobName})
	run := b.waitStatus(r, id, bt.StatusSucceeded)
	if run.Succeeded != 40 || run.ShardTotal != 12 {
		t.Fatalf("run paid %d accounts in %d shards, want 40 in 12", run.Succeeded, run.ShardTotal)
	}
	if n := b.count(`SELECT count(*) FROM (SELECT e.target_key FROM demo_provider_effects e
			JOIN job_ledger l ON l.idempotency_key = e.idempotency_key AND l.target_key = e.target_key
			WHERE l.job_name = $1 AND l.state = 'CONFIRMED' GROUP BY 1 HAVING count(*) = 1) once`, ShardedSettlementJobName); n != 40 {
		t.Fatalf("%d accounts paid exactly once, want 40", n)
	}
	// Walking every account again pays nobody twice.
	again := b.start(r, runner.StartParams{Job: ShardedSettlementJobName, Mode: bt.ModeResume, FromStart: true})
	b.waitStatus(r, again, bt.StatusSucceeded)
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n != 40 {
		t.Fatalf("%d effects after a second walk, want 40", n)
	}
}

// shardsByKey returns run id's shards by key.
func shardsByKey(t *testing.T, r *runner.Runner, id int64) map[string]*bt.RunRecord {
	t.Helper()
	shards, err := r.Runs().Shards(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*bt.RunRecord{}
	for _, s := range shards {
		out[s.Shard.Key] = s
	}
	return out
}
