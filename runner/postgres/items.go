package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// itemStore holds the fenced item writes and the ledger reads made before them.
type itemStore struct{ *Store }

// The fenced item statements. Every insert selects FROM fence, so nothing is written unless
// this run still holds its lease by the database clock. There are five, by two questions:
//
//   - One item or many: the single-item forms take scalar parameters — no arrays to encode and
//     unnest, and a plan PostgreSQL can cache (with array parameters it plans afresh on every
//     execution, which costs more than the statement itself on the strict path); the batch
//     forms take the ledger rows as parallel arrays.
//   - Fresh or not: when the caller knows every row is new (LedgerWrite.Fresh) the rows go in
//     by a plain INSERT straight from the parameters and the counters' deltas are computed
//     here, in Go, from the rows themselves; otherwise the rows are upserted and the deltas
//     come from the states the upsert replaced. The fresh forms are the first run's path and
//     cost PostgreSQL about a third less. Between the two, a batch whose rows are each fresh
//     or known in their prior state (an intent the run has just committed) inserts the fresh
//     ones and updates the known ones in place (knownItemsSQL): a quarter less than the upsert.
var (
	itemsSQL = itemsStatement(`SELECT * FROM unnest($11::text[], $12::text[], $13::text[], $14::int[], $15::text[], $16::text[], $17::bool[],
		$18::bool[], $19::text[], $20::text[], $21::text[], $22::text[], $23::int[], $24::bool[], $25::text[], $26::text[], $27::bool[],
		$28::text[])
		AS t(target, step, state, attempt, key, hash, changed, ext, effect, evidence, err, sig, same, count_run, err_class, err_msg, fresh,
		kind)`,
		`cardinality($11::text[]) > 0`, false)
	itemSQL = itemsStatement(`SELECT $11::text AS target, $12::text AS step, $13::text AS state, $14::int AS attempt,
		$15::text AS key, $16::text AS hash, $17::bool AS changed, $18::bool AS ext, $19::text AS effect,
		$20::text AS evidence, $21::text AS err, $22::text AS sig, $23::int AS same, $24::bool AS count_run,
		$25::text AS err_class, $26::text AS err_msg, $27::bool AS fresh, $28::text AS kind`, `true`, true)

	freshItemsSQL = `
WITH ` + fenceCTE(`true`, stmtClock) + `, led AS (
	INSERT INTO job_ledger (` + ledgerInsertColumns + `)
	SELECT $9, $10, i.target, i.step, i.state, i.attempt, i.key, i.hash, i.changed, i.ext, i.effect, i.evidence,
		i.err, i.sig, i.same, $1
	FROM fence, unnest($11::text[], $12::text[], $13::text[], $14::int[], $15::text[], $16::text[], $17::bool[],
		$18::bool[], $19::text[], $20::text[], $21::text[], $22::text[], $23::int[])
		AS i(target, step, state, attempt, key, hash, changed, ext, effect, evidence, err, sig, same)
), ` + countedTail(24) + `
SELECT * FROM fence`

	// knownItemsSQL is the batch form for rows that are each fresh (prior NULL) or known in
	// their prior state: fresh rows inserted, known ones updated by compare-and-set on the state,
	// counters and error rows computed in Go; when fewer rows were updated than known (a row in
	// another state, or an intent that is not the writing attempt's own), baton_ledger_changed
	// fails the statement and the write is made again as an upsert, which names a refused
	// transition. The known states themselves were judged by the table before (knowledge).
	knownItemsSQL = `
WITH ` + fenceCTE(`true`, stmtClock) + `, input AS (
	SELECT * FROM unnest($11::text[], $12::text[], $13::text[], $14::int[], $15::text[], $16::text[], $17::bool[],
		$18::bool[], $19::text[], $20::text[], $21::text[], $22::text[], $23::int[], $24::text[], $33::text[])
		AS t(target, step, state, attempt, key, hash, changed, ext, effect, evidence, err, sig, same, prior, kind)
), ins AS (
	INSERT INTO job_ledger (` + ledgerInsertColumns + `)
	SELECT $9, $10, i.target, i.step, i.state, i.attempt, i.key, i.hash, i.changed, i.ext, i.effect, i.evidence,
		i.err, i.sig, i.same, $1
	FROM input i, fence WHERE i.prior IS NULL
), upd AS (
	UPDATE job_ledger l SET state = i.state, attempt = i.attempt, input_hash = i.hash, input_changed = i.changed,
		external = i.ext, effect_ref = COALESCE(i.effect, l.effect_ref), evidence_ref = COALESCE(i.evidence, l.evidence_ref),
		last_error = i.err, last_error_sig = i.sig, same_error_count = i.same, run_id = $1, updated_at = now()
	FROM fence, (
		-- Each row found by its key through the unique index (LIMIT 1 keeps the planner from
		-- hashing the generation when its statistics are stale), updated by its address.
		SELECT i.*, x.ctid AS tid FROM input i CROSS JOIN LATERAL (
			SELECT ctid FROM job_ledger WHERE job_name = $9 AND generation = $10 AND target_key = i.target AND step = i.step
				AND state = i.prior AND ` + ownGuardSQL(`state`, `i.kind`, `(run_id = $1 AND attempt = i.attempt)`) + ` LIMIT 1
		) x WHERE i.prior IS NOT NULL
	) i
	WHERE l.ctid = i.tid
	RETURNING 1
), ` + countedTail(25) + `
SELECT fence.* FROM fence
WHERE CASE WHEN (SELECT count(*) FROM upd) = $32 THEN true ELSE baton_ledger_changed($32, (SELECT count(*) FROM upd)) END`

	// freshCopySQL is the fenced statement of a fresh batch whose rows go in by COPY
	// (copyItems): the run row, the counters and the error rows, with no ledger rows of its
	// own — the COPY that follows in the same transaction writes them.
	freshCopySQL = `
WITH ` + fenceCTE(`true`, stmtClock) + `, ` + countedTail(11) + `
SELECT * FROM fence`

	freshItemSQL = `
WITH ` + fenceCTE(`true`, stmtClock) + `, led AS (
	INSERT INTO job_ledger (` + ledgerInsertColumns + `)
	SELECT $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $1 FROM fence
), cnt AS (
	INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n, stripe)
	SELECT $9, $10, c.r, $13, 1, ` + countStripe + ` FROM fence, (VALUES (0::bigint), ($1::bigint)) AS c(r) WHERE c.r = 0 OR $24::bool
	ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + EXCLUDED.n
), er AS (
	INSERT INTO job_run_errors (run_id, item_key, failure_class, message, attempt)
	SELECT $1, $11, $25, $26, $14 FROM fence WHERE $25::text <> ''
)
SELECT * FROM fence`
)

