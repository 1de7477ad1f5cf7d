package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// ledgerStore holds the ledger as operators and preflight read it (job_ledger, job_ledger_counts, job_checkpoints).
type ledgerStore struct{ *Store }

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

// Ledger lists ledger entries matching q. Each combination of filters is its own statement
// (see listQuery), so that each keeps a plan on the index its filters need.
func (s ledgerStore) Ledger(ctx context.Context, q store.LedgerQuery) ([]*bt.LedgerEntry, error) {
	if q.Limit <= 0 {
		q.Limit = 20
	}
	var lq listQuery
	if q.JobName != "" {
		lq.where("job_name = %s", q.JobName)
	}
	lq.oneOf("state", strs(q.States))
	if q.RunID != 0 {
		if err := s.whereRun(ctx, &lq, q.RunID); err != nil {
			return nil, err
		}
	}
	if q.Generation != 0 {
		lq.where("generation = %s", q.Generation)
	}
	if q.TargetPrefix != "" {
		lq.where("target_key LIKE %s", likePrefix(q.TargetPrefix))
	}
	if q.TargetKey != "" {
		lq.where("target_key = %s", q.TargetKey)
	}
	if q.AfterID > 0 {
		lq.where("id > %s", q.AfterID)
	}
	rows, err := lq.rows(ctx, s.pool, `SELECT `+ledgerColumns+` FROM job_ledger`, "id", q.Limit)
	return collect(rows, err, "list ledger entries", scanLedger)
}

// TargetErrors lists the error rows the runs of job recorded for target, by id ascending after
// afterID, on job_run_errors_item_key.
func (s ledgerStore) TargetErrors(ctx context.Context, job, target string, afterID int64, limit int) ([]bt.RunError, error) {
	if limit <= 0 {
		limit = 20
	}
	rows, err := s.pool.Query(ctx, `SELECT e.id, e.run_id, e.item_key, e.failure_class, e.message, e.attempt, e.created_at
		FROM job_run_errors e JOIN job_runs r ON r.id = e.run_id
		WHERE e.item_key = $2 AND r.job_name = $1 AND e.id > $3 ORDER BY e.id LIMIT $4`, job, target, afterID, limit)
	return collect(rows, err, "list errors of a target", scanRunError)
}

