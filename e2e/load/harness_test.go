package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/migrations"
	"github.com/baton-run/baton/server/httpapi"
)

// config shapes one load test.
type config struct {
	name        string
	nodes       int           // loadnode instances
	clients     int           // GraphQL HTTP clients, spread over the instances
	subscribers int           // WebSocket connections, spread over the instances and the runs
	runs        int           // concurrent runs, each of its own job, started on instances in turn
	duration    time.Duration // how long each run commits items and the clients query
	think       time.Duration // each client's pause between requests; 0 means none
	batch       int           // items per ProcessBatch call
	parallelism int           // calls in flight per batch
	// minItemsPerSec fails the test when a run commits fewer items a second; 0 only reports.
	minItemsPerSec float64
	// goalItemsPerSec is the rate each run is meant to reach, reported as met or not.
	goalItemsPerSec float64
	report          string // file the report is written to; "" writes none
}

// Bounds of every loop, beyond the time limits.
const (
	maxRequestsPerClient = 1_000_000
	maxMessagesPerSub    = 100_000
	maxStatusPolls       = 100_000
	// wsPerToken is how many subscriber connections share a token: fewer than the API's
	// limit of WebSocket connections per token and instance (32).
	wsPerToken = 16
)

// runLoad starts the cluster, applies the load of cfg, checks the invariants and reports.
func runLoad(t *testing.T, cfg config) {
	cl := startCluster(t, cfg)
	deadline := time.Now().Add(cfg.duration + 3*time.Minute)

	// Subscribers connect and follow runEvents of their run's job before any run starts, so
	// they see each run from its start; runProgress follows once the run ids are known.
	subs := cl.connectSubscribers(t, deadline)

	runIDs := make([]string, cfg.runs)
	for k := range runIDs {
		runIDs[k] = cl.startRun(t, k)
	}
	t.Logf("started runs %v", runIDs)
	for _, s := range subs {
		s.followRun(runIDs[s.run])
	}

	ctx, stopClients := context.WithCancel(context.Background())
	api := cl.runClients(ctx, runIDs)
	runs := cl.waitRuns(t, runIDs, time.Now().Add(cfg.duration+2*time.Minute))
	stopClients()
	stats := api.wait()

	// Every subscriber gets its final state soon after the run ends.
	grace := time.Now().Add(30 * time.Second)
	for _, s := range subs {
		s.wait(grace)
	}
	r := &report{cfg: cfg, runs: runs, api: stats, subs: summarize(subs)}
	text := r.String()
	t.Log("\n" + text)
	if cfg.report != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.report), 0o755); err != nil {
			t.Errorf("write report: %v", err)
		} else if err := os.WriteFile(cfg.report, []byte(text), 0o644); err != nil {
			t.Errorf("write report: %v", err)
		} else {
			t.Logf("report written to %s", cfg.report)
		}
	}
	r.check(t)
}

// cluster is a fresh database and its loadnode instances.
type cluster struct {
	cfg    config
	nodes  []*node
	admin  string   // token that starts the runs
	tokens []string // viewer tokens of the clients and subscribers
	http   *http.Client
}

