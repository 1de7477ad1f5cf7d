package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/migrations"
)

// TestOneRunPerFireMigration: migration 9 builds its index on a database where a fire already
// ran twice (as the daylight-saving fall back made happen), keeping the instant on the first run.
func TestOneRunPerFireMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.Schema(t)
	for {
		v, _, err := migrations.Version(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if v < 9 {
			break
		}
		if err := migrations.Down(ctx, url, 1); err != nil {
			t.Fatal(err)
		}
	}
	pool := testenv.Pool(t, url)
	if _, err := pool.Exec(ctx, `INSERT INTO job_settings (name, cron) VALUES ('twice', '30 1 * * *')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token,
			lease_seconds, lease_until, generation, scheduled_for, finished_at)
		SELECT 'twice', 'SUCCEEDED', 'SCHEDULED', 'RESTART', 'scheduler', 't', md5(g::text), 30, now(), g, $1, now()
		FROM generate_series(1, 3) g`, time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, url); err != nil {
		t.Fatalf("migrate up over a fire that ran three times: %v", err)
	}
	var first int64
	var kept int
	if err := pool.QueryRow(ctx, `SELECT min(id), count(*) FILTER (WHERE scheduled_for IS NOT NULL) FROM job_runs`).Scan(&first, &kept); err != nil {
		t.Fatal(err)
	}
	var holder int64
	if err := pool.QueryRow(ctx, `SELECT id FROM job_runs WHERE scheduled_for IS NOT NULL`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if kept != 1 || holder != first {
		t.Fatalf("%d runs keep the fire's instant (run %d), want 1 (run %d, the first)", kept, holder, first)
	}
}
