// Package deploy checks Baton's Prometheus rules and Grafana dashboard (this directory)
// against what Baton exports. It holds tests only.
package deploy

import (
	"fmt"
	"strings"
	"testing"
)

// The rules and the dashboard are checked with a PromQL tokenizer of our own rather than the
// Prometheus parser (github.com/prometheus/prometheus/promql/parser): that module would
// raise shared dependencies of the whole module (gorilla/websocket, OpenTelemetry) to satisfy
// a test. promtool, the real parser, still parses every expression (scripts/test.sh for the
// rules, TestDashboardQueriesParse for the dashboard); this tokenizer only has to find the
// selectors in expressions promtool accepts, and to refuse what it does not understand
// rather than guess.

// selector is one series selector of an expression: a metric name and its label matchers.
type selector struct {
	Name     string
	Matchers []matcher
}

// matcher is one label matcher: Label Op "Value".
type matcher struct {
	Label, Op, Value string
}

func (s selector) String() string {
	var m []string
	for _, x := range s.Matchers {
		m = append(m, fmt.Sprintf("%s%s%q", x.Label, x.Op, x.Value))
	}
	if len(m) == 0 {
		return s.Name
	}
	return s.Name + "{" + strings.Join(m, ", ") + "}"
}

type tokenKind int

const (
	tokIdent  tokenKind = iota
	tokString           // a quoted string, unquoted
	tokNumber           // a number or a duration
	tokRange            // a whole [range] or [range:step]: durations only, skipped
	tokPunct            // an operator or a bracket
)

type token struct {
	kind tokenKind
	text string
	pos  int
}

// keywords are identifiers that are never metric names: binary operators and modifiers.
var keywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
	"inf": true, "nan": true,
}

// labelLists are the modifiers followed by a parenthesised list of label names.
var labelLists = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// aggregations are PromQL's aggregation operators, which may be followed by `by (…)` before
// their parenthesis.
var aggregations = map[string]bool{
	"sum": true, "avg": true, "count": true, "min": true, "max": true, "group": true, "stddev": true,
	"stdvar": true, "topk": true, "bottomk": true, "quantile": true, "count_values": true,
	"limitk": true, "limit_ratio": true,
}

// tokenize splits a PromQL expression into tokens. It refuses characters PromQL does not use
// outside strings (a Grafana variable left unresolved, for one) and unterminated strings or
// ranges.
func tokenize(expr string) ([]token, error) {
	var out []token
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#': // a comment, to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			s, n, err := unquote(expr[i:])
			if err != nil {
				return nil, fmt.Errorf("at %d: %w", i, err)
			}
			out = append(out, token{tokString, s, i})
			i += n
		case c == '[':
			end := strings.IndexByte(expr[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("at %d: unterminated [", i)
			}
			out = append(out, token{tokRange, expr[i : i+end+1], i})
			i += end + 1
		case isDigit(c) || c == '.' && i+1 < len(expr) && isDigit(expr[i+1]):
			j := i + 1
			for j < len(expr) && (isIdentChar(expr[j]) || expr[j] == '.' ||
				(expr[j] == '+' || expr[j] == '-') && (expr[j-1] == 'e' || expr[j-1] == 'E')) {
				j++
			}
			out = append(out, token{tokNumber, expr[i:j], i})
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < len(expr) && isIdentChar(expr[j]) {
				j++
			}
			out = append(out, token{tokIdent, expr[i:j], i})
			i = j
		default:
			op := ""
			for _, two := range []string{"!=", "=~", "!~", "==", ">=", "<="} {
				if strings.HasPrefix(expr[i:], two) {
					op = two
				}
			}
			if op == "" && strings.IndexByte("(){},=+-*/%^<>@", c) >= 0 {
				op = string(c)
			}
			if op == "" {
				return nil, fmt.Errorf("at %d: unexpected %q", i, c)
			}
			out = append(out, token{tokPunct, op, i})
			i += len(op)
		}
	}
	return out, nil
}

// unquote reads the quoted string that s begins with and returns its value and length.
func unquote(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\' && q != '`' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated string %s", s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

// selectorsOf returns the series selectors of a PromQL expression: every metric name it
// reads, with the label matchers that follow it. Function and aggregation names, keywords,
// label names in by/without/on/ignoring/group_left/group_right lists, strings, numbers and
// ranges are not metric names.
func selectorsOf(expr string) ([]selector, error) {
	toks, err := tokenize(expr)
	if err != nil {
		return nil, err
	}
	var out []selector
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		next := func(k int) token {
			if i+k < len(toks) {
				return toks[i+k]
			}
			return token{kind: tokPunct, text: ""}
		}
		switch {
		case t.kind == tokIdent && labelLists[strings.ToLower(t.text)]:
			if n := next(1); n.kind == tokPunct && n.text == "(" {
				end, err := closing(toks, i+1)
				if err != nil {
					return nil, err
				}
				i = end
			}
		case t.kind == tokIdent && (keywords[strings.ToLower(t.text)] || aggregations[strings.ToLower(t.text)]):
		case t.kind == tokIdent && next(1).kind == tokPunct && next(1).text == "(":
			// a function call
		case t.kind == tokIdent:
			s := selector{Name: t.text}
			if n := next(1); n.kind == tokPunct && n.text == "{" {
				s.Matchers, i, err = matchers(toks, i+1)
				if err != nil {
					return nil, err
				}
			}
			out = append(out, s)
		case t.kind == tokPunct && t.text == "{":
			s := selector{}
			s.Matchers, i, err = matchers(toks, i)
			if err != nil {
				return nil, err
			}
			for _, m := range s.Matchers {
				if m.Label == "__name__" && m.Op == "=" {
					s.Name = m.Value
				}
			}
			if s.Name == "" {
				return nil, fmt.Errorf("at %d: a selector without a metric name", t.pos)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// closing returns the index of the ")" that closes the "(" at toks[open].
func closing(toks []token, open int) (int, error) {
	depth := 0
	for j := open; j < len(toks); j++ {
		if toks[j].kind != tokPunct {
			continue
		}
		switch toks[j].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return j, nil
			}
		}
	}
	return 0, fmt.Errorf("at %d: unbalanced (", toks[open].pos)
}

// matchers reads the label matchers between the "{" at toks[open] and its "}", and returns
// them with the index of the "}".
func matchers(toks []token, open int) ([]matcher, int, error) {
	var out []matcher
	j := open + 1
	for {
		if j >= len(toks) {
			return nil, 0, fmt.Errorf("at %d: unterminated {", toks[open].pos)
		}
		if t := toks[j]; t.kind == tokPunct && t.text == "}" {
			return out, j, nil
		}
		if j+2 >= len(toks) {
			return nil, 0, fmt.Errorf("at %d: unterminated {", toks[open].pos)
		}
		label, op, value := toks[j], toks[j+1], toks[j+2]
		if label.kind != tokIdent {
			// Prometheus 3 takes quoted (UTF-8) names here; Baton's names need none.
			return nil, 0, fmt.Errorf("at %d: a label name, not %q", label.pos, label.text)
		}
		if op.kind != tokPunct || (op.text != "=" && op.text != "!=" && op.text != "=~" && op.text != "!~") {
			return nil, 0, fmt.Errorf("at %d: a matcher operator, not %q", op.pos, op.text)
		}
		if value.kind != tokString {
			return nil, 0, fmt.Errorf("at %d: a quoted label value, not %q", value.pos, value.text)
		}
		out = append(out, matcher{label.text, op.text, value.text})
		j += 3
		if j < len(toks) && toks[j].kind == tokPunct && toks[j].text == "," {
			j++
		} else if j < len(toks) && (toks[j].kind != tokPunct || toks[j].text != "}") {
			return nil, 0, fmt.Errorf("at %d: a comma or }, not %q", toks[j].pos, toks[j].text)
		}
	}
}

func TestSelectorsOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{`up`}},
		{`up{job="baton"} == 0`, []string{`up{job="baton"}`}},
		{`max without (instance) (baton_alerts{kind="HEARTBEAT_MISSED"}) > 0`,
			[]string{`baton_alerts{kind="HEARTBEAT_MISSED"}`}},
		{`sum(rate(a_total[5m])) by (job) / on(job) group_left(kind) b`, []string{`a_total`, `b`}},
		{`sum by (le) (rate(x_bucket{job=~"$job", le!="+Inf"}[$__rate_interval]))`,
			[]string{`x_bucket{job=~"$job", le!="+Inf"}`}},
		{`histogram_quantile(0.99, sum without (instance) (rate(lat_bucket[10m])))`, []string{`lat_bucket`}},
		{`max_over_time(rate(c_total[5m])[30m:1m])`, []string{`c_total`}},
		{`c_total offset 5m > bool 1e-3`, []string{`c_total`}},
		{`c_total @ start() - c_total @ 1609746000`, []string{`c_total`, `c_total`}},
		{`a and b or c unless d`, []string{`a`, `b`, `c`, `d`}},
		{`label_replace(x, "dst", "$1 up{}", 'src', "(.*)")`, []string{`x`}},
		{`count_values("value", y) > Inf or z < -NaN`, []string{`y`, `z`}},
		{`{__name__="named", a='b\'c'}`, []string{`named{__name__="named", a="b'c"}`}},
		{`job:baton_items:rate5m{result=~"FAILED|TRANSIENT",}`, []string{`job:baton_items:rate5m{result=~"FAILED|TRANSIENT"}`}},
		{"# a comment mentioning not_a_metric\nabsent(up{job=`baton`})", []string{`up{job="baton"}`}},
		{`sum(increase(r{status="FAILED"}[1h])) or vector(0)`, []string{`r{status="FAILED"}`}},
		{`topk(3, sum by (downstream) (w))`, []string{`w`}},
		{`1 + 2 * .5`, nil},
	} {
		got, err := selectorsOf(tc.expr)
		if err != nil {
			t.Errorf("selectorsOf(%q): %v", tc.expr, err)
			continue
		}
		var names []string
		for _, s := range got {
			names = append(names, s.String())
		}
		if strings.Join(names, " ; ") != strings.Join(tc.want, " ; ") {
			t.Errorf("selectorsOf(%q) = %q; want %q", tc.expr, names, tc.want)
		}
	}
}

// TestSelectorsOfRefuses: what the tokenizer does not understand is an error, never a guess.
func TestSelectorsOfRefuses(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{
		`{job="baton"}`,                // no metric name
		`x{job="baton"`,                // unterminated matchers
		`x{job=}`,                      // no value
		`x{a="b" c="d"}`,               // no comma
		`x{job~"a"}`,                   // no operator
		`x{"utf8.name"="a"}`,           // a quoted label name
		`{"utf8.metric"}`,              // a quoted metric name
		`x{job="unterminated}`,         // unterminated string
		`rate(x[5m)`,                   // unterminated range
		`rate(x[$__rate_interval]) $y`, // an unresolved variable
		`sum by (job x`,                // unbalanced label list
	} {
		if got, err := selectorsOf(expr); err == nil {
			t.Errorf("selectorsOf(%q) = %v; want an error", expr, got)
		}
	}
}
