package deploy

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeText reads /metrics in Prometheus' text format, as it is.
func scrapeText(t *testing.T, base string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d, %v", res.StatusCode, err)
	}
	return b
}

// TestMetricsPassPromtoolCheck: `promtool check metrics` finds no problem in a scrape of a
// fresh instance (counters end in _total, no gauge ends in _count, durations are in seconds).
func TestMetricsPassPromtoolCheck(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	base, _ := startBaton(t)
	text := scrapeText(t, base)
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	// The check must be able to fail: a counter without _total is a problem to it.
	cmd = exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader("# HELP baton_bad A counter.\n# TYPE baton_bad counter\nbaton_bad 1\n")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "_total") {
		t.Errorf("promtool check metrics on a counter without _total: %v, %s; want a problem", err, out)
	}
}

// TestKeyCountersExportedFromStart: before anything happened, the counters that rules and
// dashboards read are there at zero, so that a rate sees the first increase; and
// baton_build_info says which build serves.
func TestKeyCountersExportedFromStart(t *testing.T) {
	t.Parallel()
	base, _ := startBaton(t)
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(scrapeText(t, base)))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"baton_runs_started_total", "baton_runs_finished_total", "baton_items_total",
		"baton_graphql_errors_total", "baton_downstream_throttled_total"} {
		f := families[name]
		if f == nil || len(f.GetMetric()) == 0 {
			t.Errorf("%s is not exported before anything happened", name)
			continue
		}
		for _, m := range f.GetMetric() {
			if v := m.GetCounter().GetValue(); v != 0 {
				t.Errorf("%s%v = %v on a fresh instance; want 0", name, m.GetLabel(), v)
			}
		}
	}
	bi := families["baton_build_info"]
	if bi == nil || len(bi.GetMetric()) != 1 {
		t.Fatalf("baton_build_info: %v; want one series", bi)
	}
	m := bi.GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if bi.GetType() != dto.MetricType_GAUGE || m.GetGauge().GetValue() != 1 ||
		labels["go"] != runtime.Version() || labels["version"] == "" || labels["commit"] == "" {
		t.Errorf("baton_build_info = %v %v; want a gauge of 1 with version, commit and go=%s", labels, m.GetGauge().GetValue(), runtime.Version())
	}
}

// counterValues reads the values of counter name's series from /metrics, by the value of
// label (each series' own when label is "").
func counterValues(t *testing.T, base, name, label string) map[string]float64 {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(scrapeText(t, base)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, m := range families[name].GetMetric() {
		key := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				key = l.GetValue()
			}
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}

// counterValue is the value of counter name's series whose label has value.
func counterValue(t *testing.T, base, name, label, value string) float64 {
	t.Helper()
	return counterValues(t, base, name, label)[value]
}

// counterSum is the sum of counter name's series.
func counterSum(t *testing.T, base, name string) float64 {
	t.Helper()
	var n float64
	for _, v := range counterValues(t, base, name, "") {
		n += v
	}
	return n
}
