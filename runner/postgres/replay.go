package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// replayStore holds the replay and restart requests (replay_requests).
type replayStore struct{ *Store }

const replayColumns = `id, job_name, source_run_id, generation, scope, status, preflight, reason, compensation_ref,
	requested_by, decided_by, decision_note, replay_run_id, created_at, decided_at, executed_at,
	kind, requested_by_token_id, decided_by_token_id, target_keys, claim_until, reopen_reason, schedule_change`

func scanReplay(row pgx.Row) (*bt.ReplayRequest, error) {
	var r bt.ReplayRequest
	var scope, status, kind string
	var pf, change []byte
	err := row.Scan(&r.ID, &r.JobName, &r.SourceRunID, &r.Generation, &scope, &status, &pf, &r.Reason, &r.CompensationRef,
		&r.RequestedBy, &r.DecidedBy, &r.DecisionNote, &r.ReplayRunID, &r.CreatedAt, &r.DecidedAt, &r.ExecutedAt,
		&kind, &r.RequestedByTokenID, &r.DecidedByTokenID, &r.TargetKeys, &r.ClaimedUntil, &r.ReopenReason, &change)
	if err != nil {
		return nil, err
	}
	if change != nil {
		r.ScheduleChange = &bt.ScheduleChange{}
		if err := json.Unmarshal(change, r.ScheduleChange); err != nil {
			return nil, err
		}
	}
	r.Scope, r.Status, r.Kind = bt.ReplayScope(scope), bt.ReplayStatus(status), bt.ReplayKind(kind)
	if err := json.Unmarshal(pf, &r.Preflight); err != nil {
		return nil, err
	}
	if r.Preflight.Kind == "" { // recorded before preflights had a kind
		r.Preflight.Kind = r.Kind
	}
	return &r, nil
}

