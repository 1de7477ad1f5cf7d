package demo

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

func TestDemoJobsDeclareDownstreams(t *testing.T) {
	t.Parallel()
	jobs, p := Jobs(nil, FastConfig())
	if p == nil {
		t.Fatalf("no in-process provider returned without Config.Payments")
	}
	declared := map[string][]runner.Downstream{}
	for _, j := range jobs {
		declared[j.Info().Name] = j.Info().Downstreams
	}
	want := map[string][]runner.Downstream{
		SettlementJobName: {{Name: ProviderDownstream, Defaults: runner.DownstreamLimits{RatePerSecond: 50, Burst: 10, Concurrency: 16}}},
		CollectJobName:    {{Name: SourceDownstream, Defaults: runner.DownstreamLimits{RatePerSecond: 20, Burst: 5, Concurrency: 4}}},
	}
	for job, ds := range want {
		if len(declared[job]) != 1 || declared[job][0] != ds[0] {
			t.Fatalf("%s declares %+v, want %+v", job, declared[job], ds)
		}
	}
	if len(declared[FlakyJobName]) != 0 {
		t.Fatalf("demo-flaky calls nothing outside, yet declares %+v", declared[FlakyJobName])
	}
	// Every item names its downstream.
	if it := settlementItem("acct:0001", SettlementInput{Account: "acct:0001", Amount: 1}); it.Downstream != ProviderDownstream || !it.External {
		t.Fatalf("payment item %+v, want external on %s", it, ProviderDownstream)
	}
	if it := jobs[0].(*collectJob).pageItem("2026-11-08", 3); it.Downstream != SourceDownstream || it.Target != "page:3" {
		t.Fatalf("page item %+v, want page:3 on %s", it, SourceDownstream)
	}

	// Tests set their own defaults; a pointer to zero declares the downstream unlimited.
	cfg := FastConfig()
	cfg.Settlement.Downstream = &runner.DownstreamLimits{RatePerSecond: 5, Concurrency: 2}
	cfg.Collect.Downstream = &runner.DownstreamLimits{}
	jobs, _ = Jobs(nil, cfg)
	if got := jobs[2].Info().Downstreams; len(got) != 1 || got[0].Defaults != *cfg.Settlement.Downstream {
		t.Fatalf("settlement declares %+v, want %+v", got, *cfg.Settlement.Downstream)
	}
	if got := jobs[0].Info().Downstreams; len(got) != 1 || got[0] != (runner.Downstream{Name: SourceDownstream}) {
		t.Fatalf("collect declares %+v, want %s with no limit", got, SourceDownstream)
	}
}

func TestCollectSourceLimitPushesBack(t *testing.T) {
	t.Parallel()
	cfg := FastConfig().Collect
	cfg.PageLatency, cfg.FailureRate = Off, Off
	cfg.SourceLimit = ProviderLimit{Rate: 0.1, Burst: 2}
	src := newCollectJob(nil, cfg).src
	ctx := context.Background()
	for n := 1; n <= 2; n++ {
		if _, err := src.fetch(ctx, n, 1); err != nil {
			t.Fatalf("page %d within the source's burst: %v", n, err)
		}
	}
	_, err := src.fetch(ctx, 3, 1)
	var limited *sourceLimited
	if !errors.As(err, &limited) || limited.retryAfter < time.Second || limited.retryAfter > 10*time.Second {
		t.Fatalf("page 3 past the source's limit: %v, want a 429 with Retry-After of 1 to 10 seconds", err)
	}
	for _, pushback := range []error{err, errSourceUnavailable} {
		got := classifyFetchError(pushback)
		if c := runner.ClassOf(got, false); c != bt.LedgerTransient || !errors.Is(got, pushback) {
			t.Fatalf("%v: classified %s (%v), want TRANSIENT wrapping it", pushback, c, got)
		}
	}
	if other := errors.New("parse page: unexpected EOF"); classifyFetchError(other) != other {
		t.Fatalf("an error that is no pushback was classified: %v", classifyFetchError(other))
	}
	if rec := src.limit.record(); len(rec.Calls) != 3 || rec.Limited != 1 {
		t.Fatalf("source records %d fetches, %d refused; want 3 and 1", len(rec.Calls), rec.Limited)
	}
}

