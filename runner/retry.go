package runner

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// onConnect retries fn while it fails to get a database connection at all — PostgreSQL
// refusing new clients (too many connections, starting up) or unreachable for a moment —
// with a short doubling backoff, until ctx ends. Such a failure means the statement was never
// sent, so making it again is safe whatever it does; any other error is returned at once.
// It keeps the steps of a start and of a run's activation and end from being lost to a
// connection storm: a claimed fire neither run nor recorded, a STARTING run left to its lease.
func onConnect[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	wait := 20 * time.Millisecond
	for {
		v, err := fn()
		if !isConnectError(err) {
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

// isConnectError reports whether err is a failure to get a database connection at all.
func isConnectError(err error) bool {
	var ce *pgconn.ConnectError
	return err != nil && errors.As(err, &ce)
}
