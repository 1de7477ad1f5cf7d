package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// reconcileStore holds the reconcile requests (reconcile_requests).
type reconcileStore struct{ *Store }

// Reconcile requests (table reconcile_requests): the API inserts one PENDING, a worker of any
// instance claims it with FOR UPDATE SKIP LOCKED under a lease, and its outcome is written
// fenced on that lease by the database clock at the moment of the write
// (statement_timestamp()), in the same transaction as the ledger entry's resolution.

const reconcileColumns = `id, entry_id, job_name, requested_by, status, result_state, message, attempt, instance,
	lease_until, created_at, started_at, finished_at`

func scanReconcile(row pgx.Row, extra ...any) (*bt.ReconcileRequest, error) {
	var q bt.ReconcileRequest
	var status string
	var result *string
	dest := append([]any{&q.ID, &q.EntryID, &q.JobName, &q.RequestedBy, &status, &result, &q.Message, &q.Attempt,
		&q.Instance, &q.LeaseUntil, &q.CreatedAt, &q.StartedAt, &q.FinishedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	q.Status = bt.ReconcileStatus(status)
	if result != nil {
		st := bt.LedgerState(*result)
		q.ResultState = &st
	}
	return &q, nil
}

// InsertReconcile records a PENDING reconcile request of an AMBIGUOUS_EFFECT entry, and audits
// it (audit.Arguments gains the request's id) in the same transaction. It fails with NOT_FOUND
// for an unknown entry, CONFLICT for an entry not (or no longer) AMBIGUOUS_EFFECT, and
// ALREADY_RUNNING when a reconcile of the entry is already open.
func (s reconcileStore) InsertReconcile(ctx context.Context, entryID int64, requestedBy string, audit store.AuditRecord) (*bt.ReconcileRequest, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("insert reconcile of ledger entry %d: %w", entryID, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	q, err := s.insertReconcileIn(ctx, tx, entryID, requestedBy)
	if err != nil {
		return nil, err
	}
	audit.Arguments = withArg(audit.Arguments, "requestId", q.ID)
	if err := insertAudit(ctx, tx, audit); err != nil {
		return nil, fmt.Errorf("audit reconcile request %d: %w", q.ID, err)
	}
	return q, tx.Commit(ctx)
}

// InsertReconcileMany records a PENDING reconcile request for each of entryIDs that can have
// one, each under its own savepoint of one transaction, and writes the one audit row audit
// makes of the outcome with them.
func (s reconcileStore) InsertReconcileMany(ctx context.Context, entryIDs []int64, requestedBy string, audit store.BulkAuditFunc) ([]*bt.ReconcileRequest, map[int64]error, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("insert reconciles: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	var requested []*bt.ReconcileRequest
	failed := map[int64]error{}
	done, err := eachMember(ctx, tx, entryIDs, failed, func(sp pgx.Tx, id int64) error {
		q, err := s.insertReconcileIn(ctx, sp, id, requestedBy)
		if err == nil {
			requested = append(requested, q)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if err := insertAudit(ctx, tx, audit(done, failed)); err != nil {
		return nil, nil, fmt.Errorf("audit reconciles: %w", err)
	}
	return requested, failed, tx.Commit(ctx)
}

// insertReconcileIn is InsertReconcile's insert, in tx.
func (s reconcileStore) insertReconcileIn(ctx context.Context, tx pgx.Tx, entryID int64, requestedBy string) (*bt.ReconcileRequest, error) {
	// Conditioned on the entry's state in the same statement: a resolution committed since the
	// caller read the entry leaves nothing to reconcile.
	q, err := scanReconcile(tx.QueryRow(ctx, `INSERT INTO reconcile_requests (entry_id, job_name, requested_by)
		SELECT id, job_name, $2 FROM job_ledger WHERE id = $1 AND state = 'AMBIGUOUS_EFFECT'
		RETURNING `+reconcileColumns, entryID, requestedBy))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		e, err := s.LedgerEntry(ctx, entryID)
		if err != nil {
			return nil, err
		}
		return nil, bt.Errorf(bt.CodeConflict, "ledger entry %d is %s, not AMBIGUOUS_EFFECT", entryID, e.State)
	case isUniqueViolation(err):
		open, oerr := s.openReconcile(ctx, entryID)
		if oerr != nil || open == nil {
			return nil, bt.Errorf(bt.CodeAlreadyRunning, "a reconcile of ledger entry %d is already pending", entryID)
		}
		return nil, bt.Errorf(bt.CodeAlreadyRunning, "a reconcile of ledger entry %d is already %s (request %d): wait for its outcome",
			entryID, open.Status, open.ID)
	case err != nil:
		return nil, fmt.Errorf("insert reconcile of ledger entry %d: %w", entryID, err)
	}
	return q, nil
}

func (s reconcileStore) openReconcile(ctx context.Context, entryID int64) (*bt.ReconcileRequest, error) {
	q, err := scanReconcile(s.pool.QueryRow(ctx, `SELECT `+reconcileColumns+` FROM reconcile_requests
		WHERE entry_id = $1 AND status IN ('PENDING', 'RUNNING')`, entryID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return q, err
}

// ReconcileRequest returns one reconcile request, or NOT_FOUND.
func (s reconcileStore) ReconcileRequest(ctx context.Context, id int64) (*bt.ReconcileRequest, error) {
	q, err := scanReconcile(s.pool.QueryRow(ctx, `SELECT `+reconcileColumns+` FROM reconcile_requests WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "reconcile request %d not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read reconcile request %d: %w", id, err)
	}
	return q, nil
}

// PendingReconciles counts the PENDING requests of jobs (by the partial index), so that a
// worker takes a slot only when there is something to claim.
func (s reconcileStore) PendingReconciles(ctx context.Context, jobs []string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM reconcile_requests WHERE status = 'PENDING' AND job_name = ANY($1)`, jobs).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count pending reconciles: %w", err)
	}
	return n, nil
}

// ClaimReconcile takes the oldest PENDING request of one of jobs for instance under a new
// lease (token; lease_until by the database clock). FOR UPDATE SKIP LOCKED makes concurrent
// claimers, on any instance, take different requests: a request is claimed once. It returns
// nil when there is none, else the request and how long its lease has left by the database
// clock.
func (s reconcileStore) ClaimReconcile(ctx context.Context, jobs []store.ReconcileLease, instance, token string) (*bt.ReconcileRequest, time.Duration, error) {
	if len(jobs) == 0 {
		return nil, 0, nil
	}
	names, millis := make([]string, len(jobs)), make([]int64, len(jobs))
	for i, j := range jobs {
		names[i], millis[i] = j.Job, j.Lease.Milliseconds()
	}
	var remaining float64
	q, err := scanReconcile(s.pool.QueryRow(ctx, `
		WITH c AS (
			SELECT r.id AS claim_id, l.ms AS claim_ms FROM reconcile_requests r
			JOIN unnest($1::text[], $2::bigint[]) AS l(job, ms) ON l.job = r.job_name
			WHERE r.status = 'PENDING'
			ORDER BY r.id LIMIT 1
			FOR UPDATE OF r SKIP LOCKED
		)
		UPDATE reconcile_requests r SET status = 'RUNNING', attempt = r.attempt + 1, instance = $3, lease_token = $4,
			lease_until = statement_timestamp() + c.claim_ms * interval '1 millisecond', started_at = statement_timestamp()
		FROM c WHERE r.id = c.claim_id
		RETURNING `+reconcileColumns+`, EXTRACT(EPOCH FROM r.lease_until - statement_timestamp())::float8`,
		names, millis, instance, token), &remaining)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("claim a reconcile request: %w", err)
	}
	return q, time.Duration(remaining * float64(time.Second)), nil
}

// FinishReconcile ends a claimed request as out says, fenced: only while the request is
// RUNNING under fence's token and its lease_until is after statement_timestamp() (the moment
// of this write, not of the transaction's start). A stale holder gets LEASE_LOST and changes
// nothing. The entry is resolved in the same transaction, only while it is still
// AMBIGUOUS_EFFECT; if it is not any more (resolved by hand meanwhile), the request ends
// FAILED instead and the entry is untouched. audit (Outcome set here) is written with it.
func (s reconcileStore) FinishReconcile(ctx context.Context, fence store.ReconcileFence, out store.ReconcileOutcome, audit store.AuditRecord) (*bt.ReconcileRequest, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("finish reconcile request %d: %w", fence.ID, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	status, result, msg := bt.ReconcileFailed, (*string)(nil), out.Message
	if out.Resolve != "" {
		st := string(out.Resolve)
		status, result = bt.ReconcileDone, &st
	}
	// The fence first: it locks the request's row, so a recoverer that judges the lease
	// expired an instant later waits for this transaction and then finds the request ended.
	q, err := scanReconcile(tx.QueryRow(ctx, `UPDATE reconcile_requests
		SET status = $3, result_state = $4, message = $5, finished_at = statement_timestamp(), lease_until = NULL
		WHERE id = $1 AND lease_token = $2 AND status = 'RUNNING' AND lease_until > statement_timestamp()
		RETURNING `+reconcileColumns, fence.ID, fence.Token, string(status), result, msg))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeLeaseLost, "reconcile request %d: lease lost: the request was fenced off", fence.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("finish reconcile request %d: %w", fence.ID, err)
	}
	if entryID := q.EntryID; out.Resolve != "" {
		_, err := s.resolveAmbiguousIn(ctx, tx, entryID, out.Resolve, out.EffectRef, out.EvidenceRef, out.Note)
		if bt.CodeOf(err) == bt.CodeConflict {
			var berr *bt.Error
			errors.As(err, &berr)
			q, err = scanReconcile(tx.QueryRow(ctx, `UPDATE reconcile_requests SET status = 'FAILED', result_state = NULL, message = $2
				WHERE id = $1 RETURNING `+reconcileColumns, fence.ID, berr.Message+" any more: it was resolved meanwhile; nothing was changed"))
		}
		if err != nil {
			return nil, fmt.Errorf("resolve ledger entry %d of reconcile request %d: %w", entryID, fence.ID, err)
		}
	}
	audit.Outcome = string(q.Status)
	if q.Status == bt.ReconcileDone {
		audit.Outcome = string(*q.ResultState)
	}
	audit.Arguments = withArg(audit.Arguments, "requestId", q.ID)
	audit.Arguments["message"] = q.Message
	if err := insertAudit(ctx, tx, audit); err != nil {
		return nil, fmt.Errorf("audit reconcile request %d: %w", fence.ID, err)
	}
	return q, tx.Commit(ctx)
}

// RecoverReconciles ends the leases that expired (their holder died or stalled) of RUNNING
// requests: each goes back to PENDING for another claim, or, after maxAttempts claims, to
// FAILED with an audit row. Judged by statement_timestamp(). It returns the requests changed.
func (s reconcileStore) RecoverReconciles(ctx context.Context, maxAttempts int) ([]*bt.ReconcileRequest, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("recover reconcile requests: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	rows, err := tx.Query(ctx, `UPDATE reconcile_requests SET
			status = CASE WHEN attempt >= $1 THEN 'FAILED' ELSE 'PENDING' END,
			message = CASE WHEN attempt >= $1
				THEN format('the worker holding it (%s) stopped answering before the lease ended, %s times: the entry stays AMBIGUOUS_EFFECT', instance, attempt)
				ELSE format('the worker holding it (%s) stopped answering before the lease ended: waiting for another worker', instance) END,
			finished_at = CASE WHEN attempt >= $1 THEN statement_timestamp() END,
			lease_token = NULL, lease_until = NULL
		WHERE status = 'RUNNING' AND lease_until <= statement_timestamp()
		RETURNING `+reconcileColumns, maxAttempts)
	out, err := collect(rows, err, "recover reconcile requests", func(row pgx.Row) (*bt.ReconcileRequest, error) { return scanReconcile(row) })
	if err != nil {
		return nil, err
	}
	for _, q := range out {
		if q.Status != bt.ReconcileFailed {
			continue
		}
		args := map[string]any{"requestId": q.ID, "message": q.Message, "job": q.JobName}
		var target, step string
		var generation int64
		if err := tx.QueryRow(ctx, `SELECT target_key, step, generation FROM job_ledger WHERE id = $1`, q.EntryID).Scan(&target, &step, &generation); err == nil {
			args["targetKey"], args["step"], args["generation"] = target, step, generation
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("audit reconcile request %d: read its entry: %w", q.ID, err)
		}
		if err := insertAudit(ctx, tx, store.AuditRecord{Actor: q.RequestedBy, Action: "reconcile", Target: fmt.Sprintf("ledger:%d", q.EntryID),
			Arguments: args, Outcome: string(bt.ReconcileFailed)}); err != nil {
			return nil, fmt.Errorf("audit reconcile request %d: %w", q.ID, err)
		}
	}
	return out, tx.Commit(ctx)
}

func withArg(args map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(args)+1)
	for k, v := range args {
		out[k] = v
	}
	out[k] = v
	return out
}
