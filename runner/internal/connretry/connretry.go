// Package connretry makes a database statement again when it failed before it was sent: the
// pool could not get a connection at all.
package connretry

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// OnConnect retries fn while it fails to get a database connection at all — PostgreSQL
// refusing new clients (too many connections, starting up) or unreachable for a moment —
// with a short doubling backoff, until ctx ends. Such a failure means the statement was never
// sent, so making it again is safe whatever it does; any other error is returned at once.
// It keeps the steps of a start and of a run's activation and end from being lost to a
// connection storm: a claimed fire neither run nor recorded, a STARTING run left to its lease.
func OnConnect[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	wait := 20 * time.Millisecond
	for {
		v, err := fn()
		if !IsConnectError(err) {
			return v, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		wait = min(wait*2, time.Second)
	}
}

// IsConnectError reports whether err is a failure to get a database connection at all.
func IsConnectError(err error) bool {
	var ce *pgconn.ConnectError
	return err != nil && errors.As(err, &ce)
}
