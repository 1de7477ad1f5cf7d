//go:build unix

// Package cluster is the multi-instance fault-injection harness of Baton's cluster tests: a
// private PostgreSQL and Redis (internal/testenv), three (or more) `baton serve` processes on
// spare ports, and between each instance and each service a TCP proxy the test controls, so it
// can SIGKILL, SIGSTOP/SIGCONT or restart an instance, FLUSHALL or restart Redis, restart
// PostgreSQL, and cut one instance off Redis or PostgreSQL (or stall its traffic). A Checker
// samples the invariants of the architecture (one active run per job, fencing, no duplicate
// effect, no lost confirmed item, every run final or resumable) while a scenario runs.
//
// The scenarios themselves are this package's tests: short forms run in `go test` (and so in
// `make test`), the long forms behind the soak build tag (`make soak`).
package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/demo"
	"github.com/baton-run/baton/internal/testenv"
)

// NodeKind says which program the instances run.
type NodeKind int

const (
	// DemoNodes run `baton serve --demo`: demo-collect, demo-flaky and demo-settlement,
	// sized by Config.Env (BATON_DEMO_PAGES, BATON_DEMO_PAGE_LATENCY, BATON_DEMO_ACCOUNTS,
	// BATON_DEMO_PROVIDER_LATENCY, ...), with none of them on a schedule.
	DemoNodes NodeKind = iota
	// StormNodes run e2e/cluster/cmd/stormnode: STORM_JOBS jobs firing every second.
	StormNodes
)

// Config shapes a cluster. Zero fields take the defaults in brackets.
type Config struct {
	Nodes           int           // instances [3]
	Kind            NodeKind      // [DemoNodes]
	Lease           time.Duration // BATON_LEASE, the demo jobs' lease [4s]
	PollInterval    time.Duration // BATON_POLL_INTERVAL, the recoverer's period [500ms]
	ShutdownTimeout time.Duration // BATON_SHUTDOWN_TIMEOUT [5s]
	PoolSize        int           // BATON_POOL_SIZE [4]
	// Env is added to every instance's environment (demo sizes, STORM_JOBS, ...).
	Env map[string]string
}

func (c *Config) defaults() {
	if c.Nodes <= 0 {
		c.Nodes = 3
	}
	if c.Lease <= 0 {
		// Short, so faults resolve in seconds, yet a renewal (due with half the lease left)
		// survives a 2s stall of a loaded 2-core machine running the rest of the tests.
		c.Lease = 4 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 500 * time.Millisecond
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 5 * time.Second
	}
	if c.PoolSize <= 0 {
		c.PoolSize = 4
	}
}

// Cluster is one test's PostgreSQL, Redis and Baton instances.
type Cluster struct {
	T     testing.TB
	Cfg   Config
	Bin   *Binaries
	PG    *testenv.PostgresServer
	Redis *testenv.RedisServer
	// DatabaseURL reaches PostgreSQL directly (not through any proxy); DB and RDB are the
	// harness' own clients, for checks and setup.
	DatabaseURL string
	DB          *pgxpool.Pool
	RDB         *redis.Client
	// Token is an admin API token minted with `baton token create`.
	Token string
	Nodes []*Node
	Dir   string // the test's directory: logs of every process live here

	startedAt    time.Time
	eventsMu     sync.Mutex
	events       []string // what the harness did, with times, for failure reports
	failActivity string   // PostgreSQL sessions when the test failed, before teardown
}

// Env is the Redis namespace of every cluster (each has its own Redis).
const Env = "e2e"