func startCluster(t *testing.T, cfg config) *cluster {
	t.Helper()
	bin := buildLoadNode(t)
	dbURL := freshDatabase(t)
	_, env := testenv.Redis(t) // a key prefix of our own, removed at the end

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := migrations.Up(ctx, dbURL); err != nil {
		t.Fatalf("migrate the load database: %v", err)
	}
	pool := testenv.Pool(t, dbURL)
	tokens := httpapi.NewTokenStore(pool)
	mint := func(name string, role model.Role) string {
		tok, _, err := httpapi.CreateToken(ctx, tokens, name, role)
		if err != nil {
			t.Fatalf("create token %s: %v", name, err)
		}
		return tok
	}
	cl := &cluster{cfg: cfg, admin: mint("load-admin", model.RoleAdmin)}
	for i := range max(1, (cfg.subscribers+wsPerToken-1)/wsPerToken) {
		cl.tokens = append(cl.tokens, mint(fmt.Sprintf("load-viewer-%d", i), model.RoleViewer))
	}
	pool.Close()

	nodeEnv := []string{
		"DATABASE_URL=" + dbURL,
		"REDIS_URL=" + testenv.RedisURL(),
		"BATON_ENV=" + env,
		"BATON_POOL_SIZE=2",
		"LOAD_JOBS=" + strconv.Itoa(cfg.runs),
		"LOAD_RUN_FOR=" + cfg.duration.String(),
		"LOAD_BATCH=" + strconv.Itoa(cfg.batch),
		"LOAD_PARALLELISM=" + strconv.Itoa(cfg.parallelism),
	}
	// Instances start one after the other: each migrates (a no-op) and registers the jobs.
	for i := range cfg.nodes {
		cl.nodes = append(cl.nodes, startNode(t, bin, i, nodeEnv))
	}
	cl.http = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: 2 * cfg.clients, MaxIdleConnsPerHost: cfg.clients + 8, IdleConnTimeout: time.Minute,
	}}
	t.Cleanup(cl.http.CloseIdleConnections)
	return cl
}

var buildOnce struct {
	sync.Once
	dir string
	bin string
	err error
}

// buildLoadNode compiles cmd/loadnode once per test binary, into a directory removed by
// TestMain.
func buildLoadNode(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := testenv.ModuleRoot()
		if err != nil {
			buildOnce.err = err
			return
		}
		dir, err := os.MkdirTemp("", "baton-load-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.dir, buildOnce.bin = dir, filepath.Join(dir, "loadnode")
		cmd := exec.Command("go", "build", "-o", buildOnce.bin, "./e2e/load/cmd/loadnode")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildOnce.err = fmt.Errorf("go build ./e2e/load/cmd/loadnode: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildOnce.dir != "" {
		_ = os.RemoveAll(buildOnce.dir)
	}
	os.Exit(code)
}

// freshDatabase creates a database of the test's own on the server of DATABASE_URL and
// returns its URL; the database is dropped when the test ends.
func freshDatabase(t *testing.T) string {
	t.Helper()
	base := testenv.DatabaseURL()
	name := testenv.RandomName("baton_load_")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to %s: %v", base, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// node is one running loadnode.
type node struct {
	name   string
	base   string // http://127.0.0.1:port
	log    string // its stdout and stderr
	cmd    *exec.Cmd
	exited chan struct{}
}

func (n *node) graphqlURL() string { return n.base + "/graphql" }

// startNode starts loadnode i on a spare port and waits until it is ready; it is stopped
// (SIGTERM, then SIGKILL after 30s) when the test ends.
func startNode(t *testing.T, bin string, i int, env []string) *node {
	t.Helper()
	n := &node{name: fmt.Sprintf("load-node-%d", i), log: filepath.Join(t.TempDir(), fmt.Sprintf("node-%d.log", i)),
		exited: make(chan struct{})}
	f, err := os.Create(n.log)
	if err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(bin)
	n.cmd.Env = append(os.Environ(), env...)
	n.cmd.Env = append(n.cmd.Env, "BATON_INSTANCE="+n.name, "BATON_ADDR=127.0.0.1:0")
	n.cmd.Stdout, n.cmd.Stderr = f, f
	if err := n.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", n.name, err)
	}
	go func() { _ = n.cmd.Wait(); f.Close(); close(n.exited) }()
	t.Cleanup(func() { n.stop(t) })

	deadline := time.Now().Add(90 * time.Second)
	for wait := 10 * time.Millisecond; n.base == ""; wait = min(2*wait, 200*time.Millisecond) {
		select {
		case <-n.exited:
			t.Fatalf("%s exited before serving:\n%s", n.name, n.tail())
		case <-time.After(wait):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not serve within 90s:\n%s", n.name, n.tail())
		}
		out, _ := os.ReadFile(n.log)
		if _, rest, ok := strings.Cut(string(out), "loadnode up: "); ok {
			base, _, _ := strings.Cut(rest, "\n")
			if !strings.HasPrefix(base, "http://127.0.0.1:") {
				t.Fatalf("%s serves on %q, not on 127.0.0.1", n.name, base)
			}
			n.base = base
		}
	}
	for {
		resp, err := http.Get(n.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready within 90s (%v):\n%s", n.name, err, n.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *node) stop(t *testing.T) {
	select {
	case <-n.exited:
	default:
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.exited:
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop within 30s of SIGTERM; killing it", n.name)
			_ = n.cmd.Process.Kill()
			<-n.exited
		}
	}
	if t.Failed() {
		t.Logf("%s log (tail):\n%s", n.name, n.tail())
	}
}

// tail returns the end of the node's log.
func (n *node) tail() string {
	out, _ := os.ReadFile(n.log)
	if len(out) > 6000 {
		out = out[len(out)-6000:]
	}
	return string(out)
}

// gqlResult is an answer to a GraphQL POST.
type gqlResult struct {
	status int
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code string `json:"code"`
		} `json:"extensions"`
	} `json:"errors"`
}

