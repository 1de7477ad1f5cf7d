package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
)

// ItemWrite is one fenced item write: the ledger row of a target's step, the run's counters,
// the checkpoint and an error row, committed together or not at all.
type ItemWrite struct {
	JobName    string
	Generation int64

	// Ledger row; State "" writes none.
	Target         string
	Step           string
	State          bt.LedgerState
	Attempt        int
	IdempotencyKey string
	InputHash      string
	InputChanged   bool
	External       bool
	EffectRef      *string
	EvidenceRef    *string
	LastError      *string
	ErrorSig       *string
	SameErrorCount int
	// CountInRun adds the new state to the run's own per-state counts (final results only,
	// not intents).
	CountInRun bool

	// Run counter deltas.
	Processed, Succeeded, Failed, Skipped, Ambiguous int

	// Checkpoint, when non-nil, advances the shard's checkpoint.
	Checkpoint *string
	Shard      string

	// ErrorClass, when non-empty, adds a job_run_errors row.
	ErrorClass   string
	ErrorMessage string
}

const itemSQL = `
WITH fence AS (
	UPDATE job_runs SET
		processed = processed + $3, succeeded = succeeded + $4, failed = failed + $5,
		skipped = skipped + $6, ambiguous = ambiguous + $7,
		checkpoint = CASE WHEN $8::text IS NOT NULL AND $9 = '' THEN $8 ELSE checkpoint END,
		heartbeat_at = now(),
		last_progress_at = CASE WHEN $3 > 0 THEN now() ELSE last_progress_at END
	WHERE id = $1 AND lease_token = $2 AND status = 'RUNNING' AND lease_until > now()
	RETURNING ` + leaseReturning + `
), prev AS (
	SELECT state FROM job_ledger
	WHERE job_name = $10 AND generation = $11 AND target_key = $12 AND step = $13 AND $14::text <> ''
), led AS (
	INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, input_hash,
		input_changed, external, effect_ref, evidence_ref, last_error, last_error_sig, same_error_count, run_id)
	SELECT $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $1 FROM fence WHERE $14::text <> ''
	ON CONFLICT (job_name, generation, target_key, step) DO UPDATE SET
		state = EXCLUDED.state, attempt = EXCLUDED.attempt, input_hash = EXCLUDED.input_hash,
		input_changed = EXCLUDED.input_changed, external = EXCLUDED.external,
		effect_ref = COALESCE(EXCLUDED.effect_ref, job_ledger.effect_ref),
		evidence_ref = COALESCE(EXCLUDED.evidence_ref, job_ledger.evidence_ref),
		last_error = EXCLUDED.last_error, last_error_sig = EXCLUDED.last_error_sig,
		same_error_count = EXCLUDED.same_error_count, run_id = EXCLUDED.run_id, updated_at = now()
	RETURNING state
), cnt AS (
	INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n)
	SELECT $10, $11, r, s, sum(d) FROM (
		SELECT 0::bigint AS r, state AS s, 1 AS d FROM led
		UNION ALL SELECT 0, state, -1 FROM prev WHERE EXISTS (SELECT 1 FROM led)
		UNION ALL SELECT $1, state, 1 FROM led WHERE $25
	) x GROUP BY r, s HAVING sum(d) <> 0
	ON CONFLICT (job_name, generation, run_id, state) DO UPDATE SET n = job_ledger_counts.n + EXCLUDED.n
), cp AS (
	INSERT INTO job_checkpoints (job_name, generation, shard, token, processed, run_id)
	SELECT $10, $11, $9, $8, fence.processed, $1 FROM fence WHERE $8::text IS NOT NULL
	ON CONFLICT (job_name, generation, shard) DO UPDATE SET
		token = EXCLUDED.token, processed = EXCLUDED.processed, run_id = EXCLUDED.run_id, updated_at = now()
), er AS (
	INSERT INTO job_run_errors (run_id, item_key, failure_class, message, attempt)
	SELECT $1, $12, $26, $27, $15 FROM fence WHERE $26::text <> ''
)
SELECT * FROM fence`

func (w *ItemWrite) args(f Fence) []any {
	return []any{f.RunID, f.Token, w.Processed, w.Succeeded, w.Failed, w.Skipped, w.Ambiguous, w.Checkpoint, w.Shard,
		w.JobName, w.Generation, w.Target, w.Step, string(w.State), w.Attempt, w.IdempotencyKey, w.InputHash,
		w.InputChanged, w.External, w.EffectRef, w.EvidenceRef, w.LastError, w.ErrorSig, w.SameErrorCount,
		w.CountInRun, w.ErrorClass, w.ErrorMessage}
}

// TxFunc is a job's own database work for an item, done inside the item's transaction.
type TxFunc func(ctx context.Context, tx pgx.Tx) error

// WriteItem commits one fenced item write. With job writes it opens a transaction, makes the
// fenced write first (so nothing of the job's lands unless the lease holds — the row lock it
// takes also keeps the recoverer out until commit), then the job's writes, then commits.
// Without, it is one autocommit statement: one round trip, one commit.
func (s *Store) WriteItem(ctx context.Context, f Fence, w *ItemWrite, jobWrites []TxFunc) (LeaseState, bt.StopReason, error) {
	if len(jobWrites) == 0 {
		return leaseResult(s.pool.QueryRow(ctx, itemSQL, w.args(f)...), "item write", f)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return LeaseState{}, "", fmt.Errorf("begin item transaction: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	ls, pause, err := leaseResult(tx.QueryRow(ctx, itemSQL, w.args(f)...), "item write", f)
	if err != nil {
		return ls, pause, err
	}
	for _, fn := range jobWrites {
		if err := fn(ctx, tx); err != nil {
			return ls, pause, fmt.Errorf("job's write for item %q: %w", w.Target, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return ls, pause, fmt.Errorf("commit item %q: %w", w.Target, err)
	}
	return ls, pause, nil
}

// LedgerRow is the part of a ledger row the runner consults before processing a target.
type LedgerRow struct {
	Target         string
	Step           string
	State          bt.LedgerState
	Attempt        int
	InputHash      string
	ErrorSig       string
	SameErrorCount int
}

// LedgerRows reads the ledger rows of the given targets of one step, in one query.
func (s *Store) LedgerRows(ctx context.Context, job string, gen int64, step string, targets []string) (map[string]LedgerRow, error) {
	rows, err := s.pool.Query(ctx, `SELECT target_key, step, state, attempt, input_hash, COALESCE(last_error_sig, ''), same_error_count
		FROM job_ledger WHERE job_name = $1 AND generation = $2 AND step = $3 AND target_key = ANY($4)`, job, gen, step, targets)
	if err != nil {
		return nil, fmt.Errorf("read ledger of %s: %w", job, err)
	}
	defer rows.Close()
	out := make(map[string]LedgerRow, len(targets))
	for rows.Next() {
		var r LedgerRow
		var state string
		if err := rows.Scan(&r.Target, &r.Step, &state, &r.Attempt, &r.InputHash, &r.ErrorSig, &r.SameErrorCount); err != nil {
			return nil, err
		}
		r.State = bt.LedgerState(state)
		out[r.Target] = r
	}
	return out, rows.Err()
}

// LedgerCounts returns the per-state counts of a generation (runID 0) or of one run.
func (s *Store) LedgerCounts(ctx context.Context, job string, gen, runID int64) (map[bt.LedgerState]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT state, n FROM job_ledger_counts
		WHERE job_name = $1 AND generation = $2 AND run_id = $3 AND n <> 0`, job, gen, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[bt.LedgerState]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[bt.LedgerState(st)] = n
	}
	return out, rows.Err()
}
