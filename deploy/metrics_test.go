package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server"
)

// exported is what a scrape of /metrics shows: each series name (a histogram's as its
// _bucket, _sum and _count) with the values each of its labels took.
type exported map[string]map[string]map[string]bool

func (e exported) add(name string, labels []*dto.LabelPair, extra ...string) {
	if e[name] == nil {
		e[name] = map[string]map[string]bool{}
	}
	for _, l := range labels {
		if e[name][l.GetName()] == nil {
			e[name][l.GetName()] = map[string]bool{}
		}
		e[name][l.GetName()][l.GetValue()] = true
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if e[name][extra[i]] == nil {
			e[name][extra[i]] = map[string]bool{}
		}
		e[name][extra[i]][extra[i+1]] = true
	}
}

// parseExposition reads a scrape in Prometheus' text format.
func parseExposition(r io.Reader) (exported, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	out := exported{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				for _, b := range m.GetHistogram().GetBucket() {
					out.add(name+"_bucket", m.GetLabel(), "le", model.FloatString(b.GetUpperBound()).String())
				}
				out.add(name+"_bucket", m.GetLabel(), "le", "+Inf")
				out.add(name+"_sum", m.GetLabel())
				out.add(name+"_count", m.GetLabel())
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					out.add(name, m.GetLabel(), "quantile", model.FloatString(q.GetQuantile()).String())
				}
				out.add(name+"_sum", m.GetLabel())
				out.add(name+"_count", m.GetLabel())
			default:
				out.add(name, m.GetLabel())
			}
		}
	}
	return out, nil
}

// nameCheck judges the selectors of the rules and the dashboard against a scrape of Baton.
type nameCheck struct {
	exported exported
	recorded map[string]bool // the names the recording rules define
	// enums are label values a short run does not show (an alarm kind not active, a run
	// status not reached), by metric and label: Baton's enumerations from runner/batontype.
	enums map[string]map[string][]string
}

// targetLabels are the labels Prometheus gives every series it scrapes; their values are
// the operator's.
var targetLabels = map[string]bool{"job": true, "instance": true}

// literalAlternation is a regular expression that only lists values: a|b|c.
var literalAlternation = regexp.MustCompile(`^[A-Za-z0-9_.+-]+(\|[A-Za-z0-9_.+-]+)*$`)

// problems returns what is wrong with q's selectors: a metric Baton does not export (and no
// recording rule records), a label it does not carry, a label value it never takes.
func (c nameCheck) problems(q query) []string {
	sels, err := selectorsOf(q.expr)
	if err != nil {
		return []string{fmt.Sprintf("%s: %q: %v", q.where, q.expr, err)}
	}
	if len(sels) == 0 {
		return []string{fmt.Sprintf("%s: %q reads no series", q.where, q.expr)}
	}
	var out []string
	for _, s := range sels {
		if c.recorded[s.Name] {
			continue
		}
		if s.Name == "up" { // Prometheus' own, per target
			for _, m := range s.Matchers {
				if !targetLabels[m.Label] {
					out = append(out, fmt.Sprintf("%s: up has no label %s", q.where, m.Label))
				}
			}
			continue
		}
		labels, ok := c.exported[s.Name]
		if !ok {
			out = append(out, fmt.Sprintf("%s: %s is not a series Baton exports", q.where, s.Name))
			continue
		}
		for _, l := range q.needLabels {
			if labels[l] == nil && !targetLabels[l] {
				out = append(out, fmt.Sprintf("%s: %s has no label %s", q.where, s.Name, l))
			}
		}
		for _, m := range s.Matchers {
			if targetLabels[m.Label] || m.Label == "__name__" {
				continue
			}
			values := labels[m.Label]
			if values == nil {
				out = append(out, fmt.Sprintf("%s: %s has no label %s", q.where, s.Name, m.Label))
				continue
			}
			var want []string
			switch {
			case strings.Contains(m.Value, "$"): // a Grafana variable
			case m.Op == "=" || m.Op == "!=":
				want = []string{m.Value}
			case literalAlternation.MatchString(m.Value):
				want = strings.Split(m.Value, "|")
			}
			for _, v := range want {
				if !values[v] && !slices.Contains(c.enums[s.Name][m.Label], v) {
					out = append(out, fmt.Sprintf("%s: %s{%s} never takes the value %q", q.where, s.Name, m.Label, v))
				}
			}
		}
	}
	return out
}