// post sends a GraphQL request to n with token.
func (cl *cluster) post(n *node, token, query string, vars map[string]any) (*gqlResult, error) {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, n.graphqlURL(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := cl.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	res := &gqlResult{status: resp.StatusCode}
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(raw, res); err != nil {
		return res, fmt.Errorf("HTTP %d: not a GraphQL response: %.300q", resp.StatusCode, raw)
	}
	return res, nil
}

// startRun starts a run of job load-k on instance k (in turn) and returns its id.
func (cl *cluster) startRun(t *testing.T, k int) string {
	t.Helper()
	n := cl.nodes[k%len(cl.nodes)]
	res, err := cl.post(n, cl.admin, `mutation($name: String!) { startJob(input: {name: $name, mode: RESTART}) {
		run { id } userErrors { code message } } }`, map[string]any{"name": fmt.Sprintf("load-%d", k)})
	if err != nil {
		t.Fatalf("startJob load-%d: %v", k, err)
	}
	var data struct {
		StartJob struct {
			Run        *struct{ ID string }
			UserErrors []struct{ Code, Message string }
		}
	}
	if len(res.Errors) > 0 || json.Unmarshal(res.Data, &data) != nil || data.StartJob.Run == nil {
		t.Fatalf("startJob load-%d: HTTP %d %+v %+v", k, res.status, res.Errors, data.StartJob.UserErrors)
	}
	return data.StartJob.Run.ID
}

// runResult is a run's final record.
type runResult struct {
	ID         string
	JobName    string
	Status     string
	Instance   string
	StartedAt  time.Time
	FinishedAt *time.Time
	Progress   struct{ Processed int64 }
}

func (r runResult) itemsPerSec() float64 {
	if r.FinishedAt == nil {
		return 0
	}
	return float64(r.Progress.Processed) / r.FinishedAt.Sub(r.StartedAt).Seconds()
}

var finalStatus = map[string]bool{"SUCCEEDED": true, "FAILED": true, "CANCELLED": true, "PAUSED": true}

// waitRuns polls the runs (once a second, outside the measured traffic) until all are final.
func (cl *cluster) waitRuns(t *testing.T, ids []string, deadline time.Time) []runResult {
	t.Helper()
	const q = `query($id: ID!) { run(id: $id) { id jobName status instance startedAt finishedAt progress { processed } } }`
	out := make([]runResult, len(ids))
	for i := 0; i < maxStatusPolls; i++ {
		done := true
		for k, id := range ids {
			if finalStatus[out[k].Status] {
				continue
			}
			res, err := cl.post(cl.nodes[0], cl.admin, q, map[string]any{"id": id})
			var data struct{ Run *runResult }
			if err != nil || len(res.Errors) > 0 || json.Unmarshal(res.Data, &data) != nil || data.Run == nil {
				t.Logf("poll run %s: %v %+v", id, err, res)
				done = false
				continue
			}
			out[k] = *data.Run
			done = done && finalStatus[out[k].Status]
		}
		if done {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs not final by the deadline: %+v", out)
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("runs not final after %d polls", maxStatusPolls)
	return nil
}

// apiStats is what the GraphQL clients saw.
type apiStats struct {
	requests        int64
	elapsed         time.Duration
	byStatus        map[int]int64
	transportErrors int64
	errorCodes      map[string]int64 // top-level GraphQL errors by code
	latencies       []time.Duration
	firstProblems   []string
}

// apiRun is the clients at work.
type apiRun struct {
	wg    sync.WaitGroup
	start time.Time
	per   []*apiStats
}

// runClients starts cfg.clients clients, client i querying instance i mod nodes, each
// looping over jobs, runs(first: 20) and run(id) until ctx ends.
func (cl *cluster) runClients(ctx context.Context, runIDs []string) *apiRun {
	queries := []struct {
		q    string
		vars func(i int) map[string]any
	}{
		{`{ jobs(first: 20) { nodes { name enabled activeRun { id status } lastRun { id status } } pageInfo { hasNextPage } } }`, func(int) map[string]any { return nil }},
		{`{ runs(first: 20) { edges { cursor node { id jobName status progress { processed percent } } } pageInfo { hasNextPage } } }`,
			func(int) map[string]any { return nil }},
		{`query($id: ID!) { run(id: $id) { id status instance progress { total processed succeeded failed } leaseUntil } }`,
			func(i int) map[string]any { return map[string]any{"id": runIDs[i%len(runIDs)]} }},
	}
	a := &apiRun{start: time.Now(), per: make([]*apiStats, cl.cfg.clients)}
	for c := range cl.cfg.clients {
		st := &apiStats{byStatus: map[int]int64{}, errorCodes: map[string]int64{}}
		a.per[c] = st
		n := cl.nodes[c%len(cl.nodes)]
		token := cl.tokens[c%len(cl.tokens)]
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			for i := 0; i < maxRequestsPerClient && ctx.Err() == nil; i++ {
				q := queries[(c+i)%len(queries)]
				t0 := time.Now()
				res, err := cl.post(n, token, q.q, q.vars(c+i))
				st.latencies = append(st.latencies, time.Since(t0))
				st.requests++
				switch {
				case res == nil:
					st.transportErrors++
					st.problem(fmt.Sprintf("%s: %v", n.name, err))
				default:
					st.byStatus[res.status]++
					if res.status >= 500 || err != nil {
						st.problem(fmt.Sprintf("%s: HTTP %d %v %+v", n.name, res.status, err, res.Errors))
					}
					for _, e := range res.Errors {
						st.errorCodes[e.Extensions.Code]++
						st.problem(fmt.Sprintf("%s: %s: %s", n.name, e.Extensions.Code, e.Message))
					}
				}
				if cl.cfg.think > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(cl.cfg.think):
					}
				}
			}
		}()
	}
	return a
}

