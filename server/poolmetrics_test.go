package server

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/baton-run/baton/internal/testenv"
)

// TestPoolMetrics: the pools' statistics are read at each scrape — a connection held shows as
// acquired, given back as idle, the pool's size and its acquires (the first of an empty pool
// had to wait for a connection to be made) — with the listen pool labelled apart only when it
// is a pool of its own; the Redis client's pool shows its connection and the command that used it.
func TestPoolMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := func(max int32) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(testenv.DatabaseURL())
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = max
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	main, listen := pool(3), pool(1)
	rdb, _ := testenv.Redis(t)

	reg := prometheus.NewRegistry()
	if err := registerPoolMetrics(reg, databases{main: main, listen: listen}, rdb); err != nil {
		t.Fatal(err)
	}
	conn, err := main.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	held := gather(t, reg)
	conn.Release()
	back := gather(t, reg)

	for _, c := range []struct {
		what    string
		got     float64
		want    float64
		atLeast bool // want is a floor, not the value
	}{
		{"main pool's max conns", held.value("baton_pgxpool_max_connections", "main"), 3, false},
		{"listen pool's max conns", held.value("baton_pgxpool_max_connections", "listen"), 1, false},
		{"main pool's acquired conns while one is held", held.value("baton_pgxpool_acquired_connections", "main"), 1, false},
		{"main pool's acquired conns once it is back", back.value("baton_pgxpool_acquired_connections", "main"), 0, false},
		{"main pool's idle conns once it is back", back.value("baton_pgxpool_idle_connections", "main"), 1, false},
		{"main pool's acquires", back.value("baton_pgxpool_acquires_total", "main"), 1, false},
		{"main pool's acquires that waited for a connection", back.value("baton_pgxpool_empty_acquires_total", "main"), 1, false},
		{"listen pool's acquires", back.value("baton_pgxpool_acquires_total", "listen"), 0, false},
		{"Redis pool's open connections", held.value("baton_redis_pool_connections", "total"), 1, true},
		{"Redis pool's hits and misses", held.value("baton_redis_pool_hits_total", "") + held.value("baton_redis_pool_misses_total", ""), 1, true},
	} {
		if c.got != c.want && !(c.atLeast && c.got > c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}

	// One pool for both: its series once, as pool="main".
	reg = prometheus.NewRegistry()
	if err := registerPoolMetrics(reg, databases{main: main, listen: main}, rdb); err != nil {
		t.Fatal(err)
	}
	one := gather(t, reg)
	if n := one.count("baton_pgxpool_max_connections"); n != 1 || one.value("baton_pgxpool_max_connections", "main") != 3 {
		t.Errorf("one pool for both: %d baton_pgxpool_max_connections series (main %v), want 1 (3)", n, one.value("baton_pgxpool_max_connections", "main"))
	}
}

type families map[string]*dto.MetricFamily

func gather(t *testing.T, reg *prometheus.Registry) families {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := families{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// value is the series of name whose one label (pool or state) is label, or whose has none
// when label is ""; -1 when there is no such series.
func (f families) value(name, label string) float64 {
	mf := f[name]
	if mf == nil {
		return -1
	}
	for _, m := range mf.GetMetric() {
		lv := ""
		if ls := m.GetLabel(); len(ls) > 0 {
			lv = ls[0].GetValue()
		}
		if lv != label {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Untyped != nil:
			return m.Untyped.GetValue()
		}
	}
	return -1
}

func (f families) count(name string) int {
	if mf := f[name]; mf != nil {
		return len(mf.GetMetric())
	}
	return 0
}
