package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// The files under test, relative to this directory.
const (
	alertRulesFile     = "prometheus/baton-alerts.rules.yml"
	recordingRulesFile = "prometheus/baton-recording.rules.yml"
	dashboardFile      = "grafana/baton-dashboard.json"
	runbookFile        = "../docs/operator-runbook.md"
	runbookURL         = "https://github.com/baton-run/baton/blob/main/docs/operator-runbook.md#"
)

var ruleFiles = []string{recordingRulesFile, alertRulesFile}

// rule is one alerting or recording rule.
type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func (r rule) name() string {
	if r.Alert != "" {
		return "alert " + r.Alert
	}
	return "record " + r.Record
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

// loadRules reads the rules of a Prometheus rule file.
func loadRules(t *testing.T, path string) []rule {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no rules", path)
	}
	return out
}

// query is one PromQL expression of the rules or the dashboard, with where it comes from.
// needLabels are labels its selector must carry (a Grafana label_values variable's).
type query struct {
	where      string
	expr       string
	needLabels []string
}

// ruleQueries returns the expressions of the rule files at paths.
func ruleQueries(t *testing.T, paths ...string) []query {
	t.Helper()
	var out []query
	for _, p := range paths {
		for _, r := range loadRules(t, p) {
			out = append(out, query{where: filepath.Base(p) + ": " + r.name(), expr: r.Expr})
		}
	}
	return out
}

// recordedNames returns the series names the rule files at paths record.
func recordedNames(t *testing.T, paths ...string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, p := range paths {
		for _, r := range loadRules(t, p) {
			if r.Record != "" {
				out[r.Record] = true
			}
		}
	}
	return out
}

// panel is a Grafana panel, as much of it as the tests read.
type panel struct {
	ID          int             `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Datasource  json.RawMessage `json:"datasource"`
	GridPos     struct{ X, Y, W, H int }
	Targets     []struct {
		RefID      string          `json:"refId"`
		Expr       string          `json:"expr"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Type       string          `json:"type"`
			Name       string          `json:"name"`
			Query      json.RawMessage `json:"query"`
			Datasource json.RawMessage `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s is not a dashboard's JSON: %v", dashboardFile, err)
	}
	return d
}

// allPanels returns the dashboard's panels, those inside collapsed rows included.
func (d dashboard) allPanels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

var labelValuesRE = regexp.MustCompile(`^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)

// dashboardQueries returns the dashboard's expressions: its panels' targets and its query
// variables (label_values(selector, label) reads selector and needs label on it).
func dashboardQueries(t *testing.T, d dashboard) []query {
	t.Helper()
	var out []query
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out = append(out, query{where: fmt.Sprintf("dashboard panel %q (%s)", p.Title, tg.RefID), expr: tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		// A string, as every Grafana version reads it (newer ones also write {"query": …}).
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var o struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &o); err != nil {
				t.Fatalf("dashboard variable %s: query %s: %v", v.Name, v.Query, err)
			}
			q = o.Query
		}
		m := labelValuesRE.FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("dashboard variable %s: %q is not label_values(selector, label)", v.Name, q)
		}
		out = append(out, query{where: "dashboard variable " + v.Name, expr: m[1], needLabels: []string{m[2]}})
	}
	return out
}

