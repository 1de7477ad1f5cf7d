// Package server runs a complete Baton instance — migrations, the runner with its scheduler
// and workers, live events over Redis, the GraphQL API, the admin console and the health and
// metrics endpoints — around the jobs a Go program gives it. `baton serve` is this package
// with flags; a program embedding Baton calls Serve with its own jobs.
package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/frontend"
	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/redisconn"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/migrations"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/server/httpapi"
	"github.com/baton-run/baton/tracing"
)

// Serve runs an instance until ctx is done, then shuts down gracefully: readiness goes 503,
// the runner stops taking work and waits for jobs to reach a boundary, the HTTP server drains.
func Serve(ctx context.Context, o Config) error {
	o.setDefaults()
	log := o.Logger
	if err := o.check(); err != nil {
		return err
	}
	tp, stopTracing, err := tracerProvider(ctx, o)
	if err != nil {
		return err
	}
	// Deferred first, so it runs last: the spans of the runs that stop at shutdown go too.
	defer stopTracing()
	// Listening first: while PostgreSQL is not up yet, /healthz says alive, /readyz not ready.
	front, err := listen(o.Addr)
	if err != nil {
		return err
	}
	defer front.stop()
	dbs, rdb, err := connectWithin(ctx, o)
	if err != nil {
		return err
	}
	defer dbs.Close()
	defer rdb.Close()

	reg := prometheus.NewRegistry()
	hm, err := registerMetrics(reg, dbs, rdb)
	if err != nil {
		return err
	}

	pub := pubsub.NewPublisher(rdb, o.Env, pubsub.PublisherOptions{InstanceID: o.Instance, Logger: log})
	hub := pubsub.NewHub(rdb, o.Env, pubsub.HubOptions{Logger: log})
	r, jobs, err := newRunner(ctx, o, dbs, rdb, reg, pub, tp)
	if err != nil {
		return err
	}

	var draining atomic.Bool
	tokens := httpapi.NewTokenStore(dbs.main)
	tokens.ListenOn(dbs.listen)
	front.use(routes(o, r, hub, dbs.main, rdb, reg, hm, tokens, draining.Load, tp))

	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(bg) }()
	runDone := make(chan error, 1)
	go func() { runDone <- r.Run(bg) }()

	base := front.base()
	log.Info("baton serving", "url", base, "instance", r.Instance(), "env", o.Env,
		"pool_size", o.PoolSize, "scheduler", o.Scheduler, "jobs", len(jobs))
	defer announce(ctx, o, tokens, base)()

	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing runs at their next boundary", "timeout", o.ShutdownTimeout, "drain_delay", o.DrainDelay)
		draining.Store(true)
		o.drain()
	case err := <-front.errc:
		log.Error("http server stopped", "err", err)
		draining.Store(true)
	}
	stopBG()
	runErr := <-runDone
	<-hubDone
	front.stop()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = pub.Close(shutdownCtx)
	if runErr != nil {
		log.Error("shutdown incomplete", "err", runErr)
		return runErr
	}
	log.Info("stopped cleanly")
	return nil
}

// announce calls Config.Ready, if set, with base and the admin token it mints, and returns
// what to do as the instance stops: revoke that token.
func announce(ctx context.Context, o Config, tokens *httpapi.TokenStore, base string) (stop func()) {
	if o.Ready == nil {
		return func() {}
	}
	name, token := mintAdminToken(ctx, o, tokens)
	o.Ready(base, token)
	if name == "" {
		return func() {}
	}
	return func() { revokeAdminToken(o, tokens, name) }
}

// mintAdminToken mints the instance's own admin token when Config.AdminTokenName asks for
// one, and returns its name and the token; "" and "" when it asks for none or the token
// cannot be minted (which is logged). Token names are never reissued, so each start takes a
// fresh name: AdminTokenName, the instance and a number one higher than any the instance had,
// as in dev-admin-web-1.3. The tokens of other instances are left alone: they serve too.
func mintAdminToken(ctx context.Context, o Config, tokens *httpapi.TokenStore) (name, token string) {
	if o.AdminTokenName == "" {
		return "", ""
	}
	tokens = tokens.As("server:" + o.Instance)
	prefix := adminTokenPrefix(o.AdminTokenName, o.Instance)
	for attempt := 0; attempt < 5; attempt++ {
		existing, err := tokens.Tokens(ctx)
		if err != nil {
			o.Logger.Error("mint admin token", "err", err)
			return "", ""
		}
		n := 0
		for _, t := range existing {
			if rest, ok := strings.CutPrefix(t.Name, prefix); ok {
				if k, err := strconv.Atoi(rest); err == nil && k > n {
					n = k
				}
			}
		}
		name = prefix + strconv.Itoa(n+1)
		token, _, err = httpapi.CreateToken(ctx, tokens, name, model.RoleAdmin)
		if err == nil {
			return name, token
		}
		// Another start of an instance of the same name took the number first: count again.
		if bt.CodeOf(err) != bt.CodeConflict {
			o.Logger.Error("mint admin token", "name", name, "err", err)
			return "", ""
		}
	}
	o.Logger.Error("mint admin token: every name tried was taken", "prefix", prefix)
	return "", ""
}

