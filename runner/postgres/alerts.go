package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
)

// alertStore holds the alarms' episodes (alert_history) and silences (alert_silences).
type alertStore struct{ *Store }

// alertColumns reads an episode with its current silence (h: alert_history, s: the silence
// joined on the key while it lasts).
const alertColumns = `h.id, h.alert_key, h.kind, h.severity, h.job_name, h.run_id, h.target, h.message, h.value, h.since,
	h.fired_at, h.resolved_at, h.acked_by, h.acked_at, s.until, s.silenced_by`

const alertFrom = ` FROM alert_history h
	LEFT JOIN alert_silences s ON s.alert_key = h.alert_key AND s.until > statement_timestamp()`

func scanAlert(row pgx.Row) (bt.Alert, error) {
	var a bt.Alert
	var kind string
	var ackedBy, silencedBy *string
	err := row.Scan(&a.EpisodeID, &a.ID, &kind, &a.Severity, &a.JobName, &a.RunID, &a.Target, &a.Message, &a.Value, &a.Since,
		&a.FiredAt, &a.ResolvedAt, &ackedBy, &a.AckedAt, &a.SilencedUntil, &silencedBy)
	a.Kind = bt.AlertKind(kind)
	if ackedBy != nil {
		a.AckedBy = *ackedBy
	}
	if silencedBy != nil {
		a.SilencedBy = *silencedBy
	}
	return a, err
}

// SyncAlerts records the alarms active now and returns the open episodes.
func (s alertStore) SyncAlerts(ctx context.Context, active []bt.Alert) ([]bt.Alert, error) {
	n := len(active)
	keys, kinds, sevs, jobs, msgs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	runs, targets, values, since := make([]*int64, n), make([]*string, n), make([]float64, n), make([]time.Time, n)
	for i, a := range active {
		keys[i], kinds[i], sevs[i], jobs[i], msgs[i] = a.ID, string(a.Kind), a.Severity, a.JobName, a.Message
		runs[i], targets[i], values[i], since[i] = a.RunID, a.Target, a.Value, a.Since
	}
	var out []bt.Alert
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Instances sync in turn: each sees the episodes the previous one left, so two that
		// see the same new alarm open it once, and none resolves what another just opened
		// from older facts than its own.
		if _, err := tx.Exec(ctx, `LOCK TABLE alert_history IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `UPDATE alert_history SET resolved_at = statement_timestamp()
			WHERE resolved_at IS NULL AND NOT (alert_key = ANY($1::text[])) RETURNING id`, keys)
		resolved, err := collect(rows, err, "resolve alarms", scanOne[int64])
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO alert_history (alert_key, kind, severity, job_name, run_id, target, message, value, since)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::float8[], $9::timestamptz[])
			ON CONFLICT (alert_key) WHERE resolved_at IS NULL DO UPDATE
			SET severity = excluded.severity, message = excluded.message, value = excluded.value, since = excluded.since,
				last_seen_at = statement_timestamp()`,
			keys, kinds, sevs, jobs, runs, targets, msgs, values, since); err != nil {
			return fmt.Errorf("record alarms: %w", err)
		}
		// The deliveries of what opened and resolved commit with it, once for the cluster.
		if err := queueNotifications(ctx, tx, resolved); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT `+alertColumns+alertFrom+` WHERE h.resolved_at IS NULL ORDER BY h.alert_key`)
		out, err = collect(rows, err, "read open alarms", scanAlert)
		return err
	})
	return out, err
}

// openAlert reads the open episode of key.
func openAlert(ctx context.Context, q pgx.Tx, key string) (*bt.Alert, error) {
	a, err := scanAlert(q.QueryRow(ctx, `SELECT `+alertColumns+alertFrom+` WHERE h.alert_key = $1 AND h.resolved_at IS NULL`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "alarm %q is not active", key)
	}
	if err != nil {
		return nil, fmt.Errorf("read alarm %q: %w", key, err)
	}
	return &a, nil
}

// AckAlert acknowledges the open episode of key.
func (s alertStore) AckAlert(ctx context.Context, key, actor string) (*bt.Alert, error) {
	var out *bt.Alert
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE alert_history SET acked_by = $2, acked_at = statement_timestamp()
			WHERE alert_key = $1 AND resolved_at IS NULL AND acked_at IS NULL`, key, actor); err != nil {
			return fmt.Errorf("acknowledge alarm %q: %w", key, err)
		}
		var err error
		out, err = openAlert(ctx, tx, key)
		return err
	})
	return out, err
}

// SilenceAlert hides key until d from now, or lifts its silence when d <= 0.
func (s alertStore) SilenceAlert(ctx context.Context, key string, d time.Duration, actor, reason string) (*bt.Alert, error) {
	var out *bt.Alert
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := openAlert(ctx, tx, key); err != nil {
			return err
		}
		var err error
		if d <= 0 {
			_, err = tx.Exec(ctx, `DELETE FROM alert_silences WHERE alert_key = $1`, key)
		} else {
			_, err = tx.Exec(ctx, `INSERT INTO alert_silences (alert_key, until, silenced_by, reason)
				VALUES ($1, statement_timestamp() + make_interval(secs => $2), $3, $4)
				ON CONFLICT (alert_key) DO UPDATE SET until = excluded.until, silenced_by = excluded.silenced_by,
					reason = excluded.reason, created_at = statement_timestamp()`, key, d.Seconds(), actor, reason)
		}
		if err != nil {
			return fmt.Errorf("silence alarm %q: %w", key, err)
		}
		out, err = openAlert(ctx, tx, key)
		return err
	})
	return out, err
}

// AlertHistory lists alarm episodes, newest first.
func (s alertStore) AlertHistory(ctx context.Context, f bt.AlertHistoryFilter) ([]bt.Alert, error) {
	var q listQuery
	if f.JobName != "" {
		q.where("h.job_name = %s", f.JobName)
	}
	if f.Key != "" {
		q.where("h.alert_key = %s", f.Key)
	}
	if f.BeforeID != 0 {
		q.where("h.id < %s", f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 20
	}
	rows, err := q.rows(ctx, s.pool, `SELECT `+alertColumns+alertFrom, "h.id DESC", limit)
	return collect(rows, err, "list alarm history", scanAlert)
}