func (s *apiStats) problem(p string) {
	if len(s.firstProblems) < 5 {
		s.firstProblems = append(s.firstProblems, p)
	}
}

// wait waits for the clients to stop and merges what they saw.
func (a *apiRun) wait() *apiStats {
	a.wg.Wait()
	out := &apiStats{byStatus: map[int]int64{}, errorCodes: map[string]int64{}, elapsed: time.Since(a.start)}
	for _, st := range a.per {
		out.requests += st.requests
		out.transportErrors += st.transportErrors
		for k, v := range st.byStatus {
			out.byStatus[k] += v
		}
		for k, v := range st.errorCodes {
			out.errorCodes[k] += v
		}
		out.latencies = append(out.latencies, st.latencies...)
		for _, p := range st.firstProblems {
			if len(out.firstProblems) < 10 {
				out.firstProblems = append(out.firstProblems, p)
			}
		}
	}
	slices.Sort(out.latencies)
	return out
}

func (s *apiStats) percentile(p float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(s.latencies)))) - 1
	return s.latencies[max(0, min(i, len(s.latencies)-1))]
}

func (s *apiStats) count5xx() int64 {
	var n int64
	for code, c := range s.byStatus {
		if code >= 500 {
			n += c
		}
	}
	return n
}

// subscriber is one WebSocket connection (graphql-transport-ws) with two subscriptions:
// runEvents of its run's job ("e") and runProgress of its run ("p").
type subscriber struct {
	i    int
	run  int // index of the run it follows
	node *node
	conn *websocket.Conn
	wmu  sync.Mutex // one writer at a time: subscribe, pong

	runID    atomic.Value // string, once followRun
	done     chan struct{}
	mu       sync.Mutex
	progress string // latest status from runProgress
	complete bool   // runProgress completed
	final    string // final status seen on runEvents
	messages int
	err      error
}