// adminTokenPrefix is the name of an instance's admin tokens without their number: base, the
// instance with the characters a token name should not hold replaced, and a dot. It stays
// short enough for the number to fit a token name's 100 characters.
func adminTokenPrefix(base, instance string) string {
	clean := []byte(instance)
	for i, c := range clean {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			clean[i] = '_'
		}
	}
	prefix := base + "-" + string(clean)
	if len(prefix) > 88 {
		prefix = prefix[:88]
	}
	return prefix + "."
}

// revokeAdminToken revokes the admin token the instance minted at start, as it stops.
func revokeAdminToken(o Config, tokens *httpapi.TokenStore, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := tokens.As("server:"+o.Instance).RevokeToken(ctx, name); err != nil {
		o.Logger.Warn("revoke admin token", "name", name, "err", err)
		return
	}
	o.Logger.Info("revoked admin token", "name", name)
}

// databases are an instance's PostgreSQL pools: main for its queries (perhaps through
// PgBouncer), listen for its LISTENs (main itself unless DatabaseDirectURL is set).
type databases struct {
	main, listen *pgxpool.Pool
}

// Close closes both pools.
func (d databases) Close() {
	if d.listen != d.main {
		d.listen.Close()
	}
	d.main.Close()
}

// connect migrates the schema and opens the PostgreSQL pools and the Redis client.
func connect(ctx context.Context, o Config) (databases, redis.UniversalClient, error) {
	// The client has ContextTimeoutEnabled set: without it a stalled Redis would hold every
	// lock call past its deadline, long enough to cost a run its lease. A bad Redis URL or CA
	// file stops here, before anything touches the database.
	redisconn.SetLogger(o.Logger) // go-redis' own messages, in the instance's log
	rdb, err := redisconn.New(o.RedisURL, redisconn.Options{CAFile: o.RedisCAFile})
	if err != nil {
		return databases{}, nil, permanent{fmt.Errorf("redis url: %w", err)}
	}
	dbs, err := openDatabases(ctx, o)
	if err != nil {
		_ = rdb.Close()
		return databases{}, nil, err
	}
	return dbs, rdb, nil
}

// openDatabases migrates the schema and opens the pools. Migrations hold a session-level
// advisory lock and LISTENs a session, neither of which PgBouncer's transaction pooling
// keeps, so both go to DatabaseDirectURL when it is set; the main pool then needs no
// server-side prepared statements (see poolConfig).
func openDatabases(ctx context.Context, o Config) (databases, error) {
	direct := o.DatabaseDirectURL
	if direct == "" {
		direct = o.DatabaseURL
	}
	o.Logger.Info("migrating schema")
	if err := migrations.Up(ctx, direct); err != nil {
		return databases{}, err
	}
	maxConns := 2*o.PoolSize + 8
	if o.DBMaxConns > 0 {
		maxConns = o.DBMaxConns
	}
	pcfg, err := poolConfig(o.DatabaseURL, o.DatabaseDirectURL != "", maxConns)
	if err != nil {
		return databases{}, permanent{fmt.Errorf("parse database url: %w", err)}
	}
	main, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return databases{}, fmt.Errorf("open database: %w", err)
	}
	if o.DatabaseDirectURL == "" {
		return databases{main: main, listen: main}, nil
	}
	// Two listeners: the scheduler's and the token revocations'; one spare for a reconnect.
	lcfg, err := poolConfig(o.DatabaseDirectURL, false, 3)
	if err != nil {
		main.Close()
		return databases{}, fmt.Errorf("parse database direct url: %w", err)
	}
	listen, err := pgxpool.NewWithConfig(ctx, lcfg)
	if err != nil {
		main.Close()
		return databases{}, fmt.Errorf("open database direct url: %w", err)
	}
	return databases{main: main, listen: listen}, nil
}

