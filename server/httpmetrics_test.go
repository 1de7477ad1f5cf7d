package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestHTTPMetrics: requests are counted by route, method and code and timed; an accepted
// WebSocket is open in the gauge while it lives, then counts once as 101 and is never timed; a
// refused upgrade counts with the code it was refused with and opens nothing.
func TestHTTPMetrics(t *testing.T) {
	t.Parallel()
	m, reg := testHTTPMetrics(t)
	upgrader := websocket.Upgrader{CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") != "http://evil.example" }}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if websocket.IsWebSocketUpgrade(r) {
			ws, err := upgrader.Upgrade(w, r, nil)
			if err != nil {
				return // gorilla has answered 403
			}
			defer ws.Close()
			if r.URL.Query().Has("panic") {
				panic(http.ErrAbortHandler) // net/http recovers it quietly
			}
			for {
				if _, _, err := ws.ReadMessage(); err != nil {
					return
				}
			}
		}
		if r.URL.Query().Has("refuse") {
			w.WriteHeader(http.StatusUnsupportedMediaType)
			return
		}
		_, _ = w.Write([]byte(`{"data":{}}`))
	})
	mux := http.NewServeMux()
	mux.Handle("/graphql", m.instrument("graphql", api))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	do := func(method, query string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+"/graphql"+query, strings.NewReader(`{}`))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	do(http.MethodPost, "")
	do(http.MethodPost, "")
	do(http.MethodGet, "?refuse")

	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/graphql"
	if _, res, err := websocket.DefaultDialer.Dial(wsURL, http.Header{"Origin": {"http://evil.example"}}); err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("upgrade from a refused origin: %v, %v; want 403", res, err)
	}
	ws, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The server hijacks the connection before it answers 101: it is open by now.
	open := gather(t, reg)
	if got := open.value("baton_websocket_connections", ""); got != 1 {
		t.Errorf("open WebSockets while one is open = %v, want 1", got)
	}
	if got := series(open, "baton_http_requests_total", "graphql", "get", "101"); got != 0 {
		t.Errorf("WebSockets counted before they close = %v, want 0", got)
	}
	ws.Close()
	deadline := time.Now().Add(10 * time.Second)
	for series(gather(t, reg), "baton_http_requests_total", "graphql", "get", "101") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the closed WebSocket was never counted as 101")
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A handler that panics after the upgrade: net/http recovers it; the connection is
	// counted closed all the same.
	if ws, _, err := websocket.DefaultDialer.Dial(wsURL+"?panic", nil); err == nil {
		ws.Close()
	}
	deadline = time.Now().Add(10 * time.Second)
	for series(gather(t, reg), "baton_http_requests_total", "graphql", "get", "101") != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the WebSocket whose handler panicked was never counted as 101")
		}
		time.Sleep(10 * time.Millisecond)
	}

	got := gather(t, reg)
	for _, c := range []struct {
		what string
		got  float64
		want float64
	}{
		{"POSTs answered 200", series(got, "baton_http_requests_total", "graphql", "post", "200"), 2},
		{"GETs refused 415", series(got, "baton_http_requests_total", "graphql", "get", "415"), 1},
		{"upgrades refused 403", series(got, "baton_http_requests_total", "graphql", "get", "403"), 1},
		{"WebSockets accepted (101)", series(got, "baton_http_requests_total", "graphql", "get", "101"), 2},
		{"timed POSTs", series(got, "baton_http_request_duration_seconds", "graphql", "post"), 2},
		{"timed GETs (the refused GET; no upgrade)", series(got, "baton_http_request_duration_seconds", "graphql", "get"), 1},
		{"open WebSockets once closed", got.value("baton_websocket_connections", ""), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

// testHTTPMetrics makes the metrics on a registry of their own.
func testHTTPMetrics(t *testing.T) (*httpMetrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := newHTTPMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// series is the value of name's series whose labels take values, in their order (a
// histogram's: its count); 0 when there is none.
func series(f families, name string, values ...string) float64 {
	mf := f[name]
	if mf == nil {
		return 0
	}
	for _, m := range mf.GetMetric() {
		if !labelsAre(m.GetLabel(), values) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return 0
}

// labelsAre says whether the label pairs are exactly values, given in the order of the
// metric's label names (handler, method, code).
func labelsAre(ls []*dto.LabelPair, values []string) bool {
	byName := map[string]string{}
	for _, l := range ls {
		byName[l.GetName()] = l.GetValue()
	}
	for i, name := range []string{"handler", "method", "code"}[:len(values)] {
		if byName[name] != values[i] {
			return false
		}
	}
	return len(byName) == len(values)
}

// TestGraphQLErrorCodes: GraphQL errors count by their code; one without a code, or with
// anything but a code's shape, counts as OTHER, so no error can add a series of its own.
func TestGraphQLErrorCodes(t *testing.T) {
	t.Parallel()
	m, reg := testHTTPMetrics(t)
	for _, code := range []string{"INTERNAL_SERVER_ERROR", "FORBIDDEN", "INTERNAL_SERVER_ERROR", "", "no such field: x", strings.Repeat("A", 41)} {
		m.graphQLError(code)
	}
	got := gather(t, reg)
	for code, want := range map[string]float64{"INTERNAL_SERVER_ERROR": 2, "FORBIDDEN": 1, "OTHER": 3} {
		if n := got.value("baton_graphql_errors_total", code); n != want {
			t.Errorf("baton_graphql_errors_total{code=%q} = %v, want %v", code, n, want)
		}
	}
	if n := got.count("baton_graphql_errors_total"); n != 3 {
		t.Errorf("%d series of baton_graphql_errors_total, want 3", n)
	}
}