// countedTail is the end of the statements whose counter deltas and error rows come from Go:
// the counters from parameters $p..$p+2 (run id, state, delta) and the error rows from $p+3..$p+6 (target, class, message, attempt).
func countedTail(p int) string {
	return fmt.Sprintf(`cnt AS (
	INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n, stripe)
	SELECT $9, $10, c.r, c.s, c.n, `+countStripe+` FROM fence, unnest($%d::bigint[], $%d::text[], $%d::bigint[]) AS c(r, s, n)
	ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + EXCLUDED.n
), er AS (
	INSERT INTO job_run_errors (run_id, item_key, failure_class, message, attempt)
	SELECT $1, e.target, e.class, e.msg, e.attempt FROM fence, unnest($%d::text[], $%d::text[], $%d::text[], $%d::int[]) AS e(target, class, msg, attempt)
)`, p, p+1, p+2, p+3, p+4, p+5, p+6)
}

// countStripe is the stripe of job_ledger_counts a run's item writes add to (migration 23):
// the stripe of its own id, so the shards of one run, writing at once, spread the generation's
// counters over 16 rows per state instead of queueing on one. Readers sum the stripes.
const countStripe = `mod($1::bigint, 16)::smallint`

const ledgerInsertColumns = `job_name, generation, target_key, step, state, attempt, idempotency_key, input_hash,
		input_changed, external, effect_ref, evidence_ref, last_error, last_error_sig, same_error_count, run_id`

// The clocks a fence reads. A fence judges the lease at the moment of the write:
// statement_timestamp() for a statement that is its own transaction or the first of one, and
// clock_timestamp() for one that ends a transaction opened earlier (the staged write), where
// now() would be the moment the transaction began. Ledger rows keep now() for updated_at, the
// time their column default gives the rows a write inserts: one write, one time.
const (
	stmtClock = `statement_timestamp()`
	wallClock = `clock_timestamp()`
)