func TestSetupRefusesImpossibleLimits(t *testing.T) {
	t.Parallel()
	cfg := FastConfig()
	cfg.Collect.SourceLimit = ProviderLimit{Rate: 1, Concurrency: -1}
	_, _, err := Setup(context.Background(), nil, cfg)
	var be *bt.Error
	if !errors.As(err, &be) || be.Code != bt.CodeInvalidInput || be.Field != "concurrency" {
		t.Fatalf("Setup with a negative source concurrency: %v, want INVALID_INPUT on concurrency", err)
	}
	cfg = FastConfig()
	cfg.Provider.Limit = ProviderLimit{Rate: -3}
	if _, _, err := Setup(context.Background(), nil, cfg); !errors.As(err, &be) || be.Code != bt.CodeInvalidInput || be.Field != "rate" {
		t.Fatalf("Setup with a negative provider rate: %v, want INVALID_INPUT on rate", err)
	}
}

func TestProviderConfigLimitHoldsFromTheStart(t *testing.T) {
	t.Parallel()
	cfg := quiet
	cfg.Limit = ProviderLimit{Concurrency: 2}
	if got := NewProvider(nil, cfg).Limit(); got != cfg.Limit {
		t.Fatalf("limit %+v, want %+v", got, cfg.Limit)
	}
}

func TestSettlementPaysThroughHTTPProvider(t *testing.T) {
	b := setup(t)
	p := NewProvider(b.Pool, quiet)
	srv := httptest.NewServer(ProviderHandler(p))
	t.Cleanup(srv.Close)
	client, err := NewHTTPProvider(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg := FastConfig()
	cfg.Payments = client
	jobs, inProcess := Jobs(b.Pool, cfg)
	if inProcess != nil {
		t.Fatalf("an in-process provider was made although Config.Payments is set")
	}
	r := b.runner(jobs...)
	id := b.start(r, runner.StartParams{Job: SettlementJobName})
	got := b.waitStatus(r, id, bt.StatusSucceeded)
	if got.Succeeded != 40 {
		t.Fatalf("%d accounts paid, want 40", got.Succeeded)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger l JOIN demo_provider_effects e ON e.idempotency_key = l.idempotency_key
		WHERE l.state = 'CONFIRMED' AND l.effect_ref = 'pay_' || e.id`); n != 40 {
		t.Fatalf("%d confirmed payments carry their effect's ref, want 40", n)
	}
	if rec := p.Records(); len(rec.Calls) != 40 || rec.InFlight != 0 {
		t.Fatalf("the shared provider saw %d calls (%d in flight), want 40 (0)", len(rec.Calls), rec.InFlight)
	}
}

func TestSettlementPushbackSlowsTheProviderDownstream(t *testing.T) {
	b := setup(t)
	cfg := FastConfig()
	cfg.Provider = quiet
	cfg.Provider.Latency = 5 * time.Millisecond
	cfg.Provider.Limit = ProviderLimit{Rate: 5, Burst: 2} // the provider's true limit, below Baton's
	cfg.Settlement.Batch = 8
	cfg.Settlement.Downstream = &runner.DownstreamLimits{RatePerSecond: 100, Burst: 20, Concurrency: 8}
	jobs, p := Jobs(b.Pool, cfg)
	r := b.runner(jobs...)
	ctx := context.Background()
	ds, err := r.Downstreams().Get(ctx, ProviderDownstream)
	same := func(l runner.DownstreamLimits) bool {
		return l.RatePerSecond == 100 && l.Burst == 20 && l.Concurrency == 8 && l.Quota == 0 && !l.Paused
	}
	if err != nil || !same(ds.Defaults) || !same(ds.Limits) {
		t.Fatalf("the provider downstream as the cluster holds it: %+v, %v; want limits and defaults %+v", ds, err, *cfg.Settlement.Downstream)
	}
	id := b.start(r, runner.StartParams{Job: SettlementJobName})
	// The provider's 429s come back to the runner as pushback on its downstream.
	testenv.Eventually(t, 20*time.Second, "the runner to count the provider's 429s", func() bool {
		ds, err := r.Downstreams().Get(ctx, ProviderDownstream)
		if err != nil {
			t.Fatal(err)
		}
		return ds.Stats.Throttled > 0 && p.Stats().Limited > 0
	})
	// Enough seen; a run that has ended already is NOT_ACTIVE.
	var be *bt.Error
	if _, err := r.Runs().Cancel(ctx, id, "test"); err != nil && (!errors.As(err, &be) || be.Code != bt.CodeNotActive) {
		t.Fatal(err)
	}
	b.waitEnd(r, id)
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); int64(n) != p.Stats().Applied {
		t.Fatalf("%d effects, the provider applied %d: a 429 made an effect", n, p.Stats().Applied)
	}
}