// ruleTestFile is a promtool rule test file, as much of it as the tests read.
type ruleTestFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromqlExprTest []struct {
			Expr string `yaml:"expr"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

// TestEveryRuleHasUnitTests: promtool's unit tests cover every rule — each alert fires in a
// case and stays quiet in another, each recorded series is evaluated — and test these rule
// files.
func TestEveryRuleHasUnitTests(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("prometheus/tests/*.test.yml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no rule tests in prometheus/tests (%v)", err)
	}
	fires, quiet, evaluated, tested := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var f ruleTestFile
		if err := yaml.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, rf := range f.RuleFiles {
			tested[filepath.Clean(filepath.Join(filepath.Dir(p), rf))] = true
		}
		for _, tc := range f.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					quiet[a.Alertname] = true
				}
			}
			for _, e := range tc.PromqlExprTest {
				evaluated[strings.TrimSpace(e.Expr)] = true
			}
		}
	}
	for _, rf := range ruleFiles {
		if !tested[filepath.Clean(rf)] {
			t.Errorf("no test file loads %s", rf)
		}
		for _, r := range loadRules(t, rf) {
			switch {
			case r.Alert != "" && !fires[r.Alert]:
				t.Errorf("alert %s: no unit test where it fires", r.Alert)
			case r.Alert != "" && !quiet[r.Alert]:
				t.Errorf("alert %s: no unit test where it must not fire", r.Alert)
			case r.Record != "" && !evaluated[r.Record]:
				t.Errorf("record %s: no promql_expr_test evaluates it", r.Record)
			}
		}
	}
}

// TestAlertsAreReadyForOnCall: every alert has a known severity, a summary, a description and
// a runbook link to its own section of docs/operator-runbook.md.
func TestAlertsAreReadyForOnCall(t *testing.T) {
	t.Parallel()
	anchors := markdownAnchors(t, runbookFile)
	for _, r := range loadRules(t, alertRulesFile) {
		if r.Alert == "" {
			t.Errorf("%s: %s in the alert rules", alertRulesFile, r.name())
			continue
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("alert %s: severity %q; want critical or warning", r.Alert, s)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("alert %s: no %s", r.Alert, a)
			}
		}
		want := runbookURL + strings.ToLower(r.Alert)
		if got := r.Annotations["runbook_url"]; got != want {
			t.Errorf("alert %s: runbook_url %q; want %q", r.Alert, got, want)
		}
		if !anchors[strings.ToLower(r.Alert)] {
			t.Errorf("alert %s: %s has no heading %q for its runbook link", r.Alert, runbookFile, r.Alert)
		}
	}
}

// markdownAnchors returns the anchors GitHub gives the headings of a Markdown file: lower
// case, spaces as hyphens, punctuation but hyphens and underscores dropped.
func markdownAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var a strings.Builder
		for _, c := range strings.ToLower(title) {
			switch {
			case c == ' ':
				a.WriteByte('-')
			case c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
				a.WriteRune(c)
			}
		}
		out[a.String()] = true
	}
	return out
}

// batontypeEnums returns the string constants of runner/batontype by their type's name:
// the values Baton's labels (kind, status, trigger, result) take.
func batontypeEnums(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../runner/batontype/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in ../runner/batontype (%v)", err)
	}
	out := map[string][]string{}
	fset := gotoken.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != gotoken.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				typ, ok := vs.Type.(*ast.Ident)
				if !ok || len(vs.Values) != len(vs.Names) {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == gotoken.STRING {
						s, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						out[typ.Name] = append(out[typ.Name], s)
					}
				}
			}
		}
	}
	return out
}

// TestEveryAlarmKindHasAnAlert: each of Baton's alarm kinds (batontype.AlertKind) has a
// Prometheus alert on baton_alerts{kind="…"}, so a new kind cannot be left out.
func TestEveryAlarmKindHasAnAlert(t *testing.T) {
	t.Parallel()
	kinds := batontypeEnums(t)["AlertKind"]
	if len(kinds) < 8 {
		t.Fatalf("found %d alarm kinds in runner/batontype (%v); want at least 8", len(kinds), kinds)
	}
	alerted := map[string]string{}
	for _, r := range loadRules(t, alertRulesFile) {
		sels, err := selectorsOf(r.Expr)
		if err != nil {
			t.Fatalf("alert %s: %v", r.Alert, err)
		}
		for _, s := range sels {
			for _, m := range s.Matchers {
				if s.Name == "baton_alerts" && m.Label == "kind" && m.Op == "=" {
					alerted[m.Value] = r.Alert
				}
			}
		}
	}
	for _, k := range kinds {
		if alerted[k] == "" {
			t.Errorf("alarm kind %s has no alert on baton_alerts{kind=%q}", k, k)
		}
	}
}

// grafanaVariables are Grafana's interval variables, replaced by a duration for promtool.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "${__rate_interval}", "5m",
	"$__interval", "1m", "${__interval}", "1m", "$__range", "1h", "${__range}", "1h")

// TestDashboard: the dashboard is a Grafana dashboard of a current schema, queries the
// Prometheus chosen in its datasource variable, lays its panels out without overlap, and has
// the panels an operator needs.
func TestDashboard(t *testing.T) {
	t.Parallel()
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q, title %q; want both", d.UID, d.Title)
	}
	if d.SchemaVersion < 39 { // Grafana 11
		t.Errorf("schemaVersion %d; want a current Grafana's (39 or later)", d.SchemaVersion)
	}
	hasDatasource := false
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && v.Name == "datasource" && string(v.Query) == `"prometheus"` {
			hasDatasource = true
		}
		if v.Type == "query" && !isVariableDatasource(v.Datasource) {
			t.Errorf("variable %s: datasource %s; want the datasource variable", v.Name, v.Datasource)
		}
	}
	if !hasDatasource {
		t.Error("no datasource variable of type prometheus named datasource")
	}

	ids := map[int]bool{}
	var placed []panel
	for _, p := range d.allPanels() {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d is missing or taken", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v", p.Title, p.GridPos)
		}
		for _, o := range placed {
			if overlap(o, p) {
				t.Errorf("panels %q and %q overlap", o.Title, p.Title)
			}
		}
		placed = append(placed, p)
		if p.Type == "row" {
			continue
		}
		if !isVariableDatasource(p.Datasource) {
			t.Errorf("panel %q: datasource %s; want the datasource variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 || p.Description == "" {
			t.Errorf("panel %q: %d queries, description %q; want both", p.Title, len(p.Targets), p.Description)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] || !isVariableDatasource(tg.Datasource) {
				t.Errorf("panel %q: query %s (%q) lacks an expression, a unique refId or the datasource variable", p.Title, tg.RefID, tg.Expr)
			}
			refs[tg.RefID] = true
		}
	}

	// What an operator looks for, by the series that shows it and a word of its query.
	reads := map[string][]string{}
	for _, q := range dashboardQueries(t, d) {
		sels, err := selectorsOf(q.expr)
		if err != nil {
			t.Fatalf("%s: %q: %v", q.where, q.expr, err)
		}
		for _, s := range sels {
			reads[s.Name] = append(reads[s.Name], q.expr)
		}
	}
	for _, want := range []struct{ series, with string }{
		{"baton_runs_started_total", "by (trigger)"},
		{"baton_runs_finished_total", "by (status)"},
		{"baton_items_total", "by (result)"},
		{"baton_scheduler_lateness_seconds_bucket", "histogram_quantile(0.5,"},
		{"baton_scheduler_lateness_seconds_bucket", "histogram_quantile(0.99,"},
		{"baton_lease_renewals_total", "rate("},
		{"baton_lease_lost_total", "increase("},
		{"baton_downstream_calls_total", "by (downstream, outcome)"},
		{"baton_downstream_throttled_total", "rate("},
		{"baton_alerts", "by (kind)"},
		{"baton_capacity_exceeded_total", "increase("},
	} {
		if !slices.ContainsFunc(reads[want.series], func(e string) bool { return strings.Contains(e, want.with) }) {
			t.Errorf("no dashboard query reads %s with %q", want.series, want.with)
		}
	}
}

func isVariableDatasource(raw json.RawMessage) bool {
	var ds struct{ Type, UID string }
	return json.Unmarshal(raw, &ds) == nil && ds.Type == "prometheus" && ds.UID == "${datasource}"
}

func overlap(a, b panel) bool {
	ga, gb := a.GridPos, b.GridPos
	return ga.X < gb.X+gb.W && gb.X < ga.X+ga.W && ga.Y < gb.Y+gb.H && gb.Y < ga.Y+ga.H
}

// promtool returns the path of promtool, from Debian's prometheus package (scripts/test.sh
// installs it).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (apt-get install prometheus; scripts/test.sh does): %v", err)
	}
	return p
}

// TestDashboardQueriesParse: promtool parses every query of the dashboard, its Grafana
// interval variables replaced by durations. Each query is a recording rule of a scratch rule
// file, since promtool checks expressions only within rules; a broken one must fail it.
func TestDashboardQueriesParse(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	check := func(queries []query) (string, error) {
		var b strings.Builder
		b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
		for i, q := range queries {
			expr, _ := json.Marshal(grafanaVariables.Replace(q.expr)) // a JSON string is a YAML string
			fmt.Fprintf(&b, "      # %s\n      - record: dashboard:query_%d\n        expr: %s\n", q.where, i, expr)
		}
		path := filepath.Join(t.TempDir(), "dashboard.rules.yml")
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "check", "rules", path).CombinedOutput()
		return string(out), err
	}
	queries := dashboardQueries(t, loadDashboard(t))
	if out, err := check(queries); err != nil {
		t.Fatalf("promtool check rules refuses a dashboard query (%v):\n%s", err, out)
	}
	if out, err := check([]query{{where: "a broken query", expr: `sum(rate(baton_items_total[$__rate_interval])`}}); err == nil {
		t.Fatalf("promtool accepted a broken query:\n%s", out)
	}
}
