// Package demo holds the jobs `baton serve --demo` registers so a fresh cluster shows real
// work: demo-collect pages through a fake paginated source with checkpoints, demo-flaky fills
// the error table and the ledger with every failure class, and demo-settlement pays accounts
// through Provider, a fake payment provider that honours idempotency keys and can be told to
// fail in every way a real one does — including timing out after the payment was made.
// demo-crawl and demo-settlement-sharded are the sharded runs (docs/adr/0019): the pages of a
// fake source in 16 ranges, and demo-settlement's accounts in 12, worked by every instance at
// once, each shard from its own checkpoint.
//
// demo-settlement and demo-collect declare the outside systems they call as downstreams
// ("provider" and "source-site"), whose limits Baton holds cluster-wide; the fakes can enforce
// a true limit of their own (ProviderLimit) and answer 429 with Retry-After past it.
//
// Everything runs in process against Baton's own PostgreSQL, in tables of the demo's own
// (demo_collected and demo_provider_effects) that Migrate creates from the demo's migrations,
// never the product's; nothing here is for production use. The one exception is the provider,
// which ProviderHandler can serve over HTTP so that several instances share it
// (NewHTTPProvider, Config.Payments).
package demo

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/runner"
)

// Job names.
const (
	CollectJobName           = "demo-collect"
	FlakyJobName             = "demo-flaky"
	SettlementJobName        = "demo-settlement"
	CrawlJobName             = "demo-crawl"
	ShardedSettlementJobName = "demo-settlement-sharded"
)

// Off disables a latency or a failure rate in any config of this package, where zero means
// "the default".
const Off = -1

// Config configures every demo job. The zero value is the demo as `make run` shows it:
// about a minute of collecting, twenty-odd seconds of flaky records and some forty seconds
// of payments.
type Config struct {
	Collect    CollectConfig    // demo-collect
	Flaky      FlakyConfig      // demo-flaky
	Settlement SettlementConfig // demo-settlement and demo-settlement-sharded
	Crawl      CrawlConfig      // demo-crawl
	Provider   ProviderConfig   // the in-process provider demo-settlement pays through
	// Payments, when set, is the provider both settlements pay through instead of an
	// in-process one, such as an *HTTPProvider shared by several instances; Provider is then
	// unused.
	Payments PaymentAPI
}

// FastConfig returns a Config shrunk for tests: few items, millisecond latencies, the same
// kinds of failure at higher rates so a few items still meet them. demo-settlement's stop
// conditions are off: over forty calls those rates would trip them.
func FastConfig() Config {
	return Config{
		Collect:    CollectConfig{Pages: 30, PageLatency: time.Millisecond, FailureRate: 0.1, Seed: 1},
		Flaky:      FlakyConfig{Items: 40, ItemLatency: Off},
		Settlement: SettlementConfig{Accounts: 40, StopConditions: []runner.StopCondition{}},
		Crawl:      CrawlConfig{Pages: 64, PageLatency: time.Millisecond, Seed: 1},
		Provider: ProviderConfig{Latency: time.Millisecond, ServerErrorRate: 0.05, ThrottleRate: 0.05,
			TimeoutAfterApplyRate: 0.05, RejectRate: Off, Seed: 1},
	}
}

// Jobs returns the demo jobs, ready to register — demo-collect, demo-flaky, demo-settlement,
// demo-crawl and demo-settlement-sharded, in that order — and the in-process provider the
// settlements pay through (so operators and tests can switch its faults and its limit at runtime), or nil
// when cfg.Payments is set. pool must reach a database that Migrate has run on; Setup does both.
func Jobs(pool *pgxpool.Pool, cfg Config) ([]runner.Job, *Provider) {
	var p *Provider
	payments := cfg.Payments
	if payments == nil {
		p = NewProvider(pool, cfg.Provider)
		payments = p
	}
	return []runner.Job{
		newCollectJob(pool, cfg.Collect),
		newFlakyJob(cfg.Flaky),
		newSettlementJob(payments, cfg.Settlement),
		newCrawlJob(cfg.Crawl),
		newShardedSettlementJob(payments, cfg.Settlement),
	}, p
}

// durationOr returns d for 0, 0 for a negative (Off) duration, and v otherwise.
func durationOr(v, d time.Duration) time.Duration { return settingOr(v, d) }

// rateOr returns d for 0, 0 for a negative (Off) rate, and v capped at 1 otherwise.
func rateOr(v, d float64) float64 {
	if v > 0 {
		return min(v, 1)
	}
	return settingOr(v, d)
}

// settingOr reads a setting whose zero means "the default d" and whose negatives mean Off.
func settingOr[T time.Duration | float64](v, d T) T {
	switch {
	case v == 0:
		return d
	case v < 0:
		return 0
	default:
		return v
	}
}

// wait blocks for d or until ctx is done, whichever comes first.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// mix hashes vals into a well-spread 64-bit value (splitmix64 steps), so the fakes are
// deterministic by seed without sharing a random source between goroutines.
func mix(vals ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, v := range vals {
		h ^= v
		h += 0x9e3779b97f4a7c15
		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9
		h = (h ^ (h >> 27)) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

// unit maps h to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }
