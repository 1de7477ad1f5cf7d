package connretry

import (
	"context"
	"errors"
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
