package server

import (
	"fmt"

	"github.com/IBM/pgxpoolprometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
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
	if err := registerPoolMetrics(reg, dbs, rdb); err != nil {
		return nil, fmt.Errorf("pool metrics: %w", err)
	}
	m, err := newHTTPMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("http metrics: %w", err)
	}
	return m, nil
}

// registerPoolMetrics exports the connection pools' statistics, read when Prometheus scrapes:
// each PostgreSQL pool's as baton_pgxpool_* series (pgxpoolprometheus's, prefixed) labelled
// pool="main" or pool="listen" (the listen pool only when it is a pool of its own), and the
// Redis client's as baton_redis_pool_*. They tell an exhausted pool (acquires that had to
// wait, and for how long) from a slow database.
func registerPoolMetrics(reg prometheus.Registerer, dbs databases, rdb redis.UniversalClient) error {
	baton := prometheus.WrapRegistererWithPrefix("baton_", reg)
	if err := baton.Register(pgxpoolprometheus.NewCollector(dbs.main, map[string]string{"pool": "main"})); err != nil {
		return err
	}
	if dbs.listen != dbs.main {
		if err := baton.Register(pgxpoolprometheus.NewCollector(dbs.listen, map[string]string{"pool": "listen"})); err != nil {
			return err
		}
	}
	return reg.Register(redisPoolCollector{rdb})
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
