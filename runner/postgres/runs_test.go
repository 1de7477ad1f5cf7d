package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store"
	"github.com/baton-run/baton/runner/store/storetest"
)

// TestFinishDoesNotDeadlockWithNextStart replays, step by step, the interleaving that used to
// deadlock: a run ends (its job_runs row updated, the transaction still open) while the job's
// next start is being inserted (it waits on that row through the one-active-run index), and
// then the ending run inserts its checkpoint, whose foreign key locks the job_settings row
// the start holds. The start must simply wait for the end and then succeed.
func TestFinishDoesNotDeadlockWithNextStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := testenv.Postgres(t)
	s := postgres.New(pool)
	if err := s.EnsureJob(ctx, store.JobDefaults{Name: "j", Timezone: "UTC", RiskLevel: bt.RiskLow, RetentionDays: 90}); err != nil {
		t.Fatal(err)
	}
	first, err := s.InsertRun(ctx, store.NewRun{JobName: "j", Trigger: bt.TriggerManual, Mode: bt.ModeRestart, Actor: "t", Instance: "t", Token: "a", LeaseSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}

	// The ending run, as Finish does it, in two steps with the start in between.
	end, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer end.Rollback(ctx) //nolint:errcheck
	if _, err := end.Exec(ctx, `UPDATE job_runs SET status = 'SUCCEEDED', finished_at = now(), checkpoint = 'cp' WHERE id = $1`, first.ID); err != nil {
		t.Fatal(err)
	}

	started := make(chan error, 1)
	go func() {
		_, err := s.InsertRun(ctx, store.NewRun{JobName: "j", Trigger: bt.TriggerManual, Mode: bt.ModeResume, Actor: "t", Instance: "t", Token: "b", LeaseSeconds: 60})
		started <- err
	}()
	// Wait until the start is blocked on the ending run's row (a lock wait in pg_stat_activity).
	testenv.Eventually(t, 10*time.Second, "the next start waits on the ending run", func() bool {
		var waiting int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO job_runs%'`).Scan(&waiting)
		return err == nil && waiting > 0
	})

	if _, err := end.Exec(ctx, `INSERT INTO job_checkpoints (job_name, generation, shard, token, processed, run_id)
		VALUES ('j', $1, '', 'cp', 0, $2)`, first.Generation, first.ID); err != nil {
		t.Fatalf("the ending run's checkpoint insert failed (deadlock with the next start?): %v", err)
	}
	if err := end.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatalf("the next start failed after the run ended: %v", err)
	}
}

// TestShardEndsDoNotDeadlock replays, step by step, two shards of a RESUME run ending at the
// same moment: each end's transaction ends its shard and moves the shard's checkpoint row,
// which named the generation's earlier run, to this one — its foreign key takes a key-share
// lock on this run's row — then settles the run (baton_settle_run locks the run's row). The
// second settle must wait for the first end to commit and then end the run, not deadlock
// with it.
func TestShardEndsDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := testenv.Postgres(t)
	s := postgres.New(pool)
	plan := []store.PlannedShard{{Key: "a", Index: 0}, {Key: "b", Index: 1}}
	first, gen := storetest.RunningRun(t, s, 60)
	if _, _, err := s.PlanShards(ctx, first, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RequestCancel(ctx, first.RunID, "t"); err != nil { // its shards, unclaimed, end at once
		t.Fatal(err)
	}
	resume, err := s.InsertRun(ctx, store.NewRun{JobName: "j", Trigger: bt.TriggerManual, Mode: bt.ModeResume, Actor: "t",
		Instance: "t", Token: "tok2", LeaseSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	f := store.Fence{RunID: resume.ID, Token: "tok2"}
	if _, _, err := s.Activate(ctx, f); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PlanShards(ctx, f, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE job_runs SET status = 'RUNNING', lease_until = now() + interval '1 minute' WHERE parent_run_id = $1`, f.RunID); err != nil {
		t.Fatal(err)
	}
	var ends [2]pgx.Tx
	for i, key := range []string{"a", "b"} {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		// As Finish does it: the shard ends, and its checkpoint lands naming the run.
		if _, err := tx.Exec(ctx, `UPDATE job_runs SET status = 'SUCCEEDED', finished_at = now() WHERE parent_run_id = $1 AND shard_key = $2`,
			f.RunID, key); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO job_checkpoints (job_name, generation, shard, token, processed, run_id, done)
			VALUES ('j', $1, $2, 'cp', 1, $3, true)
			ON CONFLICT (job_name, generation, shard) DO UPDATE SET token = EXCLUDED.token, run_id = EXCLUDED.run_id, done = true`,
			gen, key, f.RunID); err != nil {
			t.Fatal(err)
		}
		ends[i] = tx
	}
	settled := [2]chan error{make(chan error, 1), make(chan error, 1)}
	for i, tx := range ends {
		go func() {
			_, err := tx.Exec(ctx, `SELECT baton_settle_run($1)`, f.RunID)
			settled[i] <- err
		}()
		if i == 0 {
			// The first settle has its lock, or waits for one, before the second asks.
			testenv.Eventually(t, 10*time.Second, "the first settle to lock the run or wait", func() bool {
				var n int
				err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
					WHERE c.relname = 'job_runs' AND l.mode = 'RowShareLock'`).Scan(&n)
				return err == nil && n > 0
			})
		}
	}
	if err := <-settled[0]; err != nil {
		t.Fatalf("the first shard's end could not settle its run (deadlocked with the second?): %v", err)
	}
	if err := ends[0].Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-settled[1]; err != nil {
		t.Fatalf("the second shard's end could not settle its run (deadlocked with the first?): %v", err)
	}
	if err := ends[1].Commit(ctx); err != nil {
		t.Fatal(err)
	}
	run, err := s.Run(ctx, f.RunID)
	if err != nil || run.Status != bt.StatusSucceeded {
		t.Fatalf("the run after both shards ended: %+v, %v; want SUCCEEDED", run, err)
	}
}