// LedgerEntry returns one entry, or NOT_FOUND.
func (s ledgerStore) LedgerEntry(ctx context.Context, id int64) (*bt.LedgerEntry, error) {
	e, err := scanLedger(s.pool.QueryRow(ctx, `SELECT `+ledgerColumns+` FROM job_ledger WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "ledger entry %d not found", id)
	}
	return e, err
}

// LedgerCounts returns the per-state counts of a generation (runID 0) or of one run.
func (s ledgerStore) LedgerCounts(ctx context.Context, job string, gen, runID int64) (map[bt.LedgerState]int64, error) {
	k := store.CountsKey{Job: job, Generation: gen, RunID: runID}
	m, err := s.LedgerCountsOf(ctx, []store.CountsKey{k})
	if err != nil {
		return nil, err
	}
	return m[k], nil
}

// ledgerCount is one row of job_ledger_counts.
type ledgerCount struct {
	key   store.CountsKey
	state bt.LedgerState
	n     int64
}

func scanLedgerCount(row pgx.Row) (ledgerCount, error) {
	var c ledgerCount
	var state string
	err := row.Scan(&c.key.Job, &c.key.Generation, &c.key.RunID, &state, &c.n)
	c.state = bt.LedgerState(state)
	return c, err
}

// LedgerCountsOf returns the per-state counts of each key (LedgerCounts for many keys at once).
// Keys without rows get an empty map.
func (s ledgerStore) LedgerCountsOf(ctx context.Context, keys []store.CountsKey) (map[store.CountsKey]map[bt.LedgerState]int64, error) {
	jobs, gens, runs := make([]string, len(keys)), make([]int64, len(keys)), make([]int64, len(keys))
	out := make(map[store.CountsKey]map[bt.LedgerState]int64, len(keys))
	for i, k := range keys {
		jobs[i], gens[i], runs[i] = k.Job, k.Generation, k.RunID
		out[k] = map[bt.LedgerState]int64{}
	}
	// A sharded run's counts are its shards' sums.
	rows, err := s.pool.Query(ctx, `SELECT k.job, k.gen, k.run, c.state, sum(c.n)::bigint
		FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS k(job, gen, run)
		CROSS JOIN LATERAL (SELECT k.run AS id UNION ALL SELECT id FROM job_runs WHERE k.run <> 0 AND parent_run_id = k.run) r
		JOIN job_ledger_counts c ON c.job_name = k.job AND c.generation = k.gen AND c.run_id = r.id
		GROUP BY 1, 2, 3, 4 HAVING sum(c.n) <> 0`, jobs, gens, runs)
	counts, err := collect(rows, err, "read ledger counts", scanLedgerCount)
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		out[c.key][c.state] = c.n
	}
	return out, nil
}

// CheckpointAge reports how long ago a generation's main checkpoint last moved (nil if none).
func (s ledgerStore) CheckpointAge(ctx context.Context, job string, gen int64) (*time.Duration, error) {
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

// ResolveAmbiguous moves an AMBIGUOUS_EFFECT entry to CONFIRMED or NOT_APPLIED by
// compare-and-set on its state, keeping the generation's counters in step, and audits it in
// the same transaction.
func (s ledgerStore) ResolveAmbiguous(ctx context.Context, id int64, to bt.LedgerState, effectRef, evidenceRef *string, note string, audit store.AuditRecord) (*bt.LedgerEntry, error) {
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

// ResolveAmbiguousMany resolves each of ids that is AMBIGUOUS_EFFECT, each under its own
// savepoint of one transaction, in id order (so two bulk calls lock rows in the same order),
// and writes the one audit row audit makes of the outcome with them.
func (s ledgerStore) ResolveAmbiguousMany(ctx context.Context, ids []int64, to bt.LedgerState, evidenceRef *string, note string, audit store.BulkAuditFunc) ([]*bt.LedgerEntry, map[int64]error, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	var resolved []*bt.LedgerEntry
	failed := map[int64]error{}
	done, err := eachMember(ctx, tx, ids, failed, func(sp pgx.Tx, id int64) error {
		e, err := s.resolveAmbiguousIn(ctx, sp, id, to, nil, evidenceRef, note)
		if err == nil {
			resolved = append(resolved, e)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if err := insertAudit(ctx, tx, audit(done, failed)); err != nil {
		return nil, nil, err
	}
	return resolved, failed, tx.Commit(ctx)
}

// eachMember runs do for each of ids (sorted, without repeats) under its own savepoint of tx:
// a member refused with a coded error is rolled back alone and recorded in failed; any other
// error ends the whole operation. It returns the members done.
func eachMember(ctx context.Context, tx pgx.Tx, ids []int64, failed map[int64]error, do func(sp pgx.Tx, id int64) error) ([]int64, error) {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	done := []int64{}
	for _, id := range sorted {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return nil, err
		}
		err = do(sp, id)
		var coded *bt.Error
		switch {
		case err == nil:
			if err := sp.Commit(ctx); err != nil {
				return nil, err
			}
			done = append(done, id)
		case errors.As(err, &coded):
			if err := sp.Rollback(ctx); err != nil {
				return nil, err
			}
			failed[id] = err
		default:
			return nil, err
		}
	}
	return done, nil
}

// resolveAmbiguousIn is ResolveAmbiguous's ledger write, in tx: CONFLICT when the entry is no
// longer AMBIGUOUS_EFFECT.
func (s ledgerStore) resolveAmbiguousIn(ctx context.Context, tx pgx.Tx, id int64, to bt.LedgerState, effectRef, evidenceRef *string, note string) (*bt.LedgerEntry, error) {
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
		ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + EXCLUDED.n`,
		e.JobName, e.Generation, string(to)); err != nil {
		return nil, err
	}
	return e, nil
}
