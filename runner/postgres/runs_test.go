package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/postgres"
	"github.com/baton-run/baton/runner/store"
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
