package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	bt "github.com/baton-run/baton/runner/batontype"
)

const ledgerColumns = `id, job_name, generation, target_key, step, state, attempt, idempotency_key, input_hash, input_changed,
	external, effect_ref, evidence_ref, last_error, same_error_count, run_id, created_at, updated_at`

func scanLedger(row pgx.Row) (*bt.LedgerEntry, error) {
	var e bt.LedgerEntry
	var state string
	err := row.Scan(&e.ID, &e.JobName, &e.Generation, &e.Target, &e.Step, &state, &e.Attempt, &e.IdempotencyKey,
		&e.InputHash, &e.InputChanged, &e.External, &e.EffectRef, &e.EvidenceRef, &e.LastError, &e.SameErrorCount,
		&e.RunID, &e.CreatedAt, &e.UpdatedAt)
	e.State = bt.LedgerState(state)
	return &e, err
}

// LedgerQuery selects ledger entries by keyset on id, ascending.
type LedgerQuery struct {
	JobName      string
	States       []bt.LedgerState
	RunID        int64
	Generation   int64
	TargetPrefix string
	AfterID      int64
	Limit        int
}

// Ledger lists ledger entries matching q. Each combination of filters is its own statement
// (see listQuery), so that each keeps a plan on the index its filters need.
func (s *Store) Ledger(ctx context.Context, q LedgerQuery) ([]*bt.LedgerEntry, error) {
	if q.Limit <= 0 {
		q.Limit = 20
	}
	var lq listQuery
	if q.JobName != "" {
		lq.where("job_name = %s", q.JobName)
	}
	lq.oneOf("state", strs(q.States))
	if q.RunID != 0 {
		lq.where("run_id = %s", q.RunID)
	}
	if q.Generation != 0 {
		lq.where("generation = %s", q.Generation)
	}
	if q.TargetPrefix != "" {
		lq.where("target_key LIKE %s", likePrefix(q.TargetPrefix))
	}
	if q.AfterID > 0 {
		lq.where("id > %s", q.AfterID)
	}
	rows, err := lq.rows(ctx, s.pool, `SELECT `+ledgerColumns+` FROM job_ledger`, "id", q.Limit)
	if err != nil {
		return nil, fmt.Errorf("list ledger entries: %w", err)
	}
	defer rows.Close()
	var out []*bt.LedgerEntry
	for rows.Next() {
		e, err := scanLedger(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// LedgerEntry returns one entry, or NOT_FOUND.
func (s *Store) LedgerEntry(ctx context.Context, id int64) (*bt.LedgerEntry, error) {
	e, err := scanLedger(s.pool.QueryRow(ctx, `SELECT `+ledgerColumns+` FROM job_ledger WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "ledger entry %d not found", id)
	}
	return e, err
}

// ResolveAmbiguous moves an AMBIGUOUS_EFFECT entry to CONFIRMED or NOT_APPLIED by
// compare-and-set on its state, keeping the generation's counters in step, and audits it in
// the same transaction.
func (s *Store) ResolveAmbiguous(ctx context.Context, id int64, to bt.LedgerState, effectRef, evidenceRef *string, note string, audit AuditRecord) (*bt.LedgerEntry, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	e, err := s.resolveAmbiguousIn(ctx, tx, id, to, effectRef, evidenceRef, note)
	if err != nil {
		return nil, err
	}
	if err := insertAudit(ctx, tx, audit); err != nil {
		return nil, err
	}
	return e, tx.Commit(ctx)
}

// resolveAmbiguousIn is ResolveAmbiguous's ledger write, in tx: CONFLICT when the entry is no
// longer AMBIGUOUS_EFFECT.
func (s *Store) resolveAmbiguousIn(ctx context.Context, tx pgx.Tx, id int64, to bt.LedgerState, effectRef, evidenceRef *string, note string) (*bt.LedgerEntry, error) {
	e, err := scanLedger(tx.QueryRow(ctx, `UPDATE job_ledger SET state = $2, evidence_ref = COALESCE($3, evidence_ref),
			last_error = $4, effect_ref = COALESCE($5, effect_ref), updated_at = now()
		WHERE id = $1 AND state = 'AMBIGUOUS_EFFECT' RETURNING `+ledgerColumns, id, string(to), evidenceRef, note, effectRef))
	if errors.Is(err, pgx.ErrNoRows) {
		cur, err := s.LedgerEntry(ctx, id)
		if err != nil {
			return nil, err
		}
		return nil, bt.Errorf(bt.CodeConflict, "ledger entry %d is %s, not AMBIGUOUS_EFFECT", id, cur.State)
	}
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n)
		VALUES ($1, $2, 0, 'AMBIGUOUS_EFFECT', -1), ($1, $2, 0, $3, 1)
		ON CONFLICT (job_name, generation, run_id, state) DO UPDATE SET n = job_ledger_counts.n + EXCLUDED.n`,
		e.JobName, e.Generation, string(to)); err != nil {
		return nil, err
	}
	return e, nil
}

// CheckpointAge reports how long ago a generation's main checkpoint last moved (nil if none).
func (s *Store) CheckpointAge(ctx context.Context, job string, gen int64) (*time.Duration, error) {
	var secs *float64
	err := s.pool.QueryRow(ctx, `SELECT EXTRACT(EPOCH FROM now() - updated_at)::float8 FROM job_checkpoints
		WHERE job_name = $1 AND generation = $2 AND shard = ''`, job, gen).Scan(&secs)
	if errors.Is(err, pgx.ErrNoRows) || secs == nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := time.Duration(*secs * float64(time.Second))
	return &d, nil
}

// AuditRecord is an audit row to insert.
type AuditRecord struct {
	Actor, Action, Target string
	Arguments             map[string]any
	Outcome               string
}

func insertAudit(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, a AuditRecord) error {
	args := a.Arguments
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("encode audit arguments: %w", err)
	}
	_, err = q.Exec(ctx, `INSERT INTO audit_log (actor, action, target, arguments, outcome) VALUES ($1, $2, $3, $4, $5)`,
		a.Actor, a.Action, a.Target, b, a.Outcome)
	return err
}

// Audit inserts one audit row.
func (s *Store) Audit(ctx context.Context, a AuditRecord) error { return insertAudit(ctx, s.pool, a) }

// AuditLog lists audit rows, newest first, before beforeID (0: from the newest).
func (s *Store) AuditLog(ctx context.Context, beforeID int64, limit int) ([]bt.AuditEntry, error) {
	var q listQuery
	if beforeID != 0 {
		q.where("id < %s", beforeID)
	}
	rows, err := q.rows(ctx, s.pool, `SELECT id, actor, action, target, arguments, outcome, created_at FROM audit_log`,
		"id DESC", limit)
	if err != nil {
		return nil, fmt.Errorf("list audit log: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (bt.AuditEntry, error) {
		var e bt.AuditEntry
		err := r.Scan(&e.ID, &e.Actor, &e.Action, &e.Target, &e.Arguments, &e.Outcome, &e.CreatedAt)
		return e, err
	})
}
