package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/demo"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store"
)

// demoConfig reads the demo jobs' sizes from the environment, so a short demo or a browser
// test can shrink them:
//
//	BATON_DEMO_PAGES, BATON_DEMO_PAGE_LATENCY        demo-collect (600, 100ms)
//	BATON_DEMO_FLAKY_ITEMS, BATON_DEMO_ITEM_LATENCY  demo-flaky (200, 100ms)
//	BATON_DEMO_ACCOUNTS, BATON_DEMO_PROVIDER_LATENCY demo-settlement (300, 120ms)
//	BATON_DEMO_SETTLEMENT_BATCH                      accounts per ProcessBatch (1: one by one)
//	BATON_DEMO_SETTLEMENT_SHARDS                     demo-settlement-sharded's shards (12)
//	BATON_DEMO_CRAWL_PAGES, BATON_DEMO_CRAWL_LATENCY demo-crawl, 16 shards (3200, 20ms)
//	BATON_DEMO_FAST=1                                all of them tiny (for tests)
//	BATON_DEMO_SCHEDULES=false                       no demo job on a schedule, a schedule stored
//	                                                 by an earlier start cleared (audited);
//	                                                 demo-collect fires every 15 minutes otherwise
//
// BATON_DEMO_PROVIDER_URL, such as http://127.0.0.1:8099, makes demo-settlement pay through a
// provider served over HTTP (demo.ProviderHandler) instead of one in process, so several
// instances share one provider, its own limit and its records of every call; the provider's
// latency and faults are then the serving process's. Otherwise BATON_DEMO_PROVIDER_LIMIT,
// such as "30,5,8", gives the in-process provider a true limit of its own — 30 calls/s, a
// burst of 5, 8 in flight (burst and concurrency optional, 0 for none) — past which it answers
// 429 with Retry-After. Both hold with BATON_DEMO_FAST too.
func demoConfig() (demo.Config, error) {
	c, err := demoSizes()
	if err != nil {
		return c, err
	}
	if v := os.Getenv("BATON_DEMO_SCHEDULES"); v != "" {
		on, perr := strconv.ParseBool(v)
		if perr != nil {
			return c, fmt.Errorf("BATON_DEMO_SCHEDULES must be true or false, not %q", v)
		}
		if !on {
			c.Collect.Cron, c.Flaky.Cron = "", ""
		}
	}
	if v := os.Getenv("BATON_DEMO_PROVIDER_LIMIT"); v != "" {
		if c.Provider.Limit, err = parseProviderLimit(v); err != nil {
			return c, fmt.Errorf("BATON_DEMO_PROVIDER_LIMIT: %w", err)
		}
	}
	if v := os.Getenv("BATON_DEMO_PROVIDER_URL"); v != "" {
		p, err := demo.NewHTTPProvider(v)
		if err != nil {
			return c, fmt.Errorf("BATON_DEMO_PROVIDER_URL: %w", err)
		}
		c.Payments = p
	}
	return c, nil
}

// demoSizes reads the demo jobs' sizes (demoConfig).
func demoSizes() (demo.Config, error) {
	if envBool("BATON_DEMO_FAST", false) {
		return demo.FastConfig(), nil
	}
	// A schedule each, so the dashboard shows cron in words and next fires from the start.
	c := demo.Config{
		Collect: demo.CollectConfig{Cron: "0 */15 * * * *"},
		Flaky:   demo.FlakyConfig{Cron: "0 0 4 * * *"},
	}
	var err error
	num := func(key string, into *int) {
		if v := os.Getenv(key); v != "" && err == nil {
			n, perr := strconv.Atoi(v)
			if perr != nil || n <= 0 {
				err = fmt.Errorf("%s must be a positive number, not %q", key, v)
				return
			}
			*into = n
		}
	}
	dur := func(key string, into *time.Duration) {
		if v := os.Getenv(key); v != "" && err == nil {
			d, perr := time.ParseDuration(v)
			if perr != nil || d < 0 {
				err = fmt.Errorf("%s must be a duration such as 50ms, not %q", key, v)
				return
			}
			if d == 0 {
				d = demo.Off
			}
			*into = d
		}
	}
	num("BATON_DEMO_PAGES", &c.Collect.Pages)
	dur("BATON_DEMO_PAGE_LATENCY", &c.Collect.PageLatency)
	num("BATON_DEMO_FLAKY_ITEMS", &c.Flaky.Items)
	dur("BATON_DEMO_ITEM_LATENCY", &c.Flaky.ItemLatency)
	num("BATON_DEMO_ACCOUNTS", &c.Settlement.Accounts)
	num("BATON_DEMO_SETTLEMENT_BATCH", &c.Settlement.Batch)
	num("BATON_DEMO_SETTLEMENT_SHARDS", &c.Settlement.Shards)
	num("BATON_DEMO_CRAWL_PAGES", &c.Crawl.Pages)
	dur("BATON_DEMO_CRAWL_LATENCY", &c.Crawl.PageLatency)
	dur("BATON_DEMO_PROVIDER_LATENCY", &c.Provider.Latency)
	return c, err
}