const (
	subscribeEvents   = `subscription($job: String) { runEvents(jobName: $job) { kind run { id status progress { processed } } } }`
	subscribeProgress = `subscription($id: ID!) { runProgress(runId: $id) { id status progress { processed succeeded percent } } }`
)

type wsMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// connectSubscribers opens cfg.subscribers connections, at most 50 dialling at once, each
// acknowledged and subscribed to runEvents; it fails the test if any cannot.
func (cl *cluster) connectSubscribers(t *testing.T, deadline time.Time) []*subscriber {
	t.Helper()
	subs := make([]*subscriber, cl.cfg.subscribers)
	sem := make(chan struct{}, 50)
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	for i := range subs {
		s := &subscriber{i: i, run: i % cl.cfg.runs, node: cl.nodes[i%len(cl.nodes)], done: make(chan struct{})}
		subs[i] = s
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := s.connect(cl.tokens[i/wsPerToken], deadline); err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				close(s.done)
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range subs {
			if s.conn != nil {
				s.conn.Close()
			}
		}
	})
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d subscribers could not connect; the first: %v", n, len(subs), firstErr.Load())
	}
	return subs
}

func (s *subscriber) connect(token string, deadline time.Time) error {
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 30 * time.Second}
	u := "ws" + strings.TrimPrefix(s.node.graphqlURL(), "http")
	c, resp, err := d.Dial(u, nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		return fmt.Errorf("subscriber %d: dial %s: HTTP %d: %w", s.i, u, status, err)
	}
	s.conn = c
	init, _ := json.Marshal(map[string]any{"authorization": "Bearer " + token})
	if err := s.write(wsMsg{Type: "connection_init", Payload: init}); err != nil {
		return fmt.Errorf("subscriber %d: connection_init: %w", s.i, err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var m wsMsg
		if err := c.ReadJSON(&m); err != nil {
			return fmt.Errorf("subscriber %d: waiting for connection_ack: %w", s.i, err)
		}
		if m.Type == "connection_ack" {
			break
		}
		if m.Type == "ping" {
			_ = s.write(wsMsg{Type: "pong"})
		}
	}
	payload, _ := json.Marshal(map[string]any{"query": subscribeEvents, "variables": map[string]any{"job": fmt.Sprintf("load-%d", s.run)}})
	if err := s.write(wsMsg{ID: "e", Type: "subscribe", Payload: payload}); err != nil {
		return fmt.Errorf("subscriber %d: subscribe runEvents: %w", s.i, err)
	}
	go s.read(deadline)
	return nil
}

func (s *subscriber) write(m wsMsg) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return s.conn.WriteJSON(m)
}

// followRun subscribes to runProgress of run id.
func (s *subscriber) followRun(id string) {
	s.runID.Store(id)
	payload, _ := json.Marshal(map[string]any{"query": subscribeProgress, "variables": map[string]any{"id": id}})
	if err := s.write(wsMsg{ID: "p", Type: "subscribe", Payload: payload}); err != nil {
		s.fail(fmt.Errorf("subscribe runProgress: %w", err))
	}
}