// fenceCTE is the fenced update of the run row every item statement starts with: counters,
// checkpoint, heartbeat, and the lease state and flags returned to the worker. hasRows is
// true when the statement writes ledger rows; clock is the clock the lease is judged by.
func fenceCTE(hasRows, clock string) string {
	return `fence AS (
	UPDATE job_runs SET
		processed = processed + $3, succeeded = succeeded + $4, failed = failed + $5,
		skipped = skipped + $6, ambiguous = ambiguous + $7,
		-- The counters as of the checkpoint, where a shard made PENDING again resumes them
		-- (migration 28).
		checkpoint_processed = CASE WHEN $8::text IS NOT NULL THEN processed + $3 ELSE checkpoint_processed END,
		checkpoint_succeeded = CASE WHEN $8::text IS NOT NULL THEN succeeded + $4 ELSE checkpoint_succeeded END,
		checkpoint_failed = CASE WHEN $8::text IS NOT NULL THEN failed + $5 ELSE checkpoint_failed END,
		checkpoint_skipped = CASE WHEN $8::text IS NOT NULL THEN skipped + $6 ELSE checkpoint_skipped END,
		checkpoint_ambiguous = CASE WHEN $8::text IS NOT NULL THEN ambiguous + $7 ELSE checkpoint_ambiguous END,
		last_checkpoint_at = CASE WHEN $8::text IS NOT NULL AND $8 IS DISTINCT FROM checkpoint THEN ` + clock + ` ELSE last_checkpoint_at END,
		checkpoint = COALESCE($8, checkpoint),
		heartbeat_at = ` + clock + `,
		last_progress_at = CASE WHEN $3 > 0 OR ` + hasRows + ` THEN ` + clock + ` ELSE last_progress_at END
	WHERE id = $1 AND lease_token = $2 AND status = 'RUNNING' AND lease_until > ` + clock + `
	RETURNING ` + leaseReturningAt(clock) + `
)`
}

// itemsStatement builds the general fenced item statement around input, a query yielding the
// ledger rows from parameters $11..$28, and hasRows, true when it yields any; $29 is the
// replay scope. A row the target already has is moved only as the transition table allows,
// else baton_ledger_refused fails the statement whole, naming it. With one row (single, its
// kind the scalar $28) the upsert itself judges the row it meets, locked, and a refused row is
// one the upsert left alone; with many, refused finds the first the table refuses in the
// statement's snapshot, the rows as they were before it (only a write redone as an upsert
// takes this form: the runner's batches are fresh or known). Either way the upsert replaces a
// row only in the state the snapshot shows, else the statement fails as stale knowledge and
// is made again. refused reads fence, so a write whose lease is gone is refused as such,
// whatever its rows.
func itemsStatement(input, hasRows string, single bool) string {
	// The upsert locks and replaces the row's latest version, which a resolution or a
	// quarantine committed after the statement's snapshot was taken may have moved; refused
	// and prev read the snapshot. unchanged fails the statement (baton_ledger_changed, and
	// WriteItems makes it again with a snapshot of its own) unless the row it replaces is in
	// the state the snapshot shows, so the table judges, and the counters move from, the
	// state the write actually replaces.
	unchanged := func(then string) string {
		return `
	WHERE CASE WHEN job_ledger.state IS NOT DISTINCT FROM (SELECT s.state FROM job_ledger s WHERE s.id = job_ledger.id)
		THEN ` + then + ` ELSE baton_ledger_changed(1, 0) END`
	}
	guard, refused := unchanged(`true`), `
	SELECT i.target, i.step, l.state, i.kind FROM fence, input i CROSS JOIN LATERAL (
		SELECT state, run_id, attempt FROM job_ledger WHERE job_name = $9 AND generation = $10 AND target_key = i.target AND step = i.step LIMIT 1
	) l WHERE NOT i.fresh AND NOT `+allowedSQL(`l.state`, `i.kind`, `(l.run_id = $1 AND l.attempt = i.attempt)`, `$29::text[]`)+`
	LIMIT 1`
	if single {
		guard = unchanged(allowedSQL(`job_ledger.state`, `$28::text`, `(job_ledger.run_id = $1 AND job_ledger.attempt = EXCLUDED.attempt)`, `$29::text[]`))
		refused = `
	SELECT $11::text AS target, $12::text AS step, l.state, $28::text AS kind FROM fence, job_ledger l
	WHERE NOT EXISTS (SELECT 1 FROM led) AND NOT EXISTS (SELECT 1 FROM fresh)
		AND l.job_name = $9 AND l.generation = $10 AND l.target_key = $11 AND l.step = $12`
	}
	return `
WITH ` + fenceCTE(hasRows, stmtClock) + `, input AS (
	` + input + `
), fresh AS (
	-- Rows the caller knows are new: a plain insert (the unique key still guards it).
	INSERT INTO job_ledger (` + ledgerInsertColumns + `)
	SELECT $9, $10, i.target, i.step, i.state, i.attempt, i.key, i.hash, i.changed, i.ext, i.effect, i.evidence,
		i.err, i.sig, i.same, $1
	FROM input i, fence WHERE i.fresh
	RETURNING state
), led AS (
	INSERT INTO job_ledger (` + ledgerInsertColumns + `)
	SELECT $9, $10, i.target, i.step, i.state, i.attempt, i.key, i.hash, i.changed, i.ext, i.effect, i.evidence,
		i.err, i.sig, i.same, $1
	FROM input i, fence WHERE NOT i.fresh
	ON CONFLICT (job_name, generation, target_key, step) DO UPDATE SET
		state = EXCLUDED.state, attempt = EXCLUDED.attempt, input_hash = EXCLUDED.input_hash,
		input_changed = EXCLUDED.input_changed, external = EXCLUDED.external,
		effect_ref = COALESCE(EXCLUDED.effect_ref, job_ledger.effect_ref),
		evidence_ref = COALESCE(EXCLUDED.evidence_ref, job_ledger.evidence_ref),
		last_error = EXCLUDED.last_error, last_error_sig = EXCLUDED.last_error_sig,
		same_error_count = EXCLUDED.same_error_count, run_id = EXCLUDED.run_id, updated_at = now()` + guard + `
	RETURNING state, target_key, step, xmax = 0 AS inserted
), refused AS (` + refused + `
), prev AS (
	-- The state each row this statement updated had before: the statement's snapshot still
	-- shows the old version. Only targets that already had a row are probed, so a batch of new
	-- targets costs no lookups. LIMIT keeps the planner from flattening this into a join that
	-- hashes the whole generation when its statistics are stale.
	SELECT l.state FROM led CROSS JOIN LATERAL (
		SELECT state FROM job_ledger WHERE job_name = $9 AND generation = $10 AND target_key = led.target_key AND step = led.step LIMIT 1
	) l WHERE NOT led.inserted
), cnt AS (
	INSERT INTO job_ledger_counts (job_name, generation, run_id, state, n, stripe)
	SELECT $9, $10, r, s, sum(d), ` + countStripe + ` FROM (
		SELECT 0::bigint AS r, state AS s, 1 AS d FROM led
		UNION ALL SELECT 0, state, 1 FROM fresh
		UNION ALL SELECT 0, state, -1 FROM prev
		UNION ALL SELECT $1, i.state, 1 FROM input i, fence WHERE i.count_run
	) x GROUP BY r, s HAVING sum(d) <> 0
	ON CONFLICT (job_name, generation, run_id, state, stripe) DO UPDATE SET n = job_ledger_counts.n + EXCLUDED.n
), er AS (
	INSERT INTO job_run_errors (run_id, item_key, failure_class, message, attempt)
	SELECT $1, i.target, i.err_class, i.err_msg, i.attempt FROM input i, fence WHERE i.err_class <> ''
)
SELECT fence.* FROM fence
WHERE CASE WHEN NOT EXISTS (SELECT 1 FROM refused) THEN true
	ELSE (SELECT baton_ledger_refused(target, step, state, kind) FROM refused) END`
}

