package server

import (
	"bufio"
	"net"
	"net/http"
	"strconv"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/baton-run/baton/graph"
)

// httpMetrics counts and times the instance's HTTP requests, by the route that served them:
//
//   - baton_http_requests_total{handler, method, code}: requests answered. A GraphQL
//     WebSocket the server accepted counts once, as code 101, when it closes.
//   - baton_http_request_duration_seconds{handler, method}: how long requests took to answer,
//     WebSockets left out (theirs is the connection's lifetime).
//   - baton_websocket_connections: GraphQL WebSocket connections open now.
//   - baton_graphql_errors_total{code}: top-level GraphQL errors answered, by their
//     extensions.code, over HTTP and WebSockets alike (graph.Config.OnError). Most failures of
//     a GraphQL request answer 200 with such an error, so the status codes alone miss them.
//
// handler is the route's fixed name (graphql, console, metrics, healthz, readyz) and method is
// promhttp's (lower case; one it does not know is "unknown"), so a client cannot add series.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	sockets  prometheus.Gauge
	errors   *prometheus.CounterVec
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_http_requests_total",
			Help: "HTTP requests answered, by route, method and status code; an accepted GraphQL WebSocket counts as 101 when it closes.",
		}, []string{"handler", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "baton_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route and method; WebSocket connections are not included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"handler", "method"}),
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "baton_websocket_connections",
			Help: "GraphQL WebSocket connections open on this instance.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_graphql_errors_total",
			Help: "Top-level GraphQL errors answered, by extensions.code (INTERNAL_SERVER_ERROR: a failure of the server, logged under the ref it carries).",
		}, []string{"code"}),
	}
	// At zero from the start, so that a rule's rate sees the first internal error.
	m.errors.WithLabelValues(graph.CodeInternal)
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.sockets, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// graphQLError counts a top-level GraphQL error by its code. The codes are the program's own
// constants; anything else (none, or not a code's shape) counts as OTHER, so the series stay
// few whatever an error carries.
func (m *httpMetrics) graphQLError(code string) {
	if !isErrorCode(code) {
		code = "OTHER"
	}
	m.errors.WithLabelValues(code).Inc()
}

// isErrorCode says whether code has the shape of an error code: 1 to 40 upper-case letters,
// digits and underscores.
func isErrorCode(code string) bool {
	if code == "" || len(code) > 40 {
		return false
	}
	for _, c := range code {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// instrument wraps h, the handler of the route named handler, in the metrics.
func (m *httpMetrics) instrument(handler string, h http.Handler) http.Handler {
	route := prometheus.Labels{"handler": handler}
	requests := m.requests.MustCurryWith(route)
	answered := promhttp.InstrumentHandlerDuration(m.duration.MustCurryWith(route), promhttp.InstrumentHandlerCounter(requests, h))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !websocket.IsWebSocketUpgrade(r) {
			answered.ServeHTTP(w, r)
			return
		}
		// The GraphQL transport serves the WebSocket inside this call: the connection is open
		// from the hijack until the call returns.
		// Deferred, so that a handler that panics (net/http recovers it) still closes its count.
		uw := &upgradeWriter{ResponseWriter: w, opened: m.sockets.Inc}
		defer func() {
			code := uw.status
			switch {
			case uw.hijacked:
				m.sockets.Dec()
				code = http.StatusSwitchingProtocols
			case code == 0:
				code = http.StatusOK
			}
			requests.WithLabelValues("get", strconv.Itoa(code)).Inc()
		}()
		h.ServeHTTP(uw, r)
	})
}

// upgradeWriter is the ResponseWriter of a WebSocket upgrade: it keeps the status of a refused
// upgrade and notes (opened) the connection gorilla/websocket takes over.
type upgradeWriter struct {
	http.ResponseWriter
	opened   func()
	status   int
	hijacked bool
}

func (u *upgradeWriter) WriteHeader(code int) {
	if u.status == 0 {
		u.status = code
	}
	u.ResponseWriter.WriteHeader(code)
}

// Hijack hands the connection over, as gorilla's Upgrader asks of its ResponseWriter.
func (u *upgradeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(u.ResponseWriter).Hijack()
	if err == nil {
		u.hijacked = true
		u.opened()
	}
	return conn, rw, err
}

// Unwrap lets http.ResponseController reach the server's own ResponseWriter (deadlines).
func (u *upgradeWriter) Unwrap() http.ResponseWriter { return u.ResponseWriter }