// probeJob is a job whose one run makes every series the rules and the dashboard read that
// exists only once something happened: a run started and finished, items committed, calls
// to downstreams that succeed, fail and are pushed back on, and a call that waits for its
// turn (two calls in a row under a limit of one a second).
func probeJob() runner.Job {
	info := runner.JobInfo{
		Name:           "metrics-probe",
		Retry:          runner.RetryPolicy{MaxAttempts: 1},
		StopConditions: []runner.StopCondition{}, // the failed calls must not stop the run
		Downstreams: []runner.Downstream{
			{Name: "probe-limited", Defaults: runner.DownstreamLimits{RatePerSecond: 1, Burst: 1}},
			{Name: "probe-open"},
		},
	}
	errDown := errors.New("503 service unavailable")
	calls := []struct {
		target, downstream string
		err                error
	}{
		{"failed", "probe-open", runner.Transient(errDown)},
		{"throttled", "probe-open", runner.Throttled(errors.New("429 too many requests"), 0)},
		{"first", "probe-limited", nil},
		{"waited", "probe-limited", nil}, // the limit's one token went to "first"
	}
	return runner.NewJob(info, func(ctx context.Context, run *runner.Run) error {
		for _, c := range calls {
			item := runner.Item{Target: c.target, External: true, Downstream: c.downstream}
			if err := run.Process(ctx, item, func(context.Context, *runner.Attempt) error { return c.err }); err != nil {
				return err
			}
		}
		return nil
	})
}

// startBaton serves a Baton instance with the probe job on the test's schema and Redis
// prefix until the test ends, and returns its URL and an admin token.
func startBaton(t *testing.T) (base, token string) {
	t.Helper()
	_, env := testenv.Redis(t) // a prefix of the test's own, its keys deleted at the end
	c := server.DefaultConfig()
	c.DatabaseURL = testenv.Schema(t)
	c.RedisURL = testenv.RedisURL()
	c.Env = env
	c.Addr = "127.0.0.1:0"
	c.PoolSize = 2
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	c.AdminTokenName = "deploy-metrics"
	c.DrainDelay = 0 // no load balancer to wait for
	c.Jobs = []runner.Job{probeJob()}
	type started struct{ base, token string }
	ready := make(chan started, 1)
	c.Ready = func(base, token string) { ready <- started{base, token} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, c) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case s := <-ready:
		return s.base, s.token
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("not ready within a minute")
	}
	return "", ""
}

// startJob starts a job through the GraphQL API, as an operator would.
func startJob(t *testing.T, base, token, job string) {
	t.Helper()
	res := postGraphQL(t, base, token, `mutation($name: String!) { startJob(input: {name: $name}) { run { id } userErrors { code message } } }`,
		map[string]any{"name": job})
	defer res.Body.Close()
	var out struct {
		Data struct {
			StartJob struct {
				Run        *struct{ ID string }
				UserErrors []struct{ Code, Message string }
			}
		}
		Errors []struct{ Message string }
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("startJob: HTTP %d: %v", res.StatusCode, err)
	}
	if s := out.Data.StartJob; len(out.Errors) > 0 || len(s.UserErrors) > 0 || s.Run == nil {
		t.Fatalf("startJob %s: HTTP %d, errors %v, user errors %v", job, res.StatusCode, out.Errors, s.UserErrors)
	}
}

// graphQLError asks the API for a field that does not exist, which it refuses with a
// top-level error (GRAPHQL_VALIDATION_FAILED): baton_graphql_errors_total exists from then on.
func graphQLError(t *testing.T, base, token string) {
	t.Helper()
	res := postGraphQL(t, base, token, `{ noSuchField }`, nil)
	defer res.Body.Close()
	var out struct{ Errors []struct{ Message string } }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || len(out.Errors) == 0 {
		t.Fatalf("a query of a field that does not exist: HTTP %d, %v, errors %v; want an error", res.StatusCode, err, out.Errors)
	}
}

// postGraphQL posts query with vars to the instance's /graphql as token's holder.
func postGraphQL(t *testing.T, base, token, query string, vars map[string]any) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, base+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// scrape reads /metrics as Prometheus does.
func scrape(t *testing.T, base string) exported {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d", res.StatusCode)
	}
	e, err := parseExposition(res.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return e
}

