//go:build unix

package testenv_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
)

func connectPG(ctx context.Context, t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// requirePGDown fails unless connecting to url fails.
func requirePGDown(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err == nil {
		_ = conn.Close(ctx)
		t.Fatalf("connected to %s, but the server should be down", url)
	}
}

func countRows(ctx context.Context, t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM survivors").Scan(&n); err != nil {
		t.Fatalf("count rows: %v", err)
	}
	return n
}

func TestPrivatePostgresStopStartKeepsData(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg := testenv.PrivatePostgres(t)
	url := pg.URL("postgres")

	conn := connectPG(ctx, t, url)
	var superuser string
	if err := conn.QueryRow(ctx, "SELECT current_setting('is_superuser')").Scan(&superuser); err != nil || superuser != "on" {
		t.Fatalf("is_superuser = %q, %v; want on", superuser, err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE survivors (id int PRIMARY KEY); INSERT INTO survivors VALUES (1), (2), (3)"); err != nil {
		t.Fatalf("create table: %v", err)
	}

	port := pg.Port
	pg.Stop(t)
	pg.Stop(t) // idempotent
	requirePGDown(t, url)
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("a session opened before Stop still answers")
	}

	pg.Start(t)
	if pg.Port != port {
		t.Fatalf("port changed across restart: %d -> %d", port, pg.Port)
	}
	if n := countRows(ctx, t, connectPG(ctx, t, url)); n != 3 {
		t.Fatalf("after restart: %d rows, want 3", n)
	}
}

func TestPrivatePostgresKillLosesNoCommit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg := testenv.PrivatePostgres(t)
	url := pg.URL("postgres")

	conn := connectPG(ctx, t, url)
	if _, err := conn.Exec(ctx, "CREATE TABLE survivors (id int PRIMARY KEY)"); err != nil {
		t.Fatalf("create table: %v", err)
	}
	for i := range 100 {
		if _, err := conn.Exec(ctx, "INSERT INTO survivors VALUES ($1)", i); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO survivors VALUES (1000)"); err != nil {
		t.Fatalf("insert in open transaction: %v", err)
	}

	pg.Kill(t)
	// The backend died with the postmaster: the open transaction cannot commit.
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("commit succeeded after Kill")
	}
	requirePGDown(t, url)
	pg.Kill(t) // idempotent

	pg.Start(t) // crash recovery
	if n := countRows(ctx, t, connectPG(ctx, t, url)); n != 100 {
		t.Fatalf("after crash recovery: %d rows, want the 100 committed ones", n)
	}
	logs := readFile(t, pg.LogFile)
	if !testenv.Contains(logs, "not properly shut down") && !testenv.Contains(logs, "automatic recovery") {
		t.Fatalf("expected crash recovery in the log:\n%s", logs)
	}
}

func TestPrivatePostgresAreIndependent(t *testing.T) {
	t.Parallel()
	a, b := testenv.PrivatePostgres(t), testenv.PrivatePostgres(t)
	if a.Port == b.Port || a.Dir == b.Dir {
		t.Fatalf("two servers share port or directory: %d %s / %d %s", a.Port, a.Dir, b.Port, b.Dir)
	}
	a.Stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := connectPG(ctx, t, b.URL("postgres")).Ping(ctx); err != nil {
		t.Fatalf("stopping one server broke the other: %v", err)
	}
}

func TestPrivateRedisKillStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs := testenv.PrivateRedis(t)
	opt, err := redis.ParseURL(rs.URL())
	if err != nil {
		t.Fatalf("parse %s: %v", rs.URL(), err)
	}
	if opt.Addr != "127.0.0.1:"+strconv.Itoa(rs.Port) {
		t.Fatalf("URL %s does not name port %d", rs.URL(), rs.Port)
	}
	opt.MaxRetries = -1
	c := redis.NewClient(opt)
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}

	rs.Kill(t)
	rs.Kill(t) // idempotent
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Kill")
	}
	if conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(rs.Port), time.Second); err == nil {
		conn.Close()
		t.Fatal("port still accepts connections after Kill")
	}

	rs.Start(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}
	// Persistence is off: a crashed private Redis comes back empty.
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET k after restart: %v, want redis.Nil", err)
	}

	rs.Stop(t)
	rs.Stop(t) // idempotent
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Stop")
	}
	rs.Start(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after second start: %v", err)
	}
}

func TestPrivateRedisFlushAll(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs := testenv.PrivateRedis(t)
	var clients []*redis.Client
	for db := range 2 {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(rs.Port), DB: db})
		defer c.Close()
		for _, k := range []string{"a", "b", "c"} {
			if err := c.Set(ctx, k, db, 0).Err(); err != nil {
				t.Fatalf("set %s in db %d: %v", k, db, err)
			}
		}
		clients = append(clients, c)
	}
	rs.FlushAll(t)
	for db, c := range clients {
		n, err := c.DBSize(ctx).Result()
		if err != nil || n != 0 {
			t.Fatalf("db %d holds %d keys after FlushAll (%v), want 0", db, n, err)
		}
	}
}

func TestFreePort(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for range 20 {
		p := testenv.FreePort(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("FreePort returned %d, which cannot be bound: %v", p, err)
		}
		l.Close()
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}
