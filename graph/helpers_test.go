package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/pubsub/pubsubtest"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// bundle is one test's slice of PostgreSQL and Redis (the shared bundle), the instances made
// on it, and the test's logger.
type bundle struct {
	*testbundle.Bundle
	log *slog.Logger
}

func setup(t *testing.T) *bundle {
	t.Helper()
	tb := testbundle.Setup(t, testenv.Schema)
	log := slog.New(slog.DiscardHandler)
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return &bundle{Bundle: tb, log: log}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// instanceOpts shapes one Baton instance of a test.
type instanceOpts struct {
	jobs     []runner.Job
	poolSize int  // 0 means 4; -1 means API-only
	hub      bool // run a pubsub Hub; without one, subscriptions poll the database
	noRun    bool // do not call Runner.Run (nothing in the background touches the database)
	tracer   pgx.QueryTracer
	graph    func(*httpapi.Config)
	runner   func(*runner.Config) // last changes to the runner's configuration
}

// instance is a runner with its GraphQL endpoint on an httptest server.
type instance struct {
	r   *runner.Runner
	hub *pubsub.Hub // nil without instanceOpts.hub
	srv *httptest.Server
	url string // http://127.0.0.1:port/graphql
}

func (b *bundle) instance(o instanceOpts) *instance {
	t := b.T
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup

	pcfg, err := pgxpool.ParseConfig(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	pcfg.MaxConns = 8
	pcfg.ConnConfig.Tracer = o.tracer
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	pub := pubsubtest.Publisher(t, b.Redis, b.Env, pubsub.PublisherOptions{Logger: b.log})
	// Cleanups run last-registered first: the server, the hub, the runner, then the publisher
	// and the pool they use.
	t.Cleanup(func() { cancel(); wg.Wait() })
	if o.poolSize == 0 {
		o.poolSize = 4
	}
	rcfg := b.Config()
	rcfg.DB, rcfg.PoolSize, rcfg.Logger, rcfg.Events = pool, o.poolSize, b.log, live.NewEventPublisher(pub)
	if o.runner != nil {
		o.runner(&rcfg)
	}
	r := b.NewRunner(rcfg, o.jobs...)
	if !o.noRun {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Run(ctx) }()
	}
	cfg := httpapi.Config{Tokens: httpapi.NewTokenStore(pool), GraphQL: graph.Config{Runner: r, Logger: b.log}}
	if o.hub {
		cfg.GraphQL.Hub = pubsubtest.Hub(t, b.Redis, b.Env, pubsub.HubOptions{Logger: b.log})
	}
	if _, counting := o.tracer.(*queryCounter); counting {
		// The tests that count a response's statements must not see a batch split because
		// a loaded host scheduled a page's resolvers later than the default 2ms window.
		cfg.GraphQL.BatchWait = 100 * time.Millisecond
	}
	if o.graph != nil {
		o.graph(&cfg)
	}
	mux := http.NewServeMux()
	api := httpapi.NewHandler(cfg)
	mux.Handle("/graphql", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		api.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), graphRequest{}, true)))
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &instance{r: r, hub: cfg.GraphQL.Hub, srv: srv, url: srv.URL + "/graphql"}
}

// graphRequest marks the context of a request to the test server's /graphql (queryCounter).
type graphRequest struct{}

var tokenSeq atomic.Int64

// token mints a token with role and returns it.
func (b *bundle) token(role model.Role) string {
	b.T.Helper()
	name := fmt.Sprintf("%s-%d", strings.ToLower(string(role)), tokenSeq.Add(1))
	tok, _, err := httpapi.CreateToken(context.Background(), httpapi.NewTokenStore(b.Pool), name, role)
	if err != nil {
		b.T.Fatal(err)
	}
	return tok
}

// tokenName returns the name behind a token.
func (b *bundle) tokenName(tok string) string {
	b.T.Helper()
	t, err := httpapi.NewTokenStore(b.Pool).TokenByHash(context.Background(), httpapi.HashToken(tok))
	if err != nil {
		b.T.Fatal(err)
	}
	return t.Name
}

