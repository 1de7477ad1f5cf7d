package main

import (
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/demo"
)

func TestDemoConfigProviderURL(t *testing.T) {
	t.Setenv("BATON_DEMO_PROVIDER_LIMIT", "")
	t.Setenv("BATON_DEMO_FAST", "")
	t.Setenv("BATON_DEMO_PROVIDER_URL", "")
	c, err := demoConfig()
	if err != nil || c.Payments != nil {
		t.Fatalf("without a provider URL: payments %v, %v; want the in-process provider", c.Payments, err)
	}

	t.Setenv("BATON_DEMO_FAST", "1")
	t.Setenv("BATON_DEMO_PROVIDER_URL", "http://127.0.0.1:8099")
	c, err = demoConfig()
	if err != nil {
		t.Fatal(err)
	}
	hp, ok := c.Payments.(*demo.HTTPProvider)
	if !ok || hp.URL() != "http://127.0.0.1:8099" {
		t.Fatalf("payments %#v, want an HTTP provider at http://127.0.0.1:8099", c.Payments)
	}
	if c.Collect.Pages != demo.FastConfig().Collect.Pages {
		t.Fatalf("fast sizes lost with a provider URL: %d pages", c.Collect.Pages)
	}

	t.Setenv("BATON_DEMO_PROVIDER_URL", "127.0.0.1:8099")
	if _, err := demoConfig(); err == nil || !strings.Contains(err.Error(), "BATON_DEMO_PROVIDER_URL") {
		t.Fatalf("a provider URL without a scheme: %v, want an error naming BATON_DEMO_PROVIDER_URL", err)
	}
}

func TestParseProviderLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want demo.ProviderLimit
		bad  bool
	}{
		{in: "30", want: demo.ProviderLimit{Rate: 30}},
		{in: "0.5,2", want: demo.ProviderLimit{Rate: 0.5, Burst: 2}},
		{in: "30, 5, 8", want: demo.ProviderLimit{Rate: 30, Burst: 5, Concurrency: 8}},
		{in: "0,0,4", want: demo.ProviderLimit{Concurrency: 4}},
		{in: "fast", bad: true},
		{in: "-1", bad: true},
		{in: "Inf", bad: true},
		{in: "NaN", bad: true},
		{in: "30,-5", bad: true},
		{in: "30,5,1.5", bad: true},
		{in: "30,5,8,9", bad: true},
	} {
		got, err := parseProviderLimit(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Fatalf("parseProviderLimit(%q) = %+v, %v; want %+v (bad %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestDemoConfigProviderLimit(t *testing.T) {
	t.Setenv("BATON_DEMO_FAST", "1")
	t.Setenv("BATON_DEMO_PROVIDER_URL", "")
	t.Setenv("BATON_DEMO_PROVIDER_LIMIT", "30,5,8")
	c, err := demoConfig()
	if err != nil || c.Provider.Limit != (demo.ProviderLimit{Rate: 30, Burst: 5, Concurrency: 8}) {
		t.Fatalf("provider limit %+v, %v; want 30/s, burst 5, 8 in flight", c.Provider.Limit, err)
	}
	t.Setenv("BATON_DEMO_PROVIDER_LIMIT", "lots")
	if _, err := demoConfig(); err == nil || !strings.Contains(err.Error(), "BATON_DEMO_PROVIDER_LIMIT") {
		t.Fatalf("a bad provider limit: %v, want an error naming BATON_DEMO_PROVIDER_LIMIT", err)
	}
}

func TestDemoConfigShardedSizes(t *testing.T) {
	t.Setenv("BATON_DEMO_FAST", "")
	t.Setenv("BATON_DEMO_PROVIDER_URL", "")
	t.Setenv("BATON_DEMO_PROVIDER_LIMIT", "")
	t.Setenv("BATON_DEMO_CRAWL_PAGES", "160")
	t.Setenv("BATON_DEMO_CRAWL_LATENCY", "5ms")
	t.Setenv("BATON_DEMO_SETTLEMENT_SHARDS", "6")
	c, err := demoConfig()
	if err != nil || c.Crawl.Pages != 160 || c.Crawl.PageLatency != 5*time.Millisecond || c.Settlement.Shards != 6 {
		t.Fatalf("crawl %+v, settlement shards %d, %v; want 160 pages at 5ms and 6 shards", c.Crawl, c.Settlement.Shards, err)
	}
	for key, bad := range map[string]string{"BATON_DEMO_CRAWL_PAGES": "0", "BATON_DEMO_CRAWL_LATENCY": "fast", "BATON_DEMO_SETTLEMENT_SHARDS": "-2"} {
		t.Run(key, func(t *testing.T) {
			t.Setenv(key, bad)
			if _, err := demoConfig(); err == nil || !strings.Contains(err.Error(), key) {
				t.Fatalf("%s=%s: %v, want an error naming %s", key, bad, err, key)
			}
		})
	}
}

func TestDemoConfigSchedules(t *testing.T) {
	t.Setenv("BATON_DEMO_FAST", "")
	t.Setenv("BATON_DEMO_PROVIDER_URL", "")
	t.Setenv("BATON_DEMO_PROVIDER_LIMIT", "")
	t.Setenv("BATON_DEMO_SCHEDULES", "")
	c, err := demoConfig()
	if err != nil || c.Collect.Cron == "" || c.Flaky.Cron == "" {
		t.Fatalf("by default demo-collect and demo-flaky have schedules: %q, %q, %v", c.Collect.Cron, c.Flaky.Cron, err)
	}
	t.Setenv("BATON_DEMO_SCHEDULES", "false")
	if c, err = demoConfig(); err != nil || c.Collect.Cron != "" || c.Flaky.Cron != "" {
		t.Fatalf("BATON_DEMO_SCHEDULES=false: schedules %q, %q, %v; want none", c.Collect.Cron, c.Flaky.Cron, err)
	}
	t.Setenv("BATON_DEMO_SCHEDULES", "sometimes")
	if _, err := demoConfig(); err == nil || !strings.Contains(err.Error(), "BATON_DEMO_SCHEDULES") {
		t.Fatalf("BATON_DEMO_SCHEDULES=sometimes: %v, want an error naming it", err)
	}
}