// poolConfig parses a pool's URL. A pool behind a transaction pooler (pooled) runs its
// queries in pgx's cache_describe mode, which prepares only the unnamed statement and sends
// each query whole in its Bind, so no statement outlives the transaction that PgBouncer gave
// a server connection to; a default_query_exec_mode named in the URL wins.
func poolConfig(databaseURL string, pooled bool, maxConns int) (*pgxpool.Config, error) {
	pcfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	if pooled && !strings.Contains(databaseURL, "default_query_exec_mode") {
		pcfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	pcfg.MaxConns = int32(maxConns)
	return pcfg, nil
}

// newRunner builds the runner over pool and rdb, its metrics in reg and its events through
// pub, and registers the instance's jobs (o.Jobs and those of o.JobsFunc), which it returns.
func newRunner(ctx context.Context, o Config, dbs databases, rdb redis.UniversalClient, reg *prometheus.Registry, pub *pubsub.Publisher,
	tp trace.TracerProvider) (*runner.Runner, []runner.Job, error) {
	poolSize := o.PoolSize
	if poolSize == 0 {
		poolSize = -1
	}
	key, err := o.secretKey()
	if err != nil {
		return nil, nil, err
	}
	r, err := runner.New(runner.Config{
		DB: dbs.main, ListenDB: dbs.listen, Redis: rdb, Env: o.Env, Instance: o.Instance, PoolSize: poolSize, Scheduler: o.Scheduler,
		PollInterval: o.PollInterval, DefaultLease: o.Lease, ShutdownTimeout: o.ShutdownTimeout,
		Logger: o.Logger, Registerer: reg, Events: live.NewEventPublisher(pub), WorkerVersion: o.Version,
		Retention: o.Retention, TracerProvider: tp,
		Notify: runner.NotifyConfig{Sender: o.notifySender(), SecretKey: key},
	})
	if err != nil {
		return nil, nil, err
	}
	reg.MustRegister(r.AlertCollector())
	jobs := o.Jobs
	if o.JobsFunc != nil {
		more, err := o.JobsFunc(dbs.main)
		if err != nil {
			return nil, nil, err
		}
		jobs = append(jobs, more...)
	}
	if err := r.Register(ctx, jobs...); err != nil {
		return nil, nil, err
	}
	return r, jobs, nil
}

// routes lays out the instance's HTTP endpoints: health, readiness (503 once draining
// reports true), metrics, GraphQL and the console, each counted and timed (httpMetrics).
func routes(o Config, r *runner.Runner, hub *pubsub.Hub, pool *pgxpool.Pool, rdb redis.UniversalClient, reg *prometheus.Registry, m *httpMetrics,
	tokens *httpapi.TokenStore, draining func() bool, tp trace.TracerProvider) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", m.instrument("healthz", httpapi.Live()))
	mux.Handle("GET /readyz", m.instrument("readyz", httpapi.Ready(draining,
		httpapi.Check{Name: "postgres", Ping: pool.Ping},
		httpapi.Check{Name: "redis", Ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }})))
	mux.Handle("GET /metrics", m.instrument("metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	var api http.Handler = httpapi.NewHandler(httpapi.Config{AllowedOrigins: o.AllowedOrigins, Tokens: tokens,
		GraphQL: graph.Config{Runner: r, Hub: hub, DevMode: o.DevMode, Logger: o.Logger, TracerProvider: tp, OnError: m.graphQLError}})
	if tp != nil {
		// The caller's traceparent, read before the transport: the operation's span is its child.
		api = tracing.Extract(api)
	}
	mux.Handle("/graphql", m.instrument("graphql", api))
	console := o.Console
	if console == nil {
		console = frontend.Handler()
	}
	console = m.instrument("console", console)
	mux.Handle("/admin/", console)
	mux.Handle("/playground", console)
	mux.Handle("/playground/", console)
	mux.Handle("GET /{$}", http.RedirectHandler("/admin/", http.StatusFound))
	return mux
}

// tracerProvider returns the provider of the instance's spans — the program's, or the one
// TracesExporter and the OTEL_* variables make — or nil when tracing is off, and what stops
// it: flushing the spans still buffered, within a few seconds.
func tracerProvider(ctx context.Context, o Config) (trace.TracerProvider, func(), error) {
	if o.TracerProvider != nil {
		return o.TracerProvider, func() {}, nil
	}
	sdk, err := tracing.Setup(ctx, tracing.Config{Exporter: o.TracesExporter, Instance: o.Instance, Version: o.Version, Logger: o.Logger})
	if err != nil {
		return nil, nil, err
	}
	if sdk == nil {
		return nil, func() {}, nil
	}
	o.Logger.Info("tracing on", "exporter", o.TracesExporter)
	return sdk, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sdk.Shutdown(ctx); err != nil {
			o.Logger.Warn("send the last spans", "err", err)
		}
	}, nil
}

// displayAddr turns a listen address into one a browser can open.
func displayAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if host == "" || host == "::" || host == "0.0.0.0" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