// parseProviderLimit reads "RATE[,BURST[,CONCURRENCY]]", each a number 0 or more.
func parseProviderLimit(v string) (demo.ProviderLimit, error) {
	parts := strings.Split(v, ",")
	if len(parts) > 3 {
		return demo.ProviderLimit{}, fmt.Errorf("want RATE[,BURST[,CONCURRENCY]], not %q", v)
	}
	var lim demo.ProviderLimit
	rate, err := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
	if err != nil || rate < 0 || math.IsInf(rate, 0) || math.IsNaN(rate) {
		return lim, fmt.Errorf("rate must be a number of calls per second, 0 or more, not %q", parts[0])
	}
	lim.Rate = rate
	ints := []*int{&lim.Burst, &lim.Concurrency}
	for i, p := range parts[1:] {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return demo.ProviderLimit{}, fmt.Errorf("%s must be a whole number, 0 or more, not %q", []string{"burst", "concurrency"}[i], p)
		}
		*ints[i] = n
	}
	return lim, nil
}

// demoJobsFunc returns the function that makes the demo jobs on the server's pool, first
// creating the demo's tables: they are not in the product's schema, so `baton migrate up`
// leaves them out and only a server that serves the demo makes them. With schedulesOff
// (BATON_DEMO_SCHEDULES=false) it also clears the schedule a demo job kept from an earlier
// start: a registration leaves a stored schedule as it is, and no demo job is then to be on
// one.
func demoJobsFunc(ctx context.Context, cfg demo.Config, schedulesOff bool) func(*pgxpool.Pool) ([]runner.Job, error) {
	return func(pool *pgxpool.Pool) ([]runner.Job, error) {
		jobs, _, err := demo.Setup(ctx, pool, cfg)
		if err != nil || !schedulesOff {
			return jobs, err
		}
		return jobs, clearDemoSchedules(ctx, postgres.New(pool), jobs)
	}
}

// clearDemoSchedules clears the stored schedule of each of jobs that has one, through the
// store's schedule update (which wakes every scheduler), and audits each change.
func clearDemoSchedules(ctx context.Context, st *postgres.Store, jobs []runner.Job) error {
	none := ""
	for _, j := range jobs {
		name := j.Info().Name
		cur, err := st.Job(ctx, name)
		if bt.CodeOf(err) == bt.CodeNotFound {
			continue // never registered: it starts without a schedule
		}
		if err != nil {
			return fmt.Errorf("demo schedules: %w", err)
		}
		if cur.Cron == "" {
			continue
		}
		if _, err := st.UpdateSchedule(ctx, name, store.SchedulePatch{Cron: &none, Actor: "demo"}); err != nil {
			return fmt.Errorf("demo schedules: clear %s: %w", name, err)
		}
		if err := st.Audit(ctx, store.AuditRecord{Actor: "demo", Action: "updateJobSchedule", Target: "job:" + name,
			Arguments: map[string]any{"cron": none, "was": cur.Cron, "reason": "BATON_DEMO_SCHEDULES=false"}, Outcome: "ok"}); err != nil {
			return fmt.Errorf("demo schedules: audit %s: %w", name, err)
		}
	}
	return nil
}