// statement returns the fenced item statement for w and its arguments.
func writeStatement(w *store.ItemsWrite, f store.Fence) (string, []any) {
	fresh, known := knowledge(w)
	args := fenceArgs(w, f)
	if len(w.Ledger) == 1 {
		l := &w.Ledger[0]
		args = append(args, l.Target, l.Step, string(l.State), int32(l.Attempt), l.IdempotencyKey,
			l.InputHash, l.InputChanged, l.External, l.EffectRef, l.EvidenceRef, l.LastError, l.ErrorSig,
			int32(l.SameErrorCount), l.CountInRun, l.ErrorClass, l.ErrorMessage)
		if fresh {
			return freshItemSQL, args
		}
		return itemSQL, append(args, l.Fresh, string(l.WriteKind()), scopeArg(w))
	}
	n := len(w.Ledger)
	args = append(args, ledgerArrays(w)...)
	if fresh {
		return freshItemsSQL, append(args, countedArgs(w, f)...)
	}
	if known {
		priors := make([]*string, n)
		updates := 0
		for i, l := range w.Ledger {
			if !l.Fresh {
				prior := string(l.Prior)
				priors[i] = &prior
				updates++
			}
		}
		return knownItemsSQL, append(append(append(args, priors), countedArgs(w, f)...), int64(updates), kindsArg(w))
	}
	countRun, classes, msgs, freshes := make([]bool, n), make([]string, n), make([]string, n), make([]bool, n)
	for i, l := range w.Ledger {
		countRun[i], classes[i], msgs[i], freshes[i] = l.CountInRun, l.ErrorClass, l.ErrorMessage, l.Fresh
	}
	return itemsSQL, append(args, countRun, classes, msgs, freshes, kindsArg(w), scopeArg(w))
}

// fenceArgs returns parameters $1..$10 every item statement starts with: the fence, the run's
// counter deltas, the checkpoint, the job and generation.
func fenceArgs(w *store.ItemsWrite, f store.Fence) []any {
	d := w.Delta
	return []any{f.RunID, f.Token, d.Processed, d.Succeeded, d.Failed, d.Skipped, d.Ambiguous, w.Checkpoint,
		w.JobName, w.Generation}
}

// forgetKnowledge makes w an upsert of every row, for a write refused because it relied on a
// ledger state that was not so (isStaleKnowledge), and counts the redo when the write relied
// on the caller's knowledge. An upsert, which relies on none, is made again only because a
// row was moved under it after its snapshot: that is no error in what the caller tracks.
func (s itemStore) forgetKnowledge(w *store.ItemsWrite) {
	knew := false
	for i := range w.Ledger {
		knew = knew || w.Ledger[i].Fresh || w.Ledger[i].Prior != ""
		w.Ledger[i].Fresh, w.Ledger[i].Prior = false, ""
	}
	if knew {
		s.redone.Add(1)
	}
}

// rows runs the query built by sql with a plan made for its parameter values (see listQuery).
func (q *listQuery) rows(ctx context.Context, pool *pgxpool.Pool, selectFrom, orderBy string, limit int) (pgx.Rows, error) {
	sql := q.sql(selectFrom, orderBy, limit)
	return pool.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, q.args...)...)
}

// counted returns the parameters of countedTail for a write whose rows are each fresh or known
// in their prior state: the counters move by exactly what the rows were and become, so no row
// is read. They are the counter deltas (run id, state, delta) and the error rows (target,
// class, message, attempt).
func countedArgs(w *store.ItemsWrite, f store.Fence) []any {
	var cr, cn []int64
	var cs []string
	add := func(run int64, state bt.LedgerState, d int64) {
		for i := range cs {
			if cr[i] == run && cs[i] == string(state) {
				cn[i] += d
				return
			}
		}
		cr, cs, cn = append(cr, run), append(cs, string(state)), append(cn, d)
	}
	var etargets, eclasses, emsgs []string
	var eattempts []int32
	for _, l := range w.Ledger {
		add(0, l.State, 1)
		if !l.Fresh {
			add(0, l.Prior, -1)
		}
		if l.CountInRun {
			add(f.RunID, l.State, 1)
		}
		if l.ErrorClass != "" {
			etargets, eclasses, emsgs = append(etargets, l.Target), append(eclasses, l.ErrorClass), append(emsgs, l.ErrorMessage)
			eattempts = append(eattempts, int32(l.Attempt))
		}
	}
	return []any{cr, cs, cn, etargets, eclasses, emsgs, eattempts}
}