func (b *bundle) count(sql string, args ...any) int {
	b.T.Helper()
	return testbundle.Count(b.T, b.Pool, sql, args...)
}

// response is a GraphQL response.
type response struct {
	status int
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// code returns the first error's extensions.code, or "".
func (r *response) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// decode unmarshals data into out, failing the test on top-level errors.
func (r *response) decode(t *testing.T, out any) {
	t.Helper()
	if len(r.Errors) > 0 {
		t.Fatalf("unexpected errors (HTTP %d): %+v", r.status, r.Errors)
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		t.Fatalf("decode %s: %v", r.Data, err)
	}
}

// post sends a GraphQL POST with token (none when "").
func (i *instance) post(t *testing.T, token, query string, vars map[string]any) *response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return i.do(t, http.MethodPost, i.url, token, bytes.NewReader(body), nil)
}

func (i *instance) do(t *testing.T, method, url, token string, body io.Reader, header http.Header) *response {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if method == http.MethodPost && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := &response{status: resp.StatusCode}
	if err := json.Unmarshal(raw, r); err != nil {
		t.Fatalf("HTTP %d: body is not a GraphQL response: %q", resp.StatusCode, raw)
	}
	return r
}

// get sends a GraphQL GET.
func (i *instance) get(t *testing.T, token, query string) *response {
	t.Helper()
	return i.do(t, http.MethodGet, i.url+"?query="+url.QueryEscape(query), token, nil, nil)
}

// gatedJob walks items 1..n; item i waits until the test sends on gate (nil: no waiting),
// after announcing itself on reached (if not nil).
type gatedJob struct {
	name    string
	n       int
	gate    chan struct{}
	reached chan int
	risk    runner.RiskLevel
}

func (j *gatedJob) Info() runner.JobInfo {
	return runner.JobInfo{Name: j.name, Description: "test job", Version: "1", Risk: j.risk, Retry: runner.RetryPolicy{MaxAttempts: 1}}
}

