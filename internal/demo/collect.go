package demo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/runner"
)

// CollectConfig configures demo-collect.
type CollectConfig struct {
	// Source names the fake source in checkpoint tokens; "" means "source". A ':' in it is
	// replaced by '-', since ':' separates the token's parts.
	Source string
	// Pages per business date; 0 means 600.
	Pages int
	// PageLatency is how long fetching one page takes; 0 means 100ms, Off none.
	PageLatency time.Duration
	// FailureRate is the chance that a page fetch fails transiently (the runner retries it);
	// 0 means 0.02, Off none. A page never fails on its third attempt or later, so with the
	// runner's default three attempts every page is collected in the end.
	FailureRate float64
	// Seed makes page sizes and failures reproducible.
	Seed uint64
	// Cron is the job's default schedule; "" means manual only.
	Cron string
	// Downstream is the default limit of the job's page fetches (SourceDownstream),
	// cluster-wide; nil means 20 fetches/s with a burst of 5 and 4 in flight, a pointer to the
	// zero value declares the downstream with no limit. Operators change it at runtime.
	Downstream *runner.DownstreamLimits
	// SourceLimit is the source site's own limit, enforced by the fake source whatever Baton
	// does: a fetch past it is answered 429 with Retry-After. Zero means none. It holds per
	// instance, as each instance has its own fake source.
	SourceLimit ProviderLimit
}

// SourceDownstream is the downstream demo-collect's page fetches go to: a paginated site, the
// way a court's docket is read.
const SourceDownstream = "source-site"

// defaultSourceLimits are demo-collect's default limits on its page fetches: polite to a
// public site, and well above what one run fetching page after page asks for.
var defaultSourceLimits = runner.DownstreamLimits{RatePerSecond: 20, Burst: 5, Concurrency: 4}

func (c CollectConfig) withDefaults() CollectConfig {
	if c.Source == "" {
		c.Source = "source"
	}
	c.Source = strings.ReplaceAll(c.Source, ":", "-")
	if c.Pages <= 0 {
		c.Pages = 600
	}
	c.PageLatency = durationOr(c.PageLatency, 100*time.Millisecond)
	c.FailureRate = rateOr(c.FailureRate, 0.02)
	if c.Downstream == nil {
		d := defaultSourceLimits
		c.Downstream = &d
	}
	return c
}

// collectJob is demo-collect: it fetches every page of the fake source for the run's business
// date, one item per page on the downstream SourceDownstream, and stores each page's item
// count in demo_collected through the item transaction. A RESUME continues after the last
// committed page.
type collectJob struct {
	pool *pgxpool.Pool
	cfg  CollectConfig
	src  *pageSource

	// beforeFetch, when set (by tests), is called before each fetch with the page and the
	// attempt number.
	beforeFetch func(page, attempt int)
}

func newCollectJob(pool *pgxpool.Pool, cfg CollectConfig) *collectJob {
	cfg = cfg.withDefaults()
	src := &pageSource{seed: cfg.Seed, latency: cfg.PageLatency, failureRate: cfg.FailureRate}
	if err := src.limit.set(cfg.SourceLimit); err != nil {
		// Setup refuses a limit that cannot be; here it is no limit, and the source stays usable.
		src.limit = trueLimit{}
	}
	return &collectJob{pool: pool, cfg: cfg, src: src}
}

func (j *collectJob) Info() runner.JobInfo {
	return runner.JobInfo{
		Name:        CollectJobName,
		Description: fmt.Sprintf("Collects %d pages of a fake paginated source for the business date; resumes after its checkpoint.", j.cfg.Pages),
		Cron:        j.cfg.Cron,
		Version:     "1",
		Downstreams: []runner.Downstream{{Name: SourceDownstream, Defaults: *j.cfg.Downstream}},
	}
}

// collectInput is what a page item's input hash covers.
type collectInput struct {
	Source string `json:"source"`
	Date   string `json:"date"`
	Page   int    `json:"page"`
}

const upsertCollected = `INSERT INTO demo_collected (page, business_date, items, run_id) VALUES ($1, $2::date, $3, $4)
	ON CONFLICT (page, business_date) DO UPDATE SET items = EXCLUDED.items, run_id = EXCLUDED.run_id`