// knowledge reports whether every row is fresh, or else whether every row is fresh or known
// in a prior state the transition table lets its write move (and at least two rows: one known
// row goes by the single-item statement). A known row the table refuses makes the write an
// upsert, which names the refusal.
func knowledge(w *store.ItemsWrite) (fresh, known bool) {
	if len(w.Ledger) == 0 {
		return false, false
	}
	fresh, known = true, true
	for i := range w.Ledger {
		l := &w.Ledger[i]
		fresh = fresh && l.Fresh
		known = known && (l.Fresh || l.Prior != "" && knows(l.Prior, l.WriteKind(), w.Scope))
	}
	return fresh, known && !fresh && len(w.Ledger) > 1
}

// RedoneWrites returns how many item writes relied on a ledger state that was not so (a row
// taken for new that existed, a row not in the state known) and were made again as upserts.
// Outside tests that inject it, anything but 0 points at a bug in what the runner tracks.
func (s itemStore) RedoneWrites() int64 { return s.redone.Load() }

// WriteItems commits one fenced write of one or many items. Without job writes it is one
// autocommit statement: one round trip, one commit. With job writes it opens a transaction,
// makes the fenced write first (nothing of the job's lands unless the lease holds, and the row
// lock it takes keeps the recoverer out until commit), then the job's writes, then commits; the
// bound on idle time and the fenced write travel together in one round trip.
// A (target, step) may appear only once per call.
//
// A write that would move a row the transition table does not let it move (transitions.go) is
// refused whole with LEDGER_TRANSITION_REFUSED, naming the target, step and state.
func (s itemStore) WriteItems(ctx context.Context, f store.Fence, w *store.ItemsWrite, jobWrites []store.TxFunc) (store.LeaseState, bt.StopReason, error) {
	if err := w.CheckKinds(); err != nil {
		return store.LeaseState{}, "", err
	}
	ls, pause, err := s.writeItems(ctx, f, w, jobWrites)
	for redo := 0; redo < maxRedos && err != nil && isStaleKnowledge(err); redo++ {
		// A row the caller took for new exists, a known row is in another state, or a row the
		// upsert met was moved after its snapshot: nothing of this write landed (one
		// statement, or one transaction), so it is made again as an upsert, with a snapshot
		// of its own.
		s.forgetKnowledge(w)
		ls, pause, err = s.writeItems(ctx, f, w, jobWrites)
	}
	return ls, pause, refusal(err)
}

// maxRedos bounds how many times a write refused as stale knowledge is made again. Only a
// row moved by someone else between a statement's snapshot and its lock (a resolution, a
// quarantine) makes an upsert stale, and each such move is made once.
const maxRedos = 3

// isStaleKnowledge reports whether err is the refusal of a write that relied on what the caller
// knew of the ledger: a row taken for new whose (job, generation, target, step) exists, or a
// row not in the state the caller, or the upsert's snapshot, knew (baton_ledger_changed).
func isStaleKnowledge(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return pgErr.Code == "23505" && pgErr.ConstraintName == "job_ledger_job_name_generation_target_key_step_key" ||
		pgErr.Code == "BT409"
}

