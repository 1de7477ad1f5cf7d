package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// downstreamStore holds the downstreams' limits (downstreams) and the live instances
// (runner_instances).
type downstreamStore struct{ *Store }

const downstreamColumns = `name, rate_per_second, burst, concurrency, quota, quota_window, paused, defaults, version, updated_at, updated_by`

func (s downstreamStore) DeclareDownstreams(ctx context.Context, ds []bt.Downstream) error {
	if len(ds) == 0 {
		return nil
	}
	names, defaults := make([]string, len(ds)), make([][]byte, len(ds))
	for i, d := range ds {
		b, err := json.Marshal(d.Defaults)
		if err != nil {
			return err
		}
		names[i], defaults[i] = d.Name, b
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO downstreams (name, rate_per_second, burst, concurrency, quota, quota_window, paused, defaults)
		SELECT n, nullif((d->>'ratePerSecond')::float8, 0), nullif((d->>'burst')::int, 0), nullif((d->>'concurrency')::int, 0),
			nullif((d->>'quota')::bigint, 0), coalesce(nullif(d->>'quotaWindow', ''), 'HOUR'), coalesce((d->>'paused')::bool, false), d
		FROM unnest($1::text[], $2::jsonb[]) AS x(n, d)
		ON CONFLICT (name) DO NOTHING`, names, defaults)
	return err
}

func (s downstreamStore) Downstreams(ctx context.Context) ([]bt.DownstreamState, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+downstreamColumns+` FROM downstreams ORDER BY name`)
	return collect(rows, err, "read downstreams", scanDownstream)
}

func (s downstreamStore) UpdateDownstream(ctx context.Context, name, actor string, change func(*bt.DownstreamLimits) error) (*bt.DownstreamState, error) {
	var out *bt.DownstreamState
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		d, err := scanDownstream(tx.QueryRow(ctx, `SELECT `+downstreamColumns+` FROM downstreams WHERE name = $1 FOR UPDATE`, name))
		if errors.Is(err, pgx.ErrNoRows) {
			return bt.ErrNotFound
		}
		if err != nil {
			return err
		}
		lim := d.Limits
		if err := change(&lim); err != nil {
			return err
		}
		window := lim.QuotaWindow
		if window == "" {
			window = bt.QuotaHour
		}
		d, err = scanDownstream(tx.QueryRow(ctx, `UPDATE downstreams SET rate_per_second = nullif($2::float8, 0),
				burst = nullif($3::int, 0), concurrency = nullif($4::int, 0), quota = nullif($5::bigint, 0),
				quota_window = $6, paused = $7, version = version + 1, updated_at = statement_timestamp(), updated_by = $8
			WHERE name = $1 RETURNING `+downstreamColumns,
			name, lim.RatePerSecond, lim.Burst, lim.Concurrency, lim.Quota, string(window), lim.Paused, actor))
		out = &d
		return err
	})
	return out, err
}

func scanDownstream(row pgx.Row) (bt.DownstreamState, error) {
	var d bt.DownstreamState
	var rate *float64
	var burst, conc *int
	var quota *int64
	var window string
	var defaults []byte
	if err := row.Scan(&d.Name, &rate, &burst, &conc, &quota, &window, &d.Limits.Paused, &defaults, &d.Version, &d.UpdatedAt, &d.UpdatedBy); err != nil {
		return d, err
	}
	if rate != nil {
		d.Limits.RatePerSecond = *rate
	}
	if burst != nil {
		d.Limits.Burst = *burst
	}
	if conc != nil {
		d.Limits.Concurrency = *conc
	}
	if quota != nil {
		d.Limits.Quota = *quota
	}
	d.Limits.QuotaWindow = bt.QuotaWindow(window)
	if err := json.Unmarshal(defaults, &d.Defaults); err != nil {
		return d, err
	}
	if d.Defaults.QuotaWindow == "" {
		d.Defaults.QuotaWindow = bt.QuotaHour
	}
	return d, nil
}

func (s downstreamStore) BeatInstance(ctx context.Context, instance string, degradedSince *time.Time, alive time.Duration, jobs []string) (store.Beat, error) {
	var b store.Beat
	err := s.pool.QueryRow(ctx, `WITH beat AS (
			INSERT INTO runner_instances (instance, degraded_since) VALUES ($1, $2)
			ON CONFLICT (instance) DO UPDATE SET heartbeat_at = statement_timestamp(), degraded_since = $2
			RETURNING instance, degraded_since
		), others AS (
			SELECT instance, degraded_since FROM runner_instances
			WHERE instance <> $1 AND heartbeat_at > statement_timestamp() - make_interval(secs => $3)
		), live AS (SELECT * FROM beat UNION ALL SELECT * FROM others)
		SELECT count(*), coalesce(array_agg(instance ORDER BY instance) FILTER (WHERE degraded_since IS NOT NULL), '{}'),
			(SELECT coalesce(sum(version), 0) + count(*) * 1000000007 FROM downstreams)::bigint,
			EXISTS (SELECT 1 FROM job_runs WHERE status = 'PENDING' AND job_name = ANY($4)
				AND (auto_resume_at IS NULL OR auto_resume_at <= statement_timestamp()))
		FROM live`,
		instance, degradedSince, alive.Seconds(), jobs).Scan(&b.Live, &b.Degraded, &b.Limits, &b.ShardsPending)
	return b, err
}

func (s downstreamStore) LeaveInstance(ctx context.Context, instance string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM runner_instances WHERE instance = $1`, instance)
	return err
}