func (s *subscriber) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// read handles the connection's messages until both subscriptions have seen the run's final
// state, the deadline, or an error.
func (s *subscriber) read(deadline time.Time) {
	defer close(s.done)
	_ = s.conn.SetReadDeadline(deadline)
	for range maxMessagesPerSub {
		var m wsMsg
		if err := s.conn.ReadJSON(&m); err != nil {
			s.fail(fmt.Errorf("read: %w", err))
			return
		}
		runID, _ := s.runID.Load().(string)
		s.mu.Lock()
		s.messages++
		switch m.Type {
		case "ping":
			s.mu.Unlock()
			_ = s.write(wsMsg{Type: "pong"})
			continue
		case "next":
			var p struct {
				Data struct {
					RunProgress *struct{ ID, Status string }
					RunEvents   *struct {
						Kind string
						Run  struct{ ID, Status string }
					}
				}
				Errors []any
			}
			if err := json.Unmarshal(m.Payload, &p); err != nil || len(p.Errors) > 0 {
				s.failLocked(fmt.Errorf("%s: %v %s", m.ID, err, m.Payload))
			}
			switch {
			case m.ID == "p" && p.Data.RunProgress != nil:
				s.progress = p.Data.RunProgress.Status
			case m.ID == "e" && p.Data.RunEvents != nil && p.Data.RunEvents.Run.ID == runID && finalStatus[p.Data.RunEvents.Run.Status]:
				s.final = p.Data.RunEvents.Run.Status
			}
		case "complete":
			if m.ID == "p" {
				s.complete = true
			}
		case "error":
			s.failLocked(fmt.Errorf("%s: error %s", m.ID, m.Payload))
		}
		finished := s.complete && finalStatus[s.progress] && s.final != ""
		s.mu.Unlock()
		if finished {
			_ = s.write(wsMsg{ID: "e", Type: "complete"})
			return
		}
	}
	s.fail(fmt.Errorf("more than %d messages", maxMessagesPerSub))
}

func (s *subscriber) failLocked(err error) {
	if s.err == nil {
		s.err = err
	}
}

// wait waits until the subscriber is done or the deadline passes, then closes it.
func (s *subscriber) wait(deadline time.Time) {
	select {
	case <-s.done:
	case <-time.After(time.Until(deadline)):
	}
	s.conn.Close()
}

// subStats sums up the subscribers.
type subStats struct {
	total, progressFinal, eventsFinal, lost, errored int
	messages                                         int64
	firstProblems                                    []string
}

func summarize(subs []*subscriber) subStats {
	var st subStats
	for _, s := range subs {
		s.mu.Lock()
		st.total++
		st.messages += int64(s.messages)
		gotProgress := s.complete && finalStatus[s.progress]
		if gotProgress {
			st.progressFinal++
		}
		if s.final != "" {
			st.eventsFinal++
		}
		if !gotProgress || s.final == "" {
			st.lost++
			if len(st.firstProblems) < 5 {
				st.firstProblems = append(st.firstProblems, fmt.Sprintf("subscriber %d on %s: runProgress %q (complete %v), runEvents final %q, err %v",
					s.i, s.node.name, s.progress, s.complete, s.final, s.err))
			}
		}
		if s.err != nil && !gotProgress {
			st.errored++
		}
		s.mu.Unlock()
	}
	return st
}

// report is a load test's outcome.
type report struct {
	cfg  config
	runs []runResult
	api  *apiStats
	subs subStats
}

