package server

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/buildinfo"
)

// registerMetrics registers the instance's own metrics beside the runner's: the Go runtime's
// and the process's, its connection pools' (registerPoolMetrics) and its HTTP requests'
// (httpMetrics), which it returns for the routes.
func registerMetrics(reg prometheus.Registerer, dbs databases, rdb redis.UniversalClient) (*httpMetrics, error) {
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	if err := reg.Register(buildInfo()); err != nil {
		return nil, err
	}
	if err := registerPoolMetrics(reg, dbs, rdb); err != nil {
		return nil, fmt.Errorf("pool metrics: %w", err)
	}
	m, err := newHTTPMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("http metrics: %w", err)
	}
	return m, nil
}

// buildInfo is baton_build_info{version, commit, go}, always 1: which build an instance runs.
func buildInfo() prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "baton_build_info",
		Help: "Always 1; its labels are the version and commit of the build the instance runs and the Go release it was built with.",
	}, []string{"version", "commit", "go"})
	g.WithLabelValues(buildinfo.Version(), buildinfo.Commit(), buildinfo.GoVersion()).Set(1)
	return g
}

// registerPoolMetrics exports the connection pools' statistics, read when Prometheus scrapes:
// each PostgreSQL pool's as baton_pgxpool_* series (pgxPoolCollector) labelled pool="main" or
// pool="listen" (the listen pool only when it is a pool of its own), and the Redis client's
// as baton_redis_pool_*. They tell an exhausted pool (acquires that had to wait, and for how
// long) from a slow database.
func registerPoolMetrics(reg prometheus.Registerer, dbs databases, rdb redis.UniversalClient) error {
	pools := []namedPool{{"main", dbs.main}}
	if dbs.listen != dbs.main {
		pools = append(pools, namedPool{"listen", dbs.listen})
	}
	if err := reg.Register(pgxPoolCollector{pools}); err != nil {
		return err
	}
	return reg.Register(redisPoolCollector{rdb})
}

type namedPool struct {
	name string
	pool *pgxpool.Pool
}

// pgxPoolCollector exports pgxpool's statistics under names Prometheus' conventions accept
// (promtool check metrics): counters end in _total, gauges do not end in _count, durations
// are in seconds.
type pgxPoolCollector struct{ pools []namedPool }

func pgxpoolDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("baton_pgxpool_"+name, help, []string{"pool"}, nil)
}

var pgxpoolSeries = []struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(*pgxpool.Stat) float64
}{
	{pgxpoolDesc("acquires_total", "Connections acquired from the pool."),
		prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.AcquireCount()) }},
	{pgxpoolDesc("acquire_seconds_total", "Time spent acquiring connections from the pool, in all."),
		prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return s.AcquireDuration().Seconds() }},
	{pgxpoolDesc("canceled_acquires_total", "Acquires given up because their context ended."),
		prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.CanceledAcquireCount()) }},
	{pgxpoolDesc("empty_acquires_total", "Acquires that found no idle connection and waited for one to be released or made."),
		prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.EmptyAcquireCount()) }},
	{pgxpoolDesc("empty_acquire_wait_seconds_total", "Time acquires that found no idle connection spent waiting, in all."),
		prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return s.EmptyAcquireWaitTime().Seconds() }},
	{pgxpoolDesc("new_connections_total", "Connections the pool opened."),
		prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.NewConnsCount()) }},
	{pgxpoolDesc("max_lifetime_destroyed_total", "Connections the pool closed as older than their maximum lifetime."),
		prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.MaxLifetimeDestroyCount()) }},
	{pgxpoolDesc("max_idle_destroyed_total", "Connections the pool closed as idle longer than their maximum idle time."),
		prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.MaxIdleDestroyCount()) }},
	{pgxpoolDesc("acquired_connections", "Connections acquired from the pool now."),
		prometheus.GaugeValue, func(s *pgxpool.Stat) float64 { return float64(s.AcquiredConns()) }},
	{pgxpoolDesc("constructing_connections", "Connections the pool is opening now."),
		prometheus.GaugeValue, func(s *pgxpool.Stat) float64 { return float64(s.ConstructingConns()) }},
	{pgxpoolDesc("idle_connections", "Idle connections in the pool now."),
		prometheus.GaugeValue, func(s *pgxpool.Stat) float64 { return float64(s.IdleConns()) }},
	{pgxpoolDesc("connections", "Connections in the pool now: acquired, idle and being opened."),
		prometheus.GaugeValue, func(s *pgxpool.Stat) float64 { return float64(s.TotalConns()) }},
	{pgxpoolDesc("max_connections", "The most connections the pool opens."),
		prometheus.GaugeValue, func(s *pgxpool.Stat) float64 { return float64(s.MaxConns()) }},
}

func (pgxPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range pgxpoolSeries {
		ch <- s.desc
	}
}

func (c pgxPoolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.pools {
		st := p.pool.Stat()
		for _, s := range pgxpoolSeries {
			ch <- prometheus.MustNewConstMetric(s.desc, s.kind, s.value(st), p.name)
		}
	}
}

// redisPoolCollector exports go-redis's pool statistics.
type redisPoolCollector struct{ rdb redis.UniversalClient }

var (
	redisPoolConns = prometheus.NewDesc("baton_redis_pool_connections",
		"Connections in the Redis client's pool, by state: total (open) or idle.", []string{"state"}, nil)
	redisPoolStale = prometheus.NewDesc("baton_redis_pool_stale_connections_total",
		"Connections the Redis client's pool closed as too old or idle too long.", nil, nil)
	redisPoolHits = prometheus.NewDesc("baton_redis_pool_hits_total",
		"Commands that found a free connection in the Redis client's pool.", nil, nil)
	redisPoolMisses = prometheus.NewDesc("baton_redis_pool_misses_total",
		"Commands that found no free connection in the Redis client's pool and opened or waited for one.", nil, nil)
	redisPoolTimeouts = prometheus.NewDesc("baton_redis_pool_timeouts_total",
		"Commands that waited for a connection of the Redis client's pool longer than its pool timeout.", nil, nil)
)

func (redisPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- redisPoolConns
	ch <- redisPoolStale
	ch <- redisPoolHits
	ch <- redisPoolMisses
	ch <- redisPoolTimeouts
}

func (c redisPoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.rdb.PoolStats()
	if s == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(redisPoolConns, prometheus.GaugeValue, float64(s.TotalConns), "total")
	ch <- prometheus.MustNewConstMetric(redisPoolConns, prometheus.GaugeValue, float64(s.IdleConns), "idle")
	ch <- prometheus.MustNewConstMetric(redisPoolStale, prometheus.CounterValue, float64(s.StaleConns))
	ch <- prometheus.MustNewConstMetric(redisPoolHits, prometheus.CounterValue, float64(s.Hits))
	ch <- prometheus.MustNewConstMetric(redisPoolMisses, prometheus.CounterValue, float64(s.Misses))
	ch <- prometheus.MustNewConstMetric(redisPoolTimeouts, prometheus.CounterValue, float64(s.Timeouts))
}
