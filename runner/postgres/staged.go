package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// A staged write is a batch write of fresh rows split in two, so that PostgreSQL can insert its
// rows while the run's write before it is still inserting or committing — on another
// connection, another core — instead of after it. Stage opens the write's transaction and
// inserts its ledger rows: unfenced, but uncommitted, so no one sees them. Commit then makes
// the fenced rest of the write (run row, counters, checkpoint, error rows) in the same
// transaction and commits; if the lease is gone the transaction rolls back and the rows with
// it. The caller commits its staged writes in the order it made them, so checkpoints and
// counters land in that order.
var (
	stageSQL = `INSERT INTO job_ledger (` + ledgerInsertColumns + `)
	SELECT $1, $2, i.target, i.step, i.state, i.attempt, i.key, i.hash, i.changed, i.ext, i.effect, i.evidence,
		i.err, i.sig, i.same, $3
	FROM unnest($4::text[], $5::text[], $6::text[], $7::int[], $8::text[], $9::text[], $10::bool[],
		$11::bool[], $12::text[], $13::text[], $14::text[], $15::text[], $16::int[])
		AS i(target, step, state, attempt, key, hash, changed, ext, effect, evidence, err, sig, same)`
	stagedTailSQL = `
WITH ` + fenceCTE(`true`, wallClock) + `, ` + countedTail(11) + `
SELECT * FROM fence`
)

// stagedWrite is a store.StagedWrite made on a connection of its own, held from HoldStaged to
// Commit or Abort: once held, the write needs no other connection, whatever happens to it.
type stagedWrite struct {
	s    itemStore
	conn *pgxpool.Conn
	f    store.Fence
	w    *store.ItemsWrite
	tx   pgx.Tx // open with the rows inserted, after a Stage that succeeded
	err  error  // why Stage failed
}

// HoldStaged takes a connection from the pool for a staged write of w, waiting while the pool
// has none. w must be Stageable.
func (s itemStore) HoldStaged(ctx context.Context, f store.Fence, w *store.ItemsWrite) (*store.StagedWrite, error) {
	if !w.Stageable() {
		return nil, errors.New("stage items: only a batch of fresh rows can be staged")
	}
	if err := w.CheckKinds(); err != nil {
		return nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("connection for staged items: %w", err)
	}
	return &store.StagedWrite{Staged: &stagedWrite{s: s, conn: conn, f: f, w: w}}, nil
}

// Stage opens the write's transaction and inserts its rows, in two round trips, by COPY from
// copyMinRows rows (copies), else by an INSERT of unnested arrays. The
// transaction may then sit idle for at most w.Lease while the write before it lands; past that
// PostgreSQL ends the session and the rows go. A failure is kept for Commit.
func (sw *stagedWrite) Stage(ctx context.Context) {
	tx, err := sw.conn.Begin(ctx)
	if err != nil {
		sw.err = fmt.Errorf("begin staged items: %w", err)
		return
	}
	b := &pgx.Batch{}
	if sw.w.Lease > 0 {
		b.Queue("SELECT set_config('idle_in_transaction_session_timeout', $1, true)", fmt.Sprintf("%dms", sw.w.Lease.Milliseconds()))
	}
	byCopy := len(sw.w.Ledger) >= copyMinRows
	if !byCopy {
		b.Queue(stageSQL, append([]any{sw.w.JobName, sw.w.Generation, sw.f.RunID}, ledgerArrays(sw.w)...)...)
	}
	err = tx.SendBatch(ctx, b).Close()
	if err == nil && byCopy {
		err = copyItems(ctx, tx, sw.f, sw.w)
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		sw.err = fmt.Errorf("stage items of run %d: %w", sw.f.RunID, err)
		return
	}
	sw.tx = tx
}

// Commit makes the fenced rest of the staged write and commits it, then gives the connection
// back. On error — the lease lost (bt.CodeLeaseLost) or the database's — it rolls back:
// nothing of the write lands. A stage refused because a row taken for new exists is made
// again as an upsert, like WriteItems does, on the same connection.
func (sw *stagedWrite) Commit(ctx context.Context) (store.LeaseState, bt.StopReason, error) {
	defer sw.conn.Release()
	if sw.tx == nil {
		if sw.err == nil {
			return store.LeaseState{}, "", errors.New("commit staged items: the write was never staged")
		}
		if !isStaleKnowledge(sw.err) {
			return store.LeaseState{}, "", sw.err
		}
		var (
			ls    store.LeaseState
			pause bt.StopReason
			err   = sw.err
		)
		for redo := 0; redo < maxRedos && isStaleKnowledge(err); redo++ {
			sw.s.forgetKnowledge(sw.w)
			sql, args := writeStatement(sw.w, sw.f)
			ls, pause, err = leaseResult(sw.conn.QueryRow(ctx, sql, args...), "item write", sw.f)
		}
		return ls, pause, refusal(err)
	}
	defer sw.tx.Rollback(ctx) //nolint:errcheck // a no-op once committed
	args := append(fenceArgs(sw.w, sw.f), countedArgs(sw.w, sw.f)...)
	ls, pause, err := leaseResult(sw.tx.QueryRow(ctx, stagedTailSQL, args...), "item write", sw.f)
	if err != nil {
		return ls, pause, err
	}
	if err := sw.tx.Commit(ctx); err != nil {
		return ls, pause, fmt.Errorf("commit items of run %d: %w", sw.f.RunID, err)
	}
	return ls, pause, nil
}

// Abort rolls the staged write back and gives the connection back.
func (sw *stagedWrite) Abort(ctx context.Context) {
	if sw.tx != nil {
		_ = sw.tx.Rollback(ctx)
	}
	sw.conn.Release()
}