func (r *report) String() string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "Baton load test %s — %s on %s (%d CPUs, %s/%s, %s)\n", r.cfg.name, time.Now().UTC().Format(time.RFC3339),
		host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "setup: %d instances (loadnode), %d runs of %s (ProcessBatch %d items, %d in flight), %d GraphQL clients (think %s), %d WebSocket subscribers (graphql-transport-ws: runProgress + runEvents)\n",
		r.cfg.nodes, r.cfg.runs, r.cfg.duration, r.cfg.batch, r.cfg.parallelism, r.cfg.clients, r.cfg.think, r.cfg.subscribers)
	fmt.Fprintf(&b, "\nruns:\n")
	var items int64
	minRate := math.Inf(1)
	for _, run := range r.runs {
		items += run.Progress.Processed
		rate := run.itemsPerSec()
		minRate = min(minRate, rate)
		took := "-"
		if run.FinishedAt != nil {
			took = run.FinishedAt.Sub(run.StartedAt).Round(time.Millisecond).String()
		}
		fmt.Fprintf(&b, "  %s %s on %s: %s, %d items in %s = %.0f items/s\n", run.JobName, run.ID, run.Instance, run.Status,
			run.Progress.Processed, took, rate)
	}
	fmt.Fprintf(&b, "  all runs: %d items, %.0f items/s together", items, float64(items)/r.cfg.duration.Seconds())
	if r.cfg.goalItemsPerSec > 0 {
		verdict := "MET"
		if minRate < r.cfg.goalItemsPerSec {
			verdict = "NOT MET"
		}
		fmt.Fprintf(&b, "; goal %.0f items/s per run: %s (slowest run %.0f)", r.cfg.goalItemsPerSec, verdict, minRate)
	}
	a := r.api
	fmt.Fprintf(&b, "\n\nAPI (GraphQL over HTTP: jobs, runs(first: 20), run(id)):\n")
	fmt.Fprintf(&b, "  %d requests in %s = %.0f requests/s\n", a.requests, a.elapsed.Round(time.Millisecond), float64(a.requests)/a.elapsed.Seconds())
	fmt.Fprintf(&b, "  latency p50 %s, p90 %s, p99 %s, max %s\n", ms(a.percentile(50)), ms(a.percentile(90)), ms(a.percentile(99)), ms(a.percentile(100)))
	fmt.Fprintf(&b, "  HTTP statuses %v, 5xx %d, transport errors %d, GraphQL errors by code %v\n", a.byStatus, a.count5xx(), a.transportErrors, a.errorCodes)
	for _, p := range a.firstProblems {
		fmt.Fprintf(&b, "  problem: %s\n", p)
	}
	s := r.subs
	fmt.Fprintf(&b, "\nsubscribers:\n  %d connected, %d got runProgress's final state and completion, %d got runEvents' final event; lost final events: %d; messages received: %d\n",
		s.total, s.progressFinal, s.eventsFinal, s.lost, s.messages)
	for _, p := range s.firstProblems {
		fmt.Fprintf(&b, "  problem: %s\n", p)
	}
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

// check fails the test on any 5xx, failed request, internal error or lost final event, on a
// run that did not succeed, and on a run slower than cfg.minItemsPerSec.
func (r *report) check(t *testing.T) {
	t.Helper()
	a := r.api
	if n := a.count5xx(); n > 0 {
		t.Errorf("%d requests answered 5xx", n)
	}
	if a.transportErrors > 0 {
		t.Errorf("%d requests got no answer", a.transportErrors)
	}
	// The queries are valid: any error, INTERNAL_SERVER_ERROR above all, is a failure.
	for code, n := range a.errorCodes {
		t.Errorf("%d requests answered with a GraphQL error coded %q", n, code)
	}
	if a.requests == 0 {
		t.Error("the clients made no request")
	}
	for code, n := range a.byStatus {
		if code != http.StatusOK {
			t.Errorf("%d requests answered HTTP %d", n, code)
		}
	}
	if r.subs.lost > 0 {
		t.Errorf("%d of %d subscribers did not receive their run's final state", r.subs.lost, r.subs.total)
	}
	for _, run := range r.runs {
		if run.Status != "SUCCEEDED" || run.Progress.Processed == 0 {
			t.Errorf("run %s of %s: %s with %d items", run.ID, run.JobName, run.Status, run.Progress.Processed)
		}
		if rate := run.itemsPerSec(); r.cfg.minItemsPerSec > 0 && rate < r.cfg.minItemsPerSec {
			t.Errorf("run %s of %s committed %.0f items/s, below the floor of %.0f", run.ID, run.JobName, rate, r.cfg.minItemsPerSec)
		}
	}
}