func (j *gatedJob) Run(ctx context.Context, run *runner.Run) error {
	if err := run.SetTotal(ctx, int64(j.n)); err != nil {
		return err
	}
	for i := 1; i <= j.n; i++ {
		item := runner.Item{Target: "t" + strconv.Itoa(i), Checkpoint: strconv.Itoa(i)}
		err := run.Process(ctx, item, func(ctx context.Context, _ *runner.Attempt) error {
			if j.reached != nil {
				j.reached <- i
			}
			if j.gate != nil {
				select {
				case <-j.gate:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// release lets a gated job's waiting item go, failing the test if no item is waiting.
func release(t *testing.T, gate chan<- struct{}) {
	t.Helper()
	select {
	case gate <- struct{}{}:
	case <-time.After(20 * time.Second):
		t.Fatal("no item of the job is waiting at its gate")
	}
}

// startJob starts a job through the API and returns the run's global id.
func (i *instance) startJob(t *testing.T, token, name string) string {
	t.Helper()
	var data struct {
		StartJob struct {
			Run        *struct{ ID string }
			UserErrors []userError
		}
	}
	i.post(t, token, `mutation($n: String!) { startJob(input: {name: $n}) { run { id } userErrors { code message field } } }`,
		map[string]any{"n": name}).decode(t, &data)
	if len(data.StartJob.UserErrors) > 0 || data.StartJob.Run == nil {
		t.Fatalf("startJob %s: %+v", name, data.StartJob.UserErrors)
	}
	return data.StartJob.Run.ID
}

type userError struct {
	Code    string
	Message string
	Field   *string
}

// waitRunStatus polls a run through the API until it reaches status.
func (i *instance) waitRunStatus(t *testing.T, token, id, status string) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, "run "+id+" to be "+status, func() bool {
		var data struct{ Run struct{ Status string } }
		i.post(t, token, `query($id: ID!) { run(id: $id) { status } }`, map[string]any{"id": id}).decode(t, &data)
		return data.Run.Status == status
	})
}

// wsConn is a test client for both WebSocket protocols.
type wsConn struct {
	t     *testing.T
	c     *websocket.Conn
	proto string
}

const (
	protoTransportWS = "graphql-transport-ws"
	protoLegacyWS    = "graphql-ws"
)

func (i *instance) dialWS(t *testing.T, proto string, header http.Header) (*wsConn, *http.Response, error) {
	t.Helper()
	u := "ws" + strings.TrimPrefix(i.url, "http")
	d := websocket.Dialer{Subprotocols: []string{proto}, HandshakeTimeout: 5 * time.Second}
	c, resp, err := d.Dial(u, header)
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { c.Close() })
	return &wsConn{t: t, c: c, proto: proto}, resp, nil
}

type wsMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func (w *wsConn) send(m wsMsg) {
	w.t.Helper()
	if err := w.c.WriteJSON(m); err != nil {
		w.t.Fatalf("websocket write: %v", err)
	}
}

// read returns the next message other than keep-alives and pings (answered), or the error
// (a *websocket.CloseError when the server closed the connection).
func (w *wsConn) read(within time.Duration) (wsMsg, error) {
	deadline := time.Now().Add(within)
	for {
		_ = w.c.SetReadDeadline(deadline)
		var m wsMsg
		if err := w.c.ReadJSON(&m); err != nil {
			return m, err
		}
		switch m.Type {
		case "ka", "pong":
			continue
		case "ping":
			_ = w.c.WriteJSON(wsMsg{Type: "pong"})
			continue
		}
		return m, nil
	}
}

func (w *wsConn) mustRead(within time.Duration) wsMsg {
	w.t.Helper()
	m, err := w.read(within)
	if err != nil {
		w.t.Fatalf("websocket read: %v", err)
	}
	return m
}

// init sends connection_init with payload and returns the server's answer: nil on
// connection_ack, else the read error (the close).
func (w *wsConn) init(payload map[string]any) error {
	w.t.Helper()
	raw, _ := json.Marshal(payload)
	w.send(wsMsg{Type: "connection_init", Payload: raw})
	for {
		m, err := w.read(10 * time.Second)
		if err != nil {
			return err
		}
		switch m.Type {
		case "connection_ack":
			return nil
		case "connection_error":
			continue // legacy protocol: the close follows
		default:
			w.t.Fatalf("unexpected %s before connection_ack", m.Type)
		}
	}
}

// subscribe starts an operation with id.
func (w *wsConn) subscribe(id, query string, vars map[string]any) {
	w.t.Helper()
	raw, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	typ := "subscribe"
	if w.proto == protoLegacyWS {
		typ = "start"
	}
	w.send(wsMsg{ID: id, Type: typ, Payload: raw})
}

// event is one message of a subscription: data, or the end.
type event struct {
	done   bool // complete
	data   json.RawMessage
	errors []any
}

// next returns the next message of subscription id.
func (w *wsConn) next(id string, within time.Duration) event {
	w.t.Helper()
	for {
		m := w.mustRead(within)
		if m.ID != id {
			continue
		}
		switch m.Type {
		case "next", "data":
			var p struct {
				Data   json.RawMessage `json:"data"`
				Errors []any           `json:"errors"`
			}
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				w.t.Fatal(err)
			}
			return event{data: p.Data, errors: p.Errors}
		case "complete":
			return event{done: true}
		case "error":
			var errs []any
			_ = json.Unmarshal(m.Payload, &errs)
			return event{errors: errs, done: true}
		default:
			w.t.Fatalf("unexpected message %s", m.Type)
		}
	}
}

// closeCode returns the code of a close error, or 0.
func closeCode(err error) int {
	if ce, ok := err.(*websocket.CloseError); ok {
		return ce.Code
	}
	return 0
}
