package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// replayStore holds the replay and restart requests (replay_requests).
type replayStore struct{ *Store }

const replayColumns = `id, job_name, source_run_id, generation, scope, status, preflight, reason, compensation_ref,
	requested_by, decided_by, decision_note, replay_run_id, created_at, decided_at, executed_at,
	kind, requested_by_token_id, decided_by_token_id, target_keys, schedule_change`

func scanReplay(row pgx.Row) (*bt.ReplayRequest, error) {
	var r bt.ReplayRequest
	var scope, status, kind string
	var pf, change []byte
	err := row.Scan(&r.ID, &r.JobName, &r.SourceRunID, &r.Generation, &scope, &status, &pf, &r.Reason, &r.CompensationRef,
		&r.RequestedBy, &r.DecidedBy, &r.DecisionNote, &r.ReplayRunID, &r.CreatedAt, &r.DecidedAt, &r.ExecutedAt,
		&kind, &r.RequestedByTokenID, &r.DecidedByTokenID, &r.TargetKeys, &change)
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
// no longer in d.From.
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
			decided_by = COALESCE($4, decided_by), decision_note = COALESCE($5, decision_note),
			decided_at = CASE WHEN $4::text IS NOT NULL THEN now() ELSE decided_at END,
			decided_by_token_id = CASE WHEN $4::text IS NOT NULL THEN $8::bigint ELSE decided_by_token_id END,
			preflight = COALESCE($6, preflight),
			replay_run_id = COALESCE($7, replay_run_id),
			executed_at = CASE WHEN $3 = 'EXECUTED' THEN now() ELSE executed_at END
		WHERE id = $1 AND status = $2 RETURNING `+replayColumns,
		id, string(d.From), string(d.To), d.DecidedBy, d.Note, pf, d.RunID, d.DecidedByTokenID))
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