func (s itemStore) writeItems(ctx context.Context, f store.Fence, w *store.ItemsWrite, jobWrites []store.TxFunc) (store.LeaseState, bt.StopReason, error) {
	byCopy := copies(w)
	var sql string
	var args []any
	if byCopy {
		sql, args = freshCopySQL, append(fenceArgs(w, f), countedArgs(w, f)...)
	} else {
		sql, args = writeStatement(w, f)
	}
	if len(jobWrites) == 0 && !byCopy {
		return leaseResult(s.pool.QueryRow(ctx, sql, args...), "item write", f)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return store.LeaseState{}, "", fmt.Errorf("begin item transaction: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	ls, pause, err := fencedInTx(ctx, tx, f, w.Lease, sql, args)
	if err != nil {
		return ls, pause, err
	}
	if byCopy {
		if err := copyItems(ctx, tx, f, w); err != nil {
			return ls, pause, err
		}
	}
	for _, fn := range jobWrites {
		if err := fn(ctx, tx); err != nil {
			return ls, pause, fmt.Errorf("job's own write: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return ls, pause, fmt.Errorf("commit items: %w", err)
	}
	return ls, pause, nil
}

// copyMinRows is the size from which a fresh batch goes in by COPY (copies): below it the
// transaction's extra round trips cost more than the COPY protocol saves over an INSERT of
// unnested arrays.
const copyMinRows = 64

// copies reports whether w is written by COPY: a batch of at least copyMinRows rows, each
// known to be fresh. Such a write is a transaction — the fenced statement (freshCopySQL)
// first, whose row lock on the run keeps the recoverer out until commit, then the COPY of the
// ledger rows (copyItems) — so nothing lands unless the lease held at the moment of the write.
// A row that exists after all fails the COPY on the generation's unique key, which WriteItems
// takes for stale knowledge: the transaction is rolled back whole and made again as an upsert.
func copies(w *store.ItemsWrite) bool {
	if len(w.Ledger) < copyMinRows {
		return false
	}
	fresh, _ := knowledge(w)
	return fresh
}

// copyColumns are the ledger columns a COPY writes, in ledgerInsertColumns' order.
var copyColumns = []string{"job_name", "generation", "target_key", "step", "state", "attempt", "idempotency_key",
	"input_hash", "input_changed", "external", "effect_ref", "evidence_ref", "last_error", "last_error_sig",
	"same_error_count", "run_id"}

// copyItems writes w's ledger rows by the COPY protocol in tx, after its fenced statement.
func copyItems(ctx context.Context, tx pgx.Tx, f store.Fence, w *store.ItemsWrite) error {
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(copyData(f, w)), copySQL); err != nil {
		return fmt.Errorf("item write of run %d: copy ledger rows: %w", f.RunID, err)
	}
	return nil
}

// copySQL is the COPY copyItems sends: copyColumns in PostgreSQL's binary format.
var copySQL = "COPY job_ledger (" + strings.Join(copyColumns, ", ") + ") FROM STDIN (FORMAT binary)"

// copyData encodes w's ledger rows in COPY's binary format (the PostgreSQL manual, COPY, "Binary
// Format"), the columns of copyColumns in their order and column types: text as its bytes,
// bigint and integer big-endian, boolean one byte, NULL as length -1. Written here rather than
// by pgx's CopyFrom, which looks up an encode plan for every value: for a batch's sixteen
// columns that lookup cost more than the rest of the encoding.
func copyData(f store.Fence, w *store.ItemsWrite) []byte {
	size := 19 + 2
	for i := range w.Ledger {
		l := &w.Ledger[i]
		size += 2 + 16*4 + 8 + 8 + 4 + 4 + 1 + 1 + len(w.JobName) + len(l.Target) + len(l.Step) + len(l.State) +
			len(l.IdempotencyKey) + len(l.InputHash) + optLen(l.EffectRef) + optLen(l.EvidenceRef) + optLen(l.LastError) + optLen(l.ErrorSig)
	}
	b := make([]byte, 0, size)
	b = append(b, "PGCOPY\n\xff\r\n\x00"...)
	b = binary.BigEndian.AppendUint32(b, 0) // flags
	b = binary.BigEndian.AppendUint32(b, 0) // header extension length
	text := func(b []byte, s string) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		return append(b, s...)
	}
	optText := func(b []byte, s *string) []byte {
		if s == nil {
			return binary.BigEndian.AppendUint32(b, 0xFFFFFFFF)
		}
		return text(b, *s)
	}
	int8 := func(b []byte, v int64) []byte {
		b = binary.BigEndian.AppendUint32(b, 8)
		return binary.BigEndian.AppendUint64(b, uint64(v))
	}
	int4 := func(b []byte, v int) []byte {
		b = binary.BigEndian.AppendUint32(b, 4)
		return binary.BigEndian.AppendUint32(b, uint32(int32(v)))
	}
	boolean := func(b []byte, v bool) []byte {
		b = binary.BigEndian.AppendUint32(b, 1)
		if v {
			return append(b, 1)
		}
		return append(b, 0)
	}
	for i := range w.Ledger {
		l := &w.Ledger[i]
		b = binary.BigEndian.AppendUint16(b, uint16(len(copyColumns)))
		b = text(b, w.JobName)
		b = int8(b, w.Generation)
		b = text(b, l.Target)
		b = text(b, l.Step)
		b = text(b, string(l.State))
		b = int4(b, l.Attempt)
		b = text(b, l.IdempotencyKey)
		b = text(b, l.InputHash)
		b = boolean(b, l.InputChanged)
		b = boolean(b, l.External)
		b = optText(b, l.EffectRef)
		b = optText(b, l.EvidenceRef)
		b = optText(b, l.LastError)
		b = optText(b, l.ErrorSig)
		b = int4(b, l.SameErrorCount)
		b = int8(b, f.RunID)
	}
	return binary.BigEndian.AppendUint16(b, 0xFFFF) // the trailer: a field count of -1
}

func optLen(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}

// fencedInTx bounds how long tx may sit idle (when lease > 0) and makes the fenced write, both
// in one round trip.
func fencedInTx(ctx context.Context, tx pgx.Tx, f store.Fence, lease time.Duration, sql string, args []any) (store.LeaseState, bt.StopReason, error) {
	if lease <= 0 {
		return leaseResult(tx.QueryRow(ctx, sql, args...), "item write", f)
	}
	b := &pgx.Batch{}
	b.Queue("SELECT set_config('idle_in_transaction_session_timeout', $1, true)", fmt.Sprintf("%dms", lease.Milliseconds()))
	b.Queue(sql, args...)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return store.LeaseState{}, "", fmt.Errorf("bound item transaction: %w", err)
	}
	ls, pause, err := leaseResult(br.QueryRow(), "item write", f)
	if err != nil {
		return ls, pause, err
	}
	if err := br.Close(); err != nil {
		return ls, pause, fmt.Errorf("item write of run %d: %w", f.RunID, err)
	}
	return ls, pause, nil
}

// FlagInputChanged marks ledger rows whose target was offered again with an input other than
// the one applied: input_changed is set, input_hash keeps the hash of what was applied.
// Fenced like every write of a run.
func (s itemStore) FlagInputChanged(ctx context.Context, f store.Fence, job string, gen int64, keys []store.TargetStep) error {
	targets, steps := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		targets[i], steps[i] = k.Target, k.Step
	}
	_, err := s.pool.Exec(ctx, `UPDATE job_ledger l SET input_changed = true, updated_at = now()
		FROM unnest($5::text[], $6::text[]) AS k(target, step)
		WHERE l.job_name = $3 AND l.generation = $4 AND l.target_key = k.target AND l.step = k.step AND NOT l.input_changed
		AND EXISTS (SELECT 1 FROM job_runs WHERE id = $1 AND lease_token = $2 AND status = 'RUNNING' AND lease_until > statement_timestamp())`,
		f.RunID, f.Token, job, gen, targets, steps)
	if err != nil {
		return fmt.Errorf("flag changed inputs: %w", err)
	}
	return nil
}

