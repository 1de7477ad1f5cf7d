package connretry

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// refused tries a real connection to a port nothing listens on: the error a pool returns when
// PostgreSQL cannot be reached or refuses new clients.
func refused(ctx context.Context) error {
	c, err := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err == nil {
		_ = c.Close(ctx)
		return errors.New("something listens on port 1")
	}
	return err
}

func TestOnConnectRetriesOnlyConnectionFailures(t *testing.T) {
	ctx := context.Background()
	calls := 0
	v, err := OnConnect(ctx, func() (int, error) {
		if calls++; calls < 3 {
			return 0, refused(ctx)
		}
		return 42, nil
	})
	if err != nil || v != 42 || calls != 3 {
		t.Fatalf("got %d, %v after %d calls; want 42 after 3 (two refused connections retried)", v, err, calls)
	}

	calls = 0
	other := errors.New("duplicate key")
	if _, err := OnConnect(ctx, func() (int, error) { calls++; return 0, other }); !errors.Is(err, other) || calls != 1 {
		t.Fatalf("got %v after %d calls; want the statement's own error at once", err, calls)
	}

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	calls = 0
	_, err = OnConnect(short, func() (int, error) { calls++; return 0, refused(ctx) })
	if err == nil || short.Err() == nil || calls < 2 {
		t.Fatalf("got %v after %d calls, context %v; want the connection error once the context ended, after retries", err, calls, short.Err())
	}
}

// terminated returns the error a statement gets on a session the server ended under it (what
// a primary going down, or a failover, does to every session of the pool).
func terminated(t *testing.T) error {
	t.Helper()
	ctx := context.Background()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	victim, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close(ctx)
	killer, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)
	var ok bool
	if err := killer.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, victim.PgConn().PID()).Scan(&ok); err != nil || !ok {
		t.Fatalf("terminate the session: %v %v", ok, err)
	}
	_, err = victim.Exec(ctx, `SELECT 1`)
	if err == nil {
		t.Fatal("a statement on a terminated session succeeded")
	}
	return err
}

func TestIsUnavailable(t *testing.T) {
	ctx := context.Background()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, refusedSQL := conn.Exec(ctx, `SELECT 1/0`)
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"terminated session", terminated(t), true},
		{"connection refused", refused(ctx), true},
		{"a statement the server refused", refusedSQL, false},
		{"cancelled", context.Canceled, false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := IsUnavailable(c.err); got != c.want {
			t.Errorf("IsUnavailable(%s: %v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
	calls := 0
	v, err := OnUnavailable(ctx, func() (int, error) {
		if calls++; calls < 3 {
			return 0, terminated(t)
		}
		return 7, nil
	})
	if err != nil || v != 7 || calls != 3 {
		t.Fatalf("OnUnavailable: %d, %v after %d calls; want 7 after 3", v, err, calls)
	}
	calls = 0
	if _, err := OnUnavailable(ctx, func() (int, error) { calls++; return 0, refusedSQL }); err != refusedSQL || calls != 1 {
		t.Fatalf("OnUnavailable retried a statement the server refused: %v after %d calls", err, calls)
	}
}