// New starts a cluster: a private PostgreSQL and Redis, the schema, an admin token, then the
// instances (each behind its own two proxies), and returns once every instance is ready. Every
// process stops when the test ends; if the test failed, the tails of their logs are printed
// and the full logs kept (the path is printed).
func New(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	cfg.defaults()
	bin, err := Build()
	if err != nil {
		t.Fatalf("cluster: build: %v", err)
	}
	c := &Cluster{T: t, Cfg: cfg, Bin: bin, Dir: t.TempDir(), startedAt: time.Now()}
	c.PG = testenv.PrivatePostgres(t)
	c.Redis = testenv.PrivateRedis(t)
	t.Cleanup(c.dumpOnFailure) // runs after the nodes stop (cleanups run last-in first-out)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, c.PG.URL("postgres"))
	if err != nil {
		t.Fatalf("cluster: connect to private postgres: %v", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE baton"); err != nil {
		t.Fatalf("cluster: create database: %v", err)
	}
	_ = admin.Close(ctx)
	c.DatabaseURL = c.PG.URL("baton")
	if out, err := c.runBaton(ctx, "migrate", "up"); err != nil {
		t.Fatalf("cluster: baton migrate up: %v\n%s", err, out)
	}
	// The demo's tables are not in the product's schema; the invariant checks read them
	// whatever the nodes run (storm nodes serve the demo jobs only with STORM_DEMO), so they
	// are made here as a demo server makes them.
	if err := demo.Migrate(ctx, c.DatabaseURL); err != nil {
		t.Fatalf("cluster: %v", err)
	}
	out, err := c.runBaton(ctx, "token", "create", "--name", "e2e-admin", "--role", "admin")
	if err != nil {
		t.Fatalf("cluster: baton token create: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	c.Token = strings.TrimSpace(lines[len(lines)-1])
	if !strings.HasPrefix(c.Token, "bt_") {
		t.Fatalf("cluster: baton token create printed no token on its last line:\n%s", out)
	}

	pcfg, err := pgxpool.ParseConfig(c.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	pcfg.MaxConns = 8
	c.DB, err = pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatalf("cluster: open pool: %v", err)
	}
	t.Cleanup(c.DB.Close)
	c.RDB = redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", c.Redis.Port)})
	t.Cleanup(func() { _ = c.RDB.Close() })

	for i := range cfg.Nodes {
		c.Nodes = append(c.Nodes, c.newNode(i+1))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.Nodes))
	for i, n := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = n.start() }()
	}
	wg.Wait()
	// Registered last, so it runs first: while the instances still hold their sessions.
	t.Cleanup(func() {
		if t.Failed() {
			c.failActivity = c.pgActivity()
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("cluster: start instances: %v", err)
	}
	c.Logf("cluster up: %d %s instances, lease %s, poll %s", len(c.Nodes), kindName(cfg.Kind), cfg.Lease, cfg.PollInterval)
	return c
}

func kindName(k NodeKind) string {
	if k == StormNodes {
		return "stormnode"
	}
	return "baton serve --demo"
}

// runBaton runs a short baton command against the database directly.
func (c *Cluster) runBaton(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.Bin.Baton, args...)
	cmd.Env = append(cleanEnv(), "DATABASE_URL="+c.DatabaseURL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// cleanEnv is the test's environment without anything that would point a process at the
// shared servers or change its configuration.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || k == "REDIS_URL" || strings.HasPrefix(k, "BATON_") || strings.HasPrefix(k, "STORM_") ||
			strings.HasPrefix(k, "PG") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Logf logs a harness event with the time since the cluster started, to the test log and to
// the event list printed on failure.
func (c *Cluster) Logf(format string, args ...any) {
	c.T.Helper()
	msg := fmt.Sprintf("[%6.2fs] ", time.Since(c.startedAt).Seconds()) + fmt.Sprintf(format, args...)
	c.eventsMu.Lock()
	c.events = append(c.events, msg)
	c.eventsMu.Unlock()
	c.T.Log(msg)
}

// Node returns instance i (1-based, as in its name).
func (c *Cluster) Node(i int) *Node { return c.Nodes[i-1] }

// API returns an admin client of instance i (1-based).
func (c *Cluster) API(i int) *Client { return c.Nodes[i-1].API() }

// Other returns an instance other than the given ones (the first such, by index).
func (c *Cluster) Other(not ...*Node) *Node {
next:
	for _, n := range c.Nodes {
		for _, x := range not {
			if n == x {
				continue next
			}
		}
		return n
	}
	c.T.Fatalf("cluster: no instance other than the %d given", len(not))
	return nil
}

// NodeByInstance returns the node whose BATON_INSTANCE is name.
func (c *Cluster) NodeByInstance(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	c.T.Fatalf("cluster: no instance named %q", name)
	return nil
}

// FlushRedis runs FLUSHALL on Redis: every lock key (and everything else) is gone.
func (c *Cluster) FlushRedis() {
	c.T.Helper()
	c.Logf("redis: FLUSHALL")
	c.Redis.FlushAll(c.T)
}

// RestartRedis stops Redis (SIGTERM), waits down, and starts it again, empty, on the same
// port.
func (c *Cluster) RestartRedis(down time.Duration) {
	c.T.Helper()
	c.Logf("redis: stop")
	c.Redis.Stop(c.T)
	time.Sleep(down)
	c.Redis.Start(c.T)
	c.Logf("redis: started again (empty) after %s down", down)
}

// RestartPostgres stops PostgreSQL (fast shutdown: sessions aborted) or crashes it
// (crash=true: SIGKILL to every process; the restart runs crash recovery), waits down, and
// starts it again on the same port and data.
func (c *Cluster) RestartPostgres(down time.Duration, crash bool) {
	c.T.Helper()
	if crash {
		c.Logf("postgres: kill (crash)")
		c.PG.Kill(c.T)
	} else {
		c.Logf("postgres: stop (fast shutdown)")
		c.PG.Stop(c.T)
	}
	time.Sleep(down)
	c.PG.Start(c.T)
	c.Logf("postgres: started again after %s down", down)
}

// WaitAllReady waits until every running instance answers /readyz with 200.
func (c *Cluster) WaitAllReady(timeout time.Duration) {
	c.T.Helper()
	deadline := time.Now().Add(timeout)
	for _, n := range c.Nodes {
		if err := n.waitReady(deadline); err != nil {
			c.T.Fatalf("cluster: %v", err)
		}
	}
}

// MintTokens inserts n more admin tokens (named prefix-0, prefix-1, ...) and returns them.
// The per-token mutation rate limit is per instance, so a burst of mutations spreads over
// several tokens.
func (c *Cluster) MintTokens(prefix string, n int) []string {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tokens := make([]string, n)
	for i := range n {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		tok := "bt_" + base64.RawURLEncoding.EncodeToString(b)
		sum := sha256.Sum256([]byte(tok))
		_, err := c.DB.Exec(ctx, `INSERT INTO api_tokens (name, role, token_hash) VALUES ($1, 'admin', $2)`,
			fmt.Sprintf("%s-%d", prefix, i), hex.EncodeToString(sum[:]))
		if err != nil {
			c.T.Fatalf("cluster: mint token: %v", err)
		}
		tokens[i] = tok
	}
	return tokens
}

// dumpOnFailure prints the harness events and the tail of every log, and keeps the logs.
func (c *Cluster) dumpOnFailure() {
	if !c.T.Failed() {
		return
	}
	var b strings.Builder
	b.WriteString("=== cluster harness events ===\n")
	c.eventsMu.Lock()
	for _, e := range c.events {
		b.WriteString(e + "\n")
	}
	c.eventsMu.Unlock()
	b.WriteString(c.failActivity)
	logs := []string{}
	for _, n := range c.Nodes {
		accepted, refused := n.PGProxy.Stats()
		raccepted, rrefused := n.RedisProxy.Stats()
		fmt.Fprintf(&b, "proxies of %s: postgres %s (%d accepted, %d reset), redis %s (%d accepted, %d reset)\n", n.Name,
			n.PGProxy.Mode(), accepted, refused, n.RedisProxy.Mode(), raccepted, rrefused)
		logs = append(logs, n.LogPath)
	}
	logs = append(logs, c.PG.LogFile, c.Redis.LogFile)
	for i, p := range logs {
		n := 80
		if i >= len(c.Nodes) {
			n = 25
		}
		b.WriteString(tail(p, n))
	}
	keep, err := os.MkdirTemp("", "baton-e2e-logs-")
	if err == nil {
		for _, p := range logs {
			_ = testenv.CopyFile(p, filepath.Join(keep, strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "_")), 0o644)
		}
		fmt.Fprintf(&b, "=== full logs kept in %s ===\n", keep)
	}
	c.T.Log(b.String())
}

// pgActivity describes the sessions of database baton that are not idle: what they run, what
// they wait for, and who blocks them.
func (c *Cluster) pgActivity() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := c.DB.Query(ctx, `SELECT format('pid %s %s wait=%s/%s xact_age=%s blocked_by=%s: %s', pid, state,
			COALESCE(wait_event_type, '-'), COALESCE(wait_event, '-'), COALESCE((now() - xact_start)::text, '-'),
			pg_blocking_pids(pid), left(regexp_replace(query, '\s+', ' ', 'g'), 160))
		FROM pg_stat_activity WHERE datname = 'baton' AND pid <> pg_backend_pid() AND state <> 'idle' ORDER BY pid`)
	if err != nil {
		return fmt.Sprintf("=== postgres sessions: %v ===\n", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Sprintf("=== postgres sessions: %v ===\n", err)
	}
	return "=== postgres sessions not idle ===\n" + strings.Join(lines, "\n") + "\n"
}

func tail(path string, n int) string {
	lines, err := testenv.LastLines(path, n)
	if err != nil {
		return fmt.Sprintf("=== %s: %v ===\n", path, err)
	}
	return fmt.Sprintf("=== tail of %s ===\n%s\n", path, lines)
}

// Node is one Baton instance: a process (restartable) with its own proxies to PostgreSQL
// and Redis.
type Node struct {
	Name       string // BATON_INSTANCE: node-1, node-2, ...
	Index      int    // 1-based
	Port       int
	BaseURL    string // http://127.0.0.1:port
	PGProxy    *Proxy
	RedisProxy *Proxy
	LogPath    string // stdout and stderr of every start, appended

	c       *Cluster
	process processSlot
	api     *Client
}

// processSlot holds a node's current process, one at a time across restarts.
type processSlot struct {
	mu     sync.Mutex
	proc   *nodeProcess
	starts int
}

// current returns the process last started, or nil.
func (s *processSlot) current() *nodeProcess {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// launch starts cmd as the current process of the node name, its output appended to the log
// at logPath, unless the current one still runs.
func (s *processSlot) launch(cmd *exec.Cmd, name, logPath string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil && !s.proc.exited() {
		return fmt.Errorf("%s is already running", name)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.starts++
	fmt.Fprintf(logf, "=== harness: start #%d of %s at %s ===\n", s.starts, name, time.Now().Format(time.RFC3339Nano))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	logf.Close()
	p := &nodeProcess{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	s.proc = p
	return nil
}

// pid returns the current process id, or 0.
func (s *processSlot) pid() int {
	if p := s.current(); p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// signal sends sig to the current process and returns it, or nil when none runs.
func (s *processSlot) signal(sig syscall.Signal) *nodeProcess {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.exited() {
		return nil
	}
	_ = s.proc.cmd.Process.Signal(sig)
	return s.proc
}

// kill kills the current process, if it runs, and waits until it is gone.
func (s *processSlot) kill() {
	if p := s.signal(syscall.SIGKILL); p != nil {
		<-p.done
	}
}

type nodeProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func (p *nodeProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (c *Cluster) newNode(i int) *Node {
	t := c.T
	n := &Node{Name: fmt.Sprintf("node-%d", i), Index: i, Port: testenv.FreePort(t), c: c}
	n.BaseURL = fmt.Sprintf("http://127.0.0.1:%d", n.Port)
	n.LogPath = filepath.Join(c.Dir, n.Name+".log")
	var err error
	n.PGProxy, err = NewProxy(n.Name+"/postgres", testenv.FreePort(t), fmt.Sprintf("127.0.0.1:%d", c.PG.Port))
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	t.Cleanup(n.PGProxy.Close)
	n.RedisProxy, err = NewProxy(n.Name+"/redis", testenv.FreePort(t), fmt.Sprintf("127.0.0.1:%d", c.Redis.Port))
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	t.Cleanup(n.RedisProxy.Close)
	n.api = NewClient(n.BaseURL, c.Token)
	t.Cleanup(n.process.kill) // registered after the proxies: runs before they close
	return n
}

// API returns the node's admin client.
func (n *Node) API() *Client { return n.api }

// Client returns a client of the node with another token.
func (n *Node) Client(token string) *Client { return NewClient(n.BaseURL, token) }

func (n *Node) env() []string {
	cfg := n.c.Cfg
	env := append(cleanEnv(),
		"DATABASE_URL=postgres://postgres@"+n.PGProxy.Addr+"/baton?sslmode=disable",
		"REDIS_URL=redis://"+n.RedisProxy.Addr+"/0",
		"BATON_ENV="+Env,
		"BATON_ADDR="+fmt.Sprintf("127.0.0.1:%d", n.Port),
		"BATON_INSTANCE="+n.Name,
		"BATON_POOL_SIZE="+strconv.Itoa(cfg.PoolSize),
		"BATON_SCHEDULER=true",
		"BATON_POLL_INTERVAL="+cfg.PollInterval.String(),
		"BATON_LEASE="+cfg.Lease.String(),
		"BATON_SHUTDOWN_TIMEOUT="+cfg.ShutdownTimeout.String(),
		// No load balancer in front: a SIGTERM goes straight to the shutdown the scenarios time.
		"BATON_DRAIN_DELAY=0s",
		"BATON_LOG_FORMAT=json",
		// No demo job fires on its own: a scenario starts what it runs, and a fire of
		// demo-collect's quarter-hourly schedule would hold the job when it starts it.
		"BATON_DEMO_SCHEDULES=false",
	)
	for k, v := range cfg.Env {
		env = append(env, k+"="+v)
	}
	return env
}

// start launches the process and waits until it is ready.
func (n *Node) start() error {
	var cmd *exec.Cmd
	if n.c.Cfg.Kind == StormNodes {
		cmd = exec.Command(n.c.Bin.StormNode)
	} else {
		cmd = exec.Command(n.c.Bin.Baton, "serve", "--demo")
	}
	cmd.Env = n.env()
	cmd.Dir = n.c.Dir
	if err := n.process.launch(cmd, n.Name, n.LogPath); err != nil {
		return err
	}
	return n.waitReady(time.Now().Add(90 * time.Second))
}

// Start starts the node again (after Kill or Term) and waits until it is ready.
func (n *Node) Start() {
	n.c.T.Helper()
	if err := n.start(); err != nil {
		n.c.T.Fatalf("cluster: %v", err)
	}
	n.c.Logf("%s: started (pid %d)", n.Name, n.PID())
}

// PID returns the current process id, or 0.
func (n *Node) PID() int { return n.process.pid() }

// Running reports whether the process is alive (stopped counts as alive).
func (n *Node) Running() bool {
	p := n.process.current()
	return p != nil && !p.exited()
}

func (n *Node) waitReady(deadline time.Time) error {
	p := n.process.current()
	if p == nil {
		return nil
	}
	for {
		if p.exited() {
			return fmt.Errorf("%s exited before it was ready (%v)\n%s", n.Name, p.err, tail(n.LogPath, 30))
		}
		if n.Ready() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready in time\n%s", n.Name, tail(n.LogPath, 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var probe = &http.Client{Timeout: 3 * time.Second}

// Ready reports whether GET /readyz answers 200 now.
func (n *Node) Ready() bool {
	resp, err := probe.Get(n.BaseURL + "/readyz")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WaitReady waits until the node answers /readyz with 200.
func (n *Node) WaitReady(timeout time.Duration) {
	n.c.T.Helper()
	if err := n.waitReady(time.Now().Add(timeout)); err != nil {
		n.c.T.Fatalf("cluster: %v", err)
	}
}

// Kill sends SIGKILL and waits until the process is gone.
func (n *Node) Kill() {
	n.c.T.Helper()
	n.process.kill()
	n.c.Logf("%s: SIGKILL", n.Name)
}

// Pause freezes the process (SIGSTOP).
func (n *Node) Pause() {
	n.c.T.Helper()
	n.process.signal(syscall.SIGSTOP)
	n.c.Logf("%s: SIGSTOP", n.Name)
}

// Continue thaws a paused process (SIGCONT).
func (n *Node) Continue() {
	n.c.T.Helper()
	n.process.signal(syscall.SIGCONT)
	n.c.Logf("%s: SIGCONT", n.Name)
}

// Term sends SIGTERM (graceful shutdown) and waits up to timeout for the process to exit; past
// it the process is killed and the test fails.
func (n *Node) Term(timeout time.Duration) {
	n.c.T.Helper()
	n.process.signal(syscall.SIGCONT)
	p := n.process.signal(syscall.SIGTERM)
	n.c.Logf("%s: SIGTERM", n.Name)
	if p == nil {
		return
	}
	select {
	case <-p.done:
		n.c.Logf("%s: exited (%v)", n.Name, p.err)
	case <-time.After(timeout):
		n.process.signal(syscall.SIGKILL)
		<-p.done
		n.c.T.Errorf("cluster: %s did not exit within %s of SIGTERM; killed it", n.Name, timeout)
	}
}

// Restart is Term then Start.
func (n *Node) Restart(termTimeout time.Duration) {
	n.c.T.Helper()
	n.Term(termTimeout)
	n.Start()
}

// CutPostgres, CutRedis, BlackholePostgres, BlackholeRedis partition the node from a
// service (see ProxyMode); Heal puts both of its proxies back to Pass.
func (n *Node) CutPostgres()       { n.SetPostgresMode(Cut) }
func (n *Node) CutRedis()          { n.SetRedisMode(Cut) }
func (n *Node) BlackholePostgres() { n.SetPostgresMode(Blackhole) }
func (n *Node) BlackholeRedis()    { n.SetRedisMode(Blackhole) }
func (n *Node) Heal() {
	n.SetPostgresMode(Pass)
	n.SetRedisMode(Pass)
}

// SetPostgresMode and SetRedisMode switch the node's proxy to a service.
func (n *Node) SetPostgresMode(m ProxyMode) { n.setProxy(n.PGProxy, m) }
func (n *Node) SetRedisMode(m ProxyMode)    { n.setProxy(n.RedisProxy, m) }

func (n *Node) setProxy(p *Proxy, m ProxyMode) {
	p.SetMode(m)
	n.c.Logf("proxy %s: %s", p.Name, m)
}

// LogContains reports whether the node's log has a line containing every one of parts.
func (n *Node) LogContains(parts ...string) bool {
	f, err := os.Open(n.LogPath)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
next:
	for sc.Scan() {
		line := sc.Text()
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		return true
	}
	return false
}