// LedgerRows reads the ledger rows of the given targets' steps in one query.
func (s itemStore) LedgerRows(ctx context.Context, job string, gen int64, keys []store.TargetStep) (map[store.TargetStep]store.LedgerRow, error) {
	targets, steps := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		targets[i], steps[i] = k.Target, k.Step
	}
	rows, err := s.pool.Query(ctx, `SELECT l.target_key, l.step, l.state, l.attempt, l.input_hash, l.input_changed,
			COALESCE(l.last_error_sig, ''), l.same_error_count, l.run_id
		FROM unnest($3::text[], $4::text[]) AS k(target, step) CROSS JOIN LATERAL (
			SELECT * FROM job_ledger WHERE job_name = $1 AND generation = $2 AND target_key = k.target AND step = k.step LIMIT 1
		) l`, job, gen, targets, steps)
	found, err := collect(rows, err, "read ledger of "+job, scanLedgerRow)
	return keyed(found, err, func(r store.LedgerRow) store.TargetStep { return store.TargetStep{Target: r.Target, Step: r.Step} })
}

func scanLedgerRow(row pgx.Row) (store.LedgerRow, error) {
	var r store.LedgerRow
	var state string
	err := row.Scan(&r.Target, &r.Step, &state, &r.Attempt, &r.InputHash, &r.InputChanged, &r.ErrorSig, &r.SameErrorCount, &r.RunID)
	r.State = bt.LedgerState(state)
	return r, err
}