func (j *collectJob) Run(ctx context.Context, run *runner.Run) error {
	date := generationDate(run)
	start, why := resumePage(run.Checkpoint(), j.cfg.Source, date)
	if why != "" {
		run.Logger().Warn("collecting from the first page", "checkpoint", run.Checkpoint(), "reason", why)
	}
	remaining := max(j.cfg.Pages-start+1, 0)
	// The total is this run's share, so a resumed run's progress ends at 100%.
	if err := run.SetTotal(ctx, int64(remaining)); err != nil {
		return err
	}
	if remaining == 0 {
		run.Logger().Info("business date already collected; start with RESTART to collect a new one", "date", date)
		return nil
	}
	run.Logger().Info("collecting", "source", j.cfg.Source, "date", date, "from_page", start, "pages", j.cfg.Pages)
	runID := run.ID()
	for n := start; n <= j.cfg.Pages; n++ {
		item := j.pageItem(date, n)
		err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			if j.beforeFetch != nil {
				j.beforeFetch(n, a.Number)
			}
			p, err := j.src.fetch(ctx, n, a.Number)
			if err != nil {
				return classifyFetchError(err)
			}
			a.Tx(func(ctx context.Context, tx pgx.Tx) error {
				_, err := tx.Exec(ctx, upsertCollected, p.number, date, p.items, runID)
				return err
			})
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// pageItem is the item that fetches page n for a business date.
func (j *collectJob) pageItem(date string, n int) runner.Item {
	return runner.Item{
		Target:     "page:" + strconv.Itoa(n),
		Input:      collectInput{Source: j.cfg.Source, Date: date, Page: n},
		Checkpoint: collectToken(j.cfg.Source, date, n),
		Downstream: SourceDownstream,
	}
}

// classifyFetchError tells the runner what a failed page fetch means: the source's 429 (with
// its Retry-After) and 503 are its pushback, which slows every fetch from it; anything else is
// returned as is.
func classifyFetchError(err error) error {
	var limited *sourceLimited
	switch {
	case errors.As(err, &limited):
		return runner.Throttled(err, limited.retryAfter)
	case errors.Is(err, errSourceUnavailable):
		return runner.Throttled(err, 0)
	}
	return err
}

// generationDate returns run's business date: the UTC date, by the database clock, on which
// the first run of its generation started. A RESUME days later keeps collecting the same date;
// a RESTART opens a new generation and so a new date.
func generationDate(run *runner.Run) string {
	return run.GenerationStartedAt().UTC().Format("2006-01-02")
}

// collectToken is the checkpoint after page n of source for a business date, such as
// "source:2026-11-08:p742".
func collectToken(source, date string, n int) string {
	return fmt.Sprintf("%s:%s:p%d", source, date, n)
}

// parseCollectToken splits a checkpoint made by collectToken.
func parseCollectToken(token string) (source, date string, page int, err error) {
	parts := strings.Split(token, ":")
	if len(parts) != 3 {
		return "", "", 0, fmt.Errorf("checkpoint %q: want source:YYYY-MM-DD:pN", token)
	}
	if _, err := time.Parse(time.DateOnly, parts[1]); err != nil {
		return "", "", 0, fmt.Errorf("checkpoint %q: bad date: %w", token, err)
	}
	num, ok := strings.CutPrefix(parts[2], "p")
	if !ok {
		return "", "", 0, fmt.Errorf("checkpoint %q: page must look like p42", token)
	}
	page, err = strconv.Atoi(num)
	if err != nil || page < 1 {
		return "", "", 0, fmt.Errorf("checkpoint %q: bad page number", token)
	}
	return parts[0], parts[1], page, nil
}

// resumePage returns the first page a run collecting source for date fetches, given the
// checkpoint it resumes after. A checkpoint of another source or date, or one it cannot read,
// starts over at page 1 and says why; the ledger still skips pages already confirmed in the
// generation.
func resumePage(checkpoint, source, date string) (page int, why string) {
	if checkpoint == "" {
		return 1, ""
	}
	src, d, n, err := parseCollectToken(checkpoint)
	switch {
	case err != nil:
		return 1, err.Error()
	case src != source:
		return 1, fmt.Sprintf("checkpoint is for source %q, not %q", src, source)
	case d != date:
		return 1, fmt.Sprintf("checkpoint is for business date %s, not %s", d, date)
	}
	return n + 1, ""
}

// pageSource is the fake paginated source: page sizes and failures are a function of the
// seed, the page and the attempt, so runs are reproducible. Only its own limit, when set, is
// shared between fetches.
type pageSource struct {
	seed        uint64
	latency     time.Duration
	failureRate float64
	limit       trueLimit
}

type page struct{ number, items int }

// errSourceUnavailable is the source's passing failure: nothing was read, try again.
var errSourceUnavailable = errors.New("source unavailable (503)")

// sourceLimited is the source's 429: a fetch past its own limit, refused at once.
type sourceLimited struct {
	page       int
	retryAfter time.Duration
}

func (e *sourceLimited) Error() string {
	return fmt.Sprintf("fetch page %d: source answered 429 Too Many Requests (retry after %s)", e.page, e.retryAfter)
}

// fetch reads page n on the given attempt (from 1). A fetch past the source's own limit is
// refused at once (*sourceLimited); otherwise it waits out the latency unless ctx ends first,
// and fails transiently at the configured rate on the first two attempts only.
func (s *pageSource) fetch(ctx context.Context, n, attempt int) (page, error) {
	ok, retryAfter, done := s.limit.admit(time.Now())
	defer done()
	if !ok {
		return page{}, &sourceLimited{page: n, retryAfter: retryAfter}
	}
	if err := wait(ctx, s.latency); err != nil {
		return page{}, fmt.Errorf("fetch page %d: %w", n, err)
	}
	if attempt < 3 && unit(mix(s.seed, uint64(n), uint64(attempt))) < s.failureRate {
		return page{}, fmt.Errorf("fetch page %d: %w", n, errSourceUnavailable)
	}
	return page{number: n, items: 1 + int(mix(s.seed, uint64(n))%50)}, nil
}
