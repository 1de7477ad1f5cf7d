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

// Store runs Baton's queries on a pgx pool: one part per concern, each in the file named for
// it, and each part reaching the others through the Store.
type Store struct {
	pool *pgxpool.Pool
	// redone counts item writes refused for stale knowledge and made again as upserts.
	redone atomic.Int64

	jobStore
	scheduleStore
	runStore
	autoResumeStore
	leaseStore
	itemStore
	ledgerStore
	replayStore
	reconcileStore
	retentionStore
	auditStore
	alertStore
	callStatStore
	historyStore
	clusterStore
	downstreamStore
	shardStore
	notifyStore
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store {
	s := &Store{pool: pool}
	s.jobStore, s.scheduleStore, s.runStore, s.leaseStore = jobStore{s}, scheduleStore{s}, runStore{s}, leaseStore{s}
	s.autoResumeStore = autoResumeStore{s}
	s.itemStore, s.ledgerStore, s.replayStore, s.reconcileStore = itemStore{s}, ledgerStore{s}, replayStore{s}, reconcileStore{s}
	s.retentionStore, s.auditStore, s.callStatStore, s.clusterStore = retentionStore{s}, auditStore{s}, callStatStore{s}, clusterStore{s}
	s.historyStore, s.alertStore, s.downstreamStore, s.shardStore = historyStore{s}, alertStore{s}, downstreamStore{s}, shardStore{s}
	s.notifyStore = notifyStore{s}
	return s
}

// Pool returns the underlying pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

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

// Each part implements its concern of the store.
var (
	_ store.Store         = (*Store)(nil)
	_ store.Jobs          = jobStore{}
	_ store.Schedules     = scheduleStore{}
	_ store.Runs          = runStore{}
	_ store.Leases        = leaseStore{}
	_ store.Items         = itemStore{}
	_ store.Ledger        = ledgerStore{}
	_ store.Replays       = replayStore{}
	_ store.Reconciles    = reconcileStore{}
	_ store.Retention     = retentionStore{}
	_ store.Audit         = auditStore{}
	_ store.CallStats     = callStatStore{}
	_ store.History       = historyStore{}
	_ store.Cluster       = clusterStore{}
	_ store.Downstreams   = downstreamStore{}
	_ store.Notifications = notifyStore{}
)
