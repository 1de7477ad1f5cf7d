// Package connretry makes a database statement again when it failed before it was sent: the
// pool could not get a connection at all.
package connretry

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
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
	return retryWhile(ctx, fn, IsConnectError)
}

// retryWhile calls fn again, after a short doubling backoff, while its error satisfies retry
// and ctx allows.
func retryWhile[T any](ctx context.Context, fn func() (T, error), retry func(error) bool) (T, error) {
	wait := 20 * time.Millisecond
	for {
		v, err := fn()
		if !retry(err) || ctx.Err() != nil {
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

// OnUnavailable retries fn, as OnConnect does, while it fails because the database went away
// (IsUnavailable): the connection broke mid-statement, the server restarted or failed over.
// Such a statement may have been applied before the connection broke, so fn must be safe to
// make twice: a fenced write is (once it has landed, its fence no longer holds and the retry
// is refused), which is what a run's end is.
func OnUnavailable[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	return retryWhile(ctx, fn, IsUnavailable)
}

// IsConnectError reports whether err is a failure to get a database connection at all.
func IsConnectError(err error) bool {
	var ce *pgconn.ConnectError
	return err != nil && errors.As(err, &ce)
}

// IsUnavailable reports whether err, returned by a database statement, means the database
// went away rather than refused the statement: no connection could be had, the connection
// broke (reset, closed, cut off mid-message), the server is shutting down or restarting
// (SQLSTATE 57P01–57P03), a connection exception (class 08), or the server turned read-only
// under the session (25006, a primary demoted by a failover). A run that ends on such an error
// ended for the database's sake, not its own: auto-resume may continue it (cause DATABASE).
// Apply it only to errors of database calls: a network error of a job's own call to an
// outside system is not the database's.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if IsConnectError(err) || pgconn.SafeToRetry(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		c := pgErr.Code
		return strings.HasPrefix(c, "08") || c == "57P01" || c == "57P02" || c == "57P03" || c == "25006"
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		strings.Contains(err.Error(), "conn closed")
}
