//go:build unix

package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
)

func quietConfig(databaseURL string) Config {
	c := DefaultConfig()
	c.DatabaseURL = databaseURL
	c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return c
}

// TestPoolConfigQueryMode: a pool behind a transaction pooler runs in cache_describe mode
// (no named prepared statements) unless its URL names a mode; a direct pool keeps pgx's
// default statement cache.
func TestPoolConfigQueryMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url    string
		pooled bool
		want   pgx.QueryExecMode
	}{
		{"postgres://u@h:6432/db", true, pgx.QueryExecModeCacheDescribe},
		{"postgres://u@h:6432/db?default_query_exec_mode=simple_protocol", true, pgx.QueryExecModeSimpleProtocol},
		{"postgres://u@h:5432/db", false, pgx.QueryExecModeCacheStatement},
	} {
		pcfg, err := poolConfig(tc.url, tc.pooled, 5)
		if err != nil {
			t.Fatal(err)
		}
		if got := pcfg.ConnConfig.DefaultQueryExecMode; got != tc.want || pcfg.MaxConns != 5 {
			t.Errorf("poolConfig(%q, pooled %v) has mode %v and %d conns; want %v and 5", tc.url, tc.pooled, got, pcfg.MaxConns, tc.want)
		}
	}
}

// TestDatabaseTLSVerifyFull: with sslmode=verify-full and sslrootcert naming the CA that
// signed the server's certificate, the instance migrates and connects over TLS; without the
// CA it refuses the server's certificate.
func TestDatabaseTLSVerifyFull(t *testing.T) {
	t.Parallel()
	srv, certs := testenv.PrivateTLSPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	dbs, err := openDatabases(ctx, quietConfig(srv.TLSURL("postgres", certs.CAFile)))
	if err != nil {
		t.Fatalf("verify-full with the CA: %v", err)
	}
	defer dbs.Close()
	var ssl bool
	if err := dbs.main.QueryRow(ctx, `SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl); err != nil || !ssl {
		t.Fatalf("connection over TLS = %v, %v; want true", ssl, err)
	}
	if n := testbundle.Count(t, dbs.main, `SELECT count(*) FROM job_runs`); n != 0 {
		t.Fatalf("%d runs in a fresh schema", n)
	}

	// No sslrootcert: the system's roots, which do not know the test's CA.
	_, err = openDatabases(ctx, quietConfig(srv.TLSURL("postgres", "")))
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("verify-full without the CA = %v; want a certificate error", err)
	}
	t.Logf("verify-full without the CA: %v", err)
}

// TestMultiHostDatabaseURL: a DATABASE_URL listing hosts with target_session_attrs=read-write
// is accepted, whether its first host is dead or the one server is listed twice.
func TestMultiHostDatabaseURL(t *testing.T) {
	t.Parallel()
	srv := testenv.PrivatePostgres(t)
	dead := testenv.FreePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, hosts := range []string{
		fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", dead, srv.Port),
		fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", srv.Port, srv.Port),
	} {
		url := "postgres://postgres@" + hosts + "/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=5"
		dbs, err := openDatabases(ctx, quietConfig(url))
		if err != nil {
			t.Fatalf("open %s: %v", url, err)
		}
		var readOnly string
		err = dbs.main.QueryRow(ctx, `SHOW transaction_read_only`).Scan(&readOnly)
		dbs.Close()
		if err != nil || readOnly != "off" {
			t.Fatalf("through %s: transaction_read_only = %q, %v; want off", url, readOnly, err)
		}
	}
}

// TestServeThroughPgBouncer: an instance whose database-url points at PgBouncer in
// transaction mode, with database-direct-url set, migrates, serves and is ready, its
// LISTENs on direct connections.
func TestServeThroughPgBouncer(t *testing.T) {
	t.Parallel()
	backend := testenv.PrivatePostgres(t)
	pooler := testenv.PrivatePgBouncer(t, backend)
	c := quietConfig(pooler.URL("postgres"))
	c.DatabaseDirectURL = backend.URL("postgres")
	c.RedisURL = testenv.RedisURL()
	c.Env = testenv.RandomName("pb")
	c.Addr = "127.0.0.1:0"
	ready := make(chan string, 1)
	c.Ready = func(base, _ string) { ready <- base }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, c) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var base string
	select {
	case base = <-ready:
	case err := <-done:
		t.Fatalf("serve through pgbouncer: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("not ready within a minute")
	}
	res, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("readyz = %d", res.StatusCode)
	}
	direct := testenv.Pool(t, backend.URL("postgres"))
	testenv.Eventually(t, 10*time.Second, "the scheduler's LISTEN on a direct connection", func() bool {
		return testbundle.Count(t, direct, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'`) >= 1
	})
}
