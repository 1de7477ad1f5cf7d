package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
)

const replayColumns = `id, job_name, source_run_id, generation, scope, status, preflight, reason, compensation_ref,
	requested_by, decided_by, decision_note, replay_run_id, created_at, decided_at, executed_at,
	kind, requested_by_token_id, decided_by_token_id`

func scanReplay(row pgx.Row) (*bt.ReplayRequest, error) {
	var r bt.ReplayRequest
	var scope, status, kind string
	var pf []byte
	err := row.Scan(&r.ID, &r.JobName, &r.SourceRunID, &r.Generation, &scope, &status, &pf, &r.Reason, &r.CompensationRef,
		&r.RequestedBy, &r.DecidedBy, &r.DecisionNote, &r.ReplayRunID, &r.CreatedAt, &r.DecidedAt, &r.ExecutedAt,
		&kind, &r.RequestedByTokenID, &r.DecidedByTokenID)
	if err != nil {
		return nil, err
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
func (s *Store) InsertReplay(ctx context.Context, r *bt.ReplayRequest, audit AuditRecord) (*bt.ReplayRequest, error) {
	kind := r.Kind
	if kind == "" {
		kind = bt.KindReplay
	}
	pf, err := json.Marshal(r.Preflight)
	if err != nil {
		return nil, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	out, err := scanReplay(tx.QueryRow(ctx, `INSERT INTO replay_requests (job_name, source_run_id, generation, scope, status,
			preflight, reason, compensation_ref, requested_by, kind, requested_by_token_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING `+replayColumns,
		r.JobName, r.SourceRunID, r.Generation, string(r.Scope), string(r.Status), pf, r.Reason, r.CompensationRef, r.RequestedBy,
		string(kind), r.RequestedByTokenID))
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

// ReplayDecision moves a request from one status to another by compare-and-set.
type ReplayDecision struct {
	From, To  bt.ReplayStatus
	DecidedBy *string
	// DecidedByTokenID is the decider's token id; nil for a decision by code, or to keep it.
	DecidedByTokenID *int64
	Note             *string
	Preflight        *bt.Preflight // a fresh preflight to store, if any
	RunID            *int64
}

// DecideReplay applies d to request id and audits it, or returns CONFLICT when the request is
// no longer in d.From.
func (s *Store) DecideReplay(ctx context.Context, id int64, d ReplayDecision, audit AuditRecord) (*bt.ReplayRequest, error) {
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
func (s *Store) ReplayRequest(ctx context.Context, id int64) (*bt.ReplayRequest, error) {
	r, err := scanReplay(s.pool.QueryRow(ctx, `SELECT `+replayColumns+` FROM replay_requests WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "replay request %d not found", id)
	}
	return r, err
}

// ReplayRequests lists requests, newest first, before beforeID (0: from the newest).
func (s *Store) ReplayRequests(ctx context.Context, statuses []bt.ReplayStatus, beforeID int64, limit int) ([]*bt.ReplayRequest, error) {
	var q listQuery
	q.oneOf("status", strs(statuses))
	if beforeID != 0 {
		q.where("id < %s", beforeID)
	}
	rows, err := q.rows(ctx, s.pool, `SELECT `+replayColumns+` FROM replay_requests`, "id DESC", limit)
	if err != nil {
		return nil, fmt.Errorf("list replay requests: %w", err)
	}
	defer rows.Close()
	var out []*bt.ReplayRequest
	for rows.Next() {
		r, err := scanReplay(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// AlertRows are the raw facts the alarms are computed from, read in one round trip each.
type AlertRows struct {
	Now        time.Time
	Active     []*bt.RunRecord
	Retried    map[string]int64    // job → targets attempted 3+ times without success
	Ambiguous  map[string]int64    // job → targets in AMBIGUOUS_EFFECT across generations
	Downstream map[string][3]int64 // job → calls, downstream errors, rejects over 5 minutes
}

// AlertFacts reads what the alarms need.
func (s *Store) AlertFacts(ctx context.Context) (*AlertRows, error) {
	out := &AlertRows{Retried: map[string]int64{}, Ambiguous: map[string]int64{}, Downstream: map[string][3]int64{}}
	if err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&out.Now); err != nil {
		return nil, err
	}
	active, err := s.Runs(ctx, RunFilter{Statuses: []bt.RunStatus{bt.StatusStarting, bt.StatusRunning}, Limit: 1000})
	if err != nil {
		return nil, err
	}
	out.Active = active
	rows, err := s.pool.Query(ctx, `SELECT job_name, count(*) FROM job_ledger
		WHERE attempt >= 3 AND state NOT IN ('CONFIRMED', 'NOT_APPLIED', 'SKIPPED') GROUP BY job_name`)
	if err != nil {
		return nil, err
	}
	if err := collectCounts(rows, out.Retried); err != nil {
		return nil, err
	}
	rows, err = s.pool.Query(ctx, `SELECT job_name, sum(n)::bigint FROM job_ledger_counts
		WHERE run_id = 0 AND state = 'AMBIGUOUS_EFFECT' GROUP BY job_name HAVING sum(n) > 0`)
	if err != nil {
		return nil, err
	}
	if err := collectCounts(rows, out.Ambiguous); err != nil {
		return nil, err
	}
	rows, err = s.pool.Query(ctx, `SELECT job_name, sum(calls)::bigint, sum(downstream_errors)::bigint, sum(rejects)::bigint
		FROM job_call_stats WHERE minute > now() - interval '6 minutes' GROUP BY job_name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var job string
		var v [3]int64
		if err := rows.Scan(&job, &v[0], &v[1], &v[2]); err != nil {
			return nil, err
		}
		out.Downstream[job] = v
	}
	return out, rows.Err()
}

func collectCounts(rows pgx.Rows, into map[string]int64) error {
	defer rows.Close()
	for rows.Next() {
		var job string
		var n int64
		if err := rows.Scan(&job, &n); err != nil {
			return err
		}
		into[job] = n
	}
	return rows.Err()
}

// GenerationRun returns the newest run of a job's generation, or nil when it has none: the
// run a RESTART request names as its source.
func (s *Store) GenerationRun(ctx context.Context, job string, gen int64) (*bt.RunRecord, error) {
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM job_runs
		WHERE job_name = $1 AND generation = $2 ORDER BY id DESC LIMIT 1`, job, gen))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the newest run of %s generation %d: %w", job, gen, err)
	}
	return run, nil
}