// TestRulesAndDashboardReadWhatBatonExports scrapes /metrics of a real instance after a run
// through it and checks that every series the rules and the dashboard select is one Baton
// exports, with labels and label values it carries. A scrape, not a list kept by hand: it
// sees what an operator's Prometheus will see (a histogram's _bucket series, the collector
// of alarms, the Go and process collectors), and a renamed series fails here. Series that
// appear only once something happened are made to happen by the probe job's run; label
// values a short run cannot show (every alarm kind, every run status) come from
// runner/batontype's enumerations.
func TestRulesAndDashboardReadWhatBatonExports(t *testing.T) {
	t.Parallel()
	base, token := startBaton(t)
	startJob(t, base, token, "metrics-probe")
	graphQLError(t, base, token)
	// The run counters exist at zero from the start: the run has finished when one counted.
	testenv.Eventually(t, time.Minute, "the probe run to finish", func() bool {
		return counterSum(t, base, "baton_runs_finished_total") > 0
	})
	if n := counterValue(t, base, "baton_runs_finished_total", "status", "SUCCEEDED"); n != 1 {
		t.Fatalf("the probe run finished, %v SUCCEEDED; want 1", n)
	}
	got := scrape(t, base)

	enums := batontypeEnums(t)
	check := nameCheck{
		exported: got,
		recorded: recordedNames(t, ruleFiles...),
		enums: map[string]map[string][]string{
			"baton_alerts":              {"kind": enums["AlertKind"]},
			"baton_alert_value":         {"kind": enums["AlertKind"]},
			"baton_runs_finished_total": {"status": enums["RunStatus"]},
			"baton_runs_started_total":  {"trigger": enums["Trigger"]},
			"baton_items_total":         {"result": enums["LedgerState"]},
			// Answered only on a server failure, which a healthy instance does not have.
			"baton_graphql_errors_total": {"code": {graph.CodeInternal}},
		},
	}
	queries := append(ruleQueries(t, ruleFiles...), dashboardQueries(t, loadDashboard(t))...)
	for _, q := range queries {
		for _, p := range check.problems(q) {
			t.Error(p)
		}
	}

	// The check fails what it should, against the same scrape: misspelt names, labels and
	// values, a histogram read by its family name, and a misspelt rule in a rule file.
	for _, tc := range []struct {
		expr string
		want string // in the one problem expected; "" for none
	}{
		{`increase(baton_lease_lost_total[10m]) > 0`, ""},
		{`increase(baton_lease_lost_totl[10m]) > 0`, "baton_lease_lost_totl is not a series Baton exports"},
		{`max without (instance) (baton_alerts{kind="HEARTBEAT_MISED"})`, `never takes the value "HEARTBEAT_MISED"`},
		{`max without (instance) (baton_alerts{knd="HEARTBEAT_MISSED"})`, "baton_alerts has no label knd"},
		{`baton_alerts{kind="DOWNSTREAM_LIMIT_DEGRADED"}`, ""}, // reported only while active
		{`baton_runs_finished_total{status="FAILED"}`, ""},     // no run failed here
		{`rate(baton_downstream_calls_total{outcome=~"error|throttld"}[5m])`, `never takes the value "throttld"`},
		{`histogram_quantile(0.99, rate(baton_scheduler_lateness_seconds[5m]))`, "baton_scheduler_lateness_seconds is not a series"},
		{`job:baton_items:rate5m`, ""},
		{`job:baton_itms:rate5m`, "job:baton_itms:rate5m is not a series"},
		{`up{job="baton", team="x"}`, "up has no label team"},
		{`vector(1)`, "reads no series"},
	} {
		problems := check.problems(query{where: "case", expr: tc.expr})
		switch {
		case tc.want == "" && len(problems) > 0:
			t.Errorf("%s: %v; want no problem", tc.expr, problems)
		case tc.want != "" && (len(problems) != 1 || !strings.Contains(problems[0], tc.want)):
			t.Errorf("%s: %v; want one problem with %q", tc.expr, problems, tc.want)
		}
	}
	var fixture []string
	for _, q := range ruleQueries(t, "testdata/misspelt.rules.yml") {
		fixture = append(fixture, check.problems(q)...)
	}
	if len(fixture) != 1 || !strings.Contains(fixture[0], "alert BatonLeaseLost: baton_lease_lost_totl is not a series") {
		t.Errorf("testdata/misspelt.rules.yml: %q; want its misspelt baton_lease_lost_totl named", fixture)
	}
}
