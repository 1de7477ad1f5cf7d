package demo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/runner"
)

// CrawlConfig configures demo-crawl, the sharded demo job.
type CrawlConfig struct {
	// Pages of the fake source; 0 means 3200.
	Pages int
	// PageLatency is how long fetching one page takes; 0 means 20ms, Off none.
	PageLatency time.Duration
	// Shards the pages are split into when a run opens its generation; 0 means 16. At most
	// runner.MaxShards.
	Shards int
	// Seed makes page sizes reproducible.
	Seed uint64
	// Cron is the job's default schedule; "" means manual only.
	Cron string
}

func (c CrawlConfig) withDefaults() CrawlConfig {
	if c.Pages <= 0 {
		c.Pages = 3200
	}
	c.PageLatency = durationOr(c.PageLatency, 20*time.Millisecond)
	if c.Shards <= 0 {
		c.Shards = 16
	}
	c.Shards = min(c.Shards, runner.MaxShards)
	return c
}

// crawlJob is demo-crawl: it reads every page of a fake paged source, split into key ranges
// of pages, one shard each, that every instance of the cluster works at once. Each page is an
// item of the shard's run, its checkpoint the page's number, so a shard resumed elsewhere — its
// holder died, or the run was paused — continues after its last committed page.
type crawlJob struct {
	cfg CrawlConfig
	src *pageSource
}

func newCrawlJob(cfg CrawlConfig) *crawlJob {
	cfg = cfg.withDefaults()
	return &crawlJob{cfg: cfg, src: &pageSource{seed: cfg.Seed, latency: cfg.PageLatency}}
}

func (j *crawlJob) Info() runner.JobInfo {
	return runner.JobInfo{
		Name: CrawlJobName,
		Description: fmt.Sprintf("Crawls %d pages of a fake paged source in %d shards of page ranges, worked by every instance at once; each shard resumes after its checkpoint.",
			j.cfg.Pages, j.cfg.Shards),
		Cron:    j.cfg.Cron,
		Version: "1",
		Shards:  &runner.Sharding{PlanFunc: j.plan},
	}
}

// plan splits the pages into the configured number of ranges, as they are when the run opens
// its generation: shard i covers pages lo to hi (its spec "lo-hi"; empty when there are fewer
// pages than shards).
func (j *crawlJob) plan(_ context.Context, _ runner.ShardPlan) ([]runner.Shard, error) {
	return pageRanges(j.cfg.Pages, j.cfg.Shards), nil
}

// pageRanges splits pages 1..pages into n ranges as even as they come.
func pageRanges(pages, n int) []runner.Shard {
	shards := make([]runner.Shard, n)
	for i := range shards {
		lo, hi := i*pages/n+1, (i+1)*pages/n
		shards[i] = runner.Shard{Key: fmt.Sprintf("pages %d-%d", lo, hi), Spec: fmt.Sprintf("%d-%d", lo, hi)}
	}
	return shards
}

// parseRange reads a spec made by pageRanges.
func parseRange(spec string) (lo, hi int, err error) {
	a, b, ok := strings.Cut(spec, "-")
	if ok {
		if lo, err = strconv.Atoi(a); err == nil {
			hi, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || lo < 1 || hi < lo-1 {
		return 0, 0, fmt.Errorf("shard spec %q: want a page range such as 1-200", spec)
	}
	return lo, hi, nil
}

// crawlToken is the checkpoint after page n: "p42".
func crawlToken(n int) string { return "p" + strconv.Itoa(n) }

// crawlStart returns the first page of lo..hi a shard fetches after checkpoint: the page after
// it when it lies in the range, else lo (and why, for a checkpoint it cannot use).
func crawlStart(checkpoint string, lo, hi int) (page int, why string) {
	if checkpoint == "" {
		return lo, ""
	}
	num, ok := strings.CutPrefix(checkpoint, "p")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < lo || n > hi {
		return lo, fmt.Sprintf("checkpoint %q is no page of %d-%d", checkpoint, lo, hi)
	}
	return n + 1, ""
}

// crawlInput is what a page item's input hash covers.
type crawlInput struct {
	Page int `json:"page"`
}

func (j *crawlJob) Run(ctx context.Context, run *runner.Run) error {
	shard, ok := run.Shard()
	if !ok {
		return fmt.Errorf("%s runs as shards only", CrawlJobName)
	}
	lo, hi, err := parseRange(shard.Spec)
	if err != nil {
		return err
	}
	start, why := crawlStart(run.Checkpoint(), lo, hi)
	if why != "" {
		run.Logger().Warn("crawling the shard from its first page", "reason", why)
	}
	if err := run.SetTotal(ctx, int64(max(hi-start+1, 0))); err != nil {
		return err
	}
	for n := start; n <= hi; n++ {
		item := runner.Item{Target: "page:" + strconv.Itoa(n), Input: crawlInput{Page: n}, Checkpoint: crawlToken(n)}
		err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			_, err := j.src.fetch(ctx, n, a.Number)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
