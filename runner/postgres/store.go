// Package postgres implements the runner's store (runner/store) on PostgreSQL via pgx, and is
// the only home of Baton's SQL: job settings, runs, fenced item writes, checkpoints, the
// ledger and the scheduler's compare-and-set claims. Its files are named for the tables or
// the concern they hold.
//
// Every write a worker makes for a run is fenced: it is conditioned, in the same statement, on
// the run id, the run's lease token, status RUNNING and lease_until > statement_timestamp() by
// the database clock (clock_timestamp() where the fence ends a transaction opened earlier). A
// worker that lost its lease can change nothing.
package postgres

import (
	"errors"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/runner/store"
)

// Store runs Baton's queries on a pgx pool.
type Store struct {
	pool *pgxpool.Pool
	// redone counts item writes refused for stale knowledge and made again as upserts.
	redone atomic.Int64
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool returns the underlying pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// RedoneWrites returns how many item writes relied on a ledger state that was not so (a row
// taken for new that existed, a row not in the state known) and were made again as upserts.
// Outside tests that inject it, anything but 0 points at a bug in what the runner tracks.
func (s *Store) RedoneWrites() int64 { return s.redone.Load() }

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

func violatedConstraint(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}

// isDeadlock reports whether PostgreSQL aborted the statement to break a deadlock or a
// serialization conflict.
func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

var _ store.Store = (*Store)(nil)
