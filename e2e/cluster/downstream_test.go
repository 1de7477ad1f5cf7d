package cluster

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/demo"
	"github.com/baton-run/baton/internal/testenv"
)

// TestClusterDownstreamLimits: three `baton serve --demo` instances pay through one provider
// that the test serves over HTTP. A limit an operator sets on one instance holds for the
// holder on another, as the provider's own arrival times show; a pause on a third holds the
// holder's calls without failing its run; and an instance cut off from Redis raises the
// DOWNSTREAM_LIMIT_DEGRADED alarm on the others.
func TestClusterDownstreamLimits(t *testing.T) {
	var handler atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := handler.Load()
		if h == nil {
			http.Error(w, "the provider is not up yet", http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	const accounts = 150
	c := New(t, Config{Env: map[string]string{
		"BATON_DEMO_ACCOUNTS":         strconv.Itoa(accounts),
		"BATON_DEMO_SETTLEMENT_BATCH": "25",
		"BATON_DEMO_PROVIDER_URL":     srv.URL,
		"BATON_DEMO_PAGES":            "20",
		"BATON_DEMO_PAGE_LATENCY":     "10ms",
	}})
	p := demo.NewProvider(c.DB, demo.ProviderConfig{Latency: 40 * time.Millisecond, ServerErrorRate: demo.Off,
		ThrottleRate: demo.Off, TimeoutAfterApplyRate: demo.Off, RejectRate: demo.Off,
		Limit: demo.ProviderLimit{Rate: 20, Burst: 5}})
	h := demo.ProviderHandler(p)
	handler.Store(&h)

	// An operator lowers the limit on instance 2 and pauses the downstream on instance 3,
	// before the run: every instance applies both within a second (read off its /metrics).
	setDownstream(t, c.Node(2), map[string]any{"name": "provider", "ratePerSecond": 12, "burst": 3, "concurrency": 4, "reason": "provider asked"})
	setDownstream(t, c.Node(3), map[string]any{"name": "provider", "paused": true})
	for _, n := range c.Nodes {
		waitGauge(t, n, `baton_downstream_limit{downstream="provider",kind="paused"} 1`, 5*time.Second)
		waitGauge(t, n, `baton_downstream_limit{downstream="provider",kind="concurrency"} 4`, 5*time.Second)
	}
	id := start(t, c.Node(1), "demo-settlement", "RESTART")
	held := time.Now()
	for time.Since(held) < 2*c.Cfg.Lease {
		if r := c.RunRow(id); r.Status != "RUNNING" && r.Status != "STARTING" {
			t.Fatalf("a run held by a paused downstream: %s: %s", describe(r), r.Message)
		}
		time.Sleep(200 * time.Millisecond) // the hold's length, not a wait for async work
	}
	if n := len(p.Records().Calls); n != 0 {
		t.Fatalf("%d calls reached the provider while its downstream was paused", n)
	}
	if n := c.QueryInt(`SELECT count(*) FROM job_ledger WHERE run_id = $1`, id); n != 0 {
		t.Fatalf("%d ledger rows written while the run was held; want none (the hold is before the intents)", n)
	}
	// A resume on instance 2 lets the run on instance 1 finish, under the lowered limit.
	setDownstream(t, c.Node(2), map[string]any{"name": "provider", "paused": false})
	if r := c.WaitRun(id, 2*time.Minute, "ends", func(r *RunRow) bool { return !r.Active() }); r.Status != "SUCCEEDED" || r.Failed != 0 {
		t.Fatalf("the run after the resume: %s: %s", describe(r), r.Message)
	}
	rec := p.Records()
	if most := mostInASecond(rec.Calls); most > 15 {
		t.Errorf("the provider saw %d calls within one second; the limit is 12/s with a burst of 3", most)
	}
	if rec.PeakInFlight > 4 {
		t.Errorf("the provider saw %d calls in flight at once; the limit is 4", rec.PeakInFlight)
	}
	if rec.Limited != 0 {
		t.Errorf("the provider refused %d calls, though Baton's limit is under the provider's", rec.Limited)
	}
	if n := c.QueryInt(`SELECT count(DISTINCT idempotency_key) FROM demo_provider_effects`); n != accounts || c.QueryInt(`SELECT count(*) FROM demo_provider_effects`) != accounts {
		t.Errorf("%d payments made; want each of the %d accounts paid once", n, accounts)
	}
	c.Logf("provider: %d calls, at most %d in a second, peak %d in flight", len(rec.Calls), mostInASecond(rec.Calls), rec.PeakInFlight)

	// Instance 3 loses Redis: the others show the alarm, which clears when it is back.
	c.Node(3).CutRedis()
	waitAlarm(t, c.Node(1), "DOWNSTREAM_LIMIT_DEGRADED", true, 45*time.Second)
	c.Node(3).Heal()
	waitAlarm(t, c.Node(1), "DOWNSTREAM_LIMIT_DEGRADED", false, 45*time.Second)
}

// setDownstream runs updateDownstream on n, failing the test on any error.
func setDownstream(t *testing.T, n *Node, input map[string]any) {
	t.Helper()
	var out struct {
		UpdateDownstream struct {
			UserErrors []UserError `json:"userErrors"`
		} `json:"updateDownstream"`
	}
	err := n.API().Do(ctxT(t), `mutation($input: UpdateDownstreamInput!) { updateDownstream(input: $input) { userErrors { code message } } }`,
		map[string]any{"input": input}, &out)
	if err != nil || len(out.UpdateDownstream.UserErrors) > 0 {
		t.Fatalf("updateDownstream %v on %s: %v %+v", input, n.Name, err, out.UpdateDownstream.UserErrors)
	}
	n.c.Logf("%s: updateDownstream %v", n.Name, input)
}

// waitGauge polls n's /metrics until it has the line want.
func waitGauge(t *testing.T, n *Node, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(n.BaseURL + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), "\n"+want+"\n") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /metrics has no %q within %s", n.Name, want, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitAlarm polls n's alerts until kind is active (or, with want false, gone).
func waitAlarm(t *testing.T, n *Node, kind string, want bool, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var out struct {
			Alerts []struct {
				Kind string `json:"kind"`
			} `json:"alerts"`
		}
		if err := n.API().Do(ctxT(t), `{ alerts { kind } }`, nil, &out); err == nil {
			found := false
			for _, a := range out.Alerts {
				found = found || a.Kind == kind
			}
			if found == want {
				n.c.Logf("%s: alarm %s active=%v", n.Name, kind, want)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("alarm %s active=%v on %s: not within %s", kind, want, n.Name, within)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// mostInASecond returns the most times within any one second.
func mostInASecond(ts []time.Time) int {
	most, _ := testenv.MostWithin(ts, time.Second)
	return most
}