// InsertReplay records a replay request and its audit row in one transaction. An empty Kind
// is stored as REPLAY.
func (s replayStore) InsertReplay(ctx context.Context, r *bt.ReplayRequest, audit store.AuditRecord) (*bt.ReplayRequest, error) {
	kind := r.Kind
	if kind == "" {
		kind = bt.KindReplay
	}
	pf, err := json.Marshal(r.Preflight)
	if err != nil {
		return nil, err
	}
	var change []byte
	if r.ScheduleChange != nil {
		if change, err = json.Marshal(r.ScheduleChange); err != nil {
			return nil, err
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	out, err := scanReplay(tx.QueryRow(ctx, `INSERT INTO replay_requests (job_name, source_run_id, generation, scope, status,
			preflight, reason, compensation_ref, requested_by, kind, requested_by_token_id, target_keys, schedule_change)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING `+replayColumns,
		r.JobName, r.SourceRunID, r.Generation, string(r.Scope), string(r.Status), pf, r.Reason, r.CompensationRef, r.RequestedBy,
		string(kind), r.RequestedByTokenID, r.TargetKeys, change))
	if err != nil {
		return nil, err
	}
	audit.Target = replayTarget(out.ID)
	if err := insertAudit(ctx, tx, audit); err != nil {
		return nil, err
	}
	return out, tx.Commit(ctx)
}

func replayTarget(id int64) string { return "replay:" + itoa(id) }

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// DecideReplay applies d to request id and audits it, or returns CONFLICT when the request is
// no longer in d.From. A move to another status ends any claim on the request; a move back to
// PENDING_APPROVAL (d.Reopen) also drops the decision it had.
func (s replayStore) DecideReplay(ctx context.Context, id int64, d store.ReplayDecision, audit store.AuditRecord) (*bt.ReplayRequest, error) {
	var pf []byte
	if d.Preflight != nil {
		var err error
		if pf, err = json.Marshal(d.Preflight); err != nil {
			return nil, err
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	out, err := scanReplay(tx.QueryRow(ctx, `UPDATE replay_requests SET status = $3,
			decided_by = CASE WHEN $9::text IS NOT NULL THEN NULL ELSE COALESCE($4, decided_by) END,
			decision_note = CASE WHEN $9::text IS NOT NULL THEN NULL ELSE COALESCE($5, decision_note) END,
			decided_at = CASE WHEN $9::text IS NOT NULL THEN NULL WHEN $4::text IS NOT NULL THEN now() ELSE decided_at END,
			decided_by_token_id = CASE WHEN $9::text IS NOT NULL THEN NULL WHEN $4::text IS NOT NULL THEN $8::bigint ELSE decided_by_token_id END,
			reopen_reason = COALESCE($9, reopen_reason),
			preflight = COALESCE($6, preflight),
			replay_run_id = COALESCE($7, replay_run_id),
			executed_at = CASE WHEN $3 = 'EXECUTED' THEN now() ELSE executed_at END,
			claim_token = CASE WHEN $3 = $2 THEN claim_token END,
			claim_until = CASE WHEN $3 = $2 THEN claim_until END
		WHERE id = $1 AND status = $2 RETURNING `+replayColumns,
		id, string(d.From), string(d.To), d.DecidedBy, d.Note, pf, d.RunID, d.DecidedByTokenID, d.Reopen))
	if errors.Is(err, pgx.ErrNoRows) {
		cur, err := s.ReplayRequest(ctx, id)
		if err != nil {
			return nil, err
		}
		return nil, bt.Errorf(bt.CodeConflict, "replay request %d is %s, not %s", id, cur.Status, d.From)
	}
	if err != nil {
		return nil, err
	}
	audit.Target = replayTarget(id)
	if err := insertAudit(ctx, tx, audit); err != nil {
		return nil, err
	}
	return out, tx.Commit(ctx)
}

// ClaimReplay claims APPROVED request id for token until lapse from now, by the database
// clock: CONFLICT when the request is not APPROVED, or another claim on it has not lapsed.
func (s replayStore) ClaimReplay(ctx context.Context, id int64, token string, lapse time.Duration) (*bt.ReplayRequest, error) {
	out, err := scanReplay(s.pool.QueryRow(ctx, `UPDATE replay_requests
		SET claim_token = $2, claim_until = statement_timestamp() + make_interval(secs => $3::double precision)
		WHERE id = $1 AND status = 'APPROVED' AND (claim_until IS NULL OR claim_until <= statement_timestamp())
		RETURNING `+replayColumns, id, token, lapse.Seconds()))
	if !errors.Is(err, pgx.ErrNoRows) {
		return out, err
	}
	cur, err := s.ReplayRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	if cur.Status != bt.ReplayApproved {
		return nil, bt.Errorf(bt.CodeConflict, "replay request %d is %s, not APPROVED", id, cur.Status)
	}
	until := "now"
	if cur.ClaimedUntil != nil {
		until = cur.ClaimedUntil.UTC().Format(time.RFC3339)
	}
	return nil, bt.Errorf(bt.CodeConflict, "replay request %d is being executed by another call (its claim holds until %s)", id, until)
}

// ReleaseReplayClaim gives up token's claim on request id; a claim already lost is left alone.
func (s replayStore) ReleaseReplayClaim(ctx context.Context, id int64, token string) error {
	_, err := s.pool.Exec(ctx, `UPDATE replay_requests SET claim_token = NULL, claim_until = NULL
		WHERE id = $1 AND claim_token = $2`, id, token)
	return err
}

// executeClaimed marks request id EXECUTED by run runID, in tx (the run's insert), if token
// still holds its claim; otherwise store.ErrClaimLost.
func executeClaimed(ctx context.Context, tx pgx.Tx, id, runID int64, token string) error {
	tag, err := tx.Exec(ctx, `UPDATE replay_requests SET status = 'EXECUTED', replay_run_id = $2, executed_at = now(),
			claim_token = NULL, claim_until = NULL
		WHERE id = $1 AND status = 'APPROVED' AND claim_token = $3`, id, runID, token)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("request %d: %w", id, store.ErrClaimLost)
	}
	return nil
}

// ReplayRequest returns one request, or NOT_FOUND.
func (s replayStore) ReplayRequest(ctx context.Context, id int64) (*bt.ReplayRequest, error) {
	r, err := scanReplay(s.pool.QueryRow(ctx, `SELECT `+replayColumns+` FROM replay_requests WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "replay request %d not found", id)
	}
	return r, err
}

// ReplayRequests lists requests, newest first, before beforeID (0: from the newest).
func (s replayStore) ReplayRequests(ctx context.Context, statuses []bt.ReplayStatus, beforeID int64, limit int) ([]*bt.ReplayRequest, error) {
	var q listQuery
	q.oneOf("status", strs(statuses))
	if beforeID != 0 {
		q.where("id < %s", beforeID)
	}
	rows, err := q.rows(ctx, s.pool, `SELECT `+replayColumns+` FROM replay_requests`, "id DESC", limit)
	return collect(rows, err, "list replay requests", scanReplay)
}
