package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// notifyStore holds the notification channels, their routes and the outbox
// (notification_channels, notification_routes, notification_outbox).
type notifyStore struct{ *Store }

const channelColumns = `id, name, kind, url, secret, rate_per_minute, burst, created_at, updated_at, updated_by`

func scanChannel(row pgx.Row) (store.StoredChannel, error) {
	var c store.StoredChannel
	var kind string
	err := row.Scan(&c.ID, &c.Name, &kind, &c.URL, &c.Secret, &c.RatePerMinute, &c.Burst, &c.CreatedAt, &c.UpdatedAt, &c.UpdatedBy)
	c.Kind = bt.ChannelKind(kind)
	return c, err
}

func (s notifyStore) NotificationChannels(ctx context.Context) ([]store.StoredChannel, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+channelColumns+` FROM notification_channels ORDER BY name`)
	return collect(rows, err, "read notification channels", scanChannel)
}

func (s notifyStore) CreateChannel(ctx context.Context, c store.StoredChannel, routes []bt.NotificationRoute, actor string) (store.StoredChannel, error) {
	var out store.StoredChannel
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanChannel(tx.QueryRow(ctx, `INSERT INTO notification_channels (name, kind, url, secret, rate_per_minute, burst, tokens, updated_by)
			VALUES ($1, $2, $3, $4, $5::int, $6::int, $6::int, $7) RETURNING `+channelColumns,
			c.Name, string(c.Kind), c.URL, c.Secret, c.RatePerMinute, c.Burst, actor))
		if err != nil {
			return err
		}
		return replaceRoutes(ctx, tx, out.ID, routes, actor)
	})
	if isUniqueViolation(err) {
		return out, bt.Errorf(bt.CodeConflict, "a channel named %q exists already", c.Name)
	}
	return out, err
}

// replaceRoutes makes routes channel id's only routes. A route the channel has already keeps
// its id; the others are removed or added.
func replaceRoutes(ctx context.Context, tx pgx.Tx, id int64, routes []bt.NotificationRoute, actor string) error {
	rows, err := tx.Query(ctx, `SELECT `+routeColumns+` FROM notification_routes WHERE channel_id = $1`, id)
	have, err := collect(rows, err, "read channel routes", scanRoute)
	if err != nil {
		return err
	}
	var drop []int64
	for _, h := range have {
		i := slices.IndexFunc(routes, func(r bt.NotificationRoute) bool { return sameRoute(r, h) })
		if i < 0 {
			drop = append(drop, h.ID)
		} else {
			routes = slices.Delete(slices.Clone(routes), i, i+1)
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM notification_routes WHERE id = ANY($1)`, drop); err != nil {
		return fmt.Errorf("replace channel %d's routes: %w", id, err)
	}
	for _, r := range routes {
		r.ChannelID, r.CreatedBy = id, actor
		if _, err := insertRoute(ctx, tx, r); err != nil {
			return fmt.Errorf("replace channel %d's routes: %w", id, err)
		}
	}
	return nil
}

// sameRoute reports whether a and b choose the same alarms.
func sameRoute(a, b bt.NotificationRoute) bool {
	return slices.Equal(a.Kinds, b.Kinds) && slices.Equal(a.Jobs, b.Jobs) && a.MinSeverity == b.MinSeverity
}

func (s notifyStore) UpdateChannel(ctx context.Context, id int64, actor string, change func(*store.StoredChannel) error,
	routes *[]bt.NotificationRoute) (store.StoredChannel, error) {
	var out store.StoredChannel
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		c, err := scanChannel(tx.QueryRow(ctx, `SELECT `+channelColumns+` FROM notification_channels WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return bt.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("read channel %d: %w", id, err)
		}
		if err := change(&c); err != nil {
			return err
		}
		out, err = scanChannel(tx.QueryRow(ctx, `UPDATE notification_channels SET name = $2, url = $3, secret = $4,
				rate_per_minute = $5::int, burst = $6::int, tokens = least(tokens, $6::int), updated_at = statement_timestamp(), updated_by = $7
			WHERE id = $1 RETURNING `+channelColumns, id, c.Name, c.URL, c.Secret, c.RatePerMinute, c.Burst, actor))
		if err != nil || routes == nil {
			return err
		}
		return replaceRoutes(ctx, tx, id, *routes, actor)
	})
	if isUniqueViolation(err) {
		return out, bt.Errorf(bt.CodeConflict, "a channel named %q exists already", out.Name)
	}
	return out, err
}

func (s notifyStore) DeleteChannel(ctx context.Context, id int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM notification_channels WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return bt.ErrNotFound
	}
	return err
}

const routeColumns = `id, channel_id, kinds, jobs, min_severity, created_at, created_by`

func scanRoute(row pgx.Row) (bt.NotificationRoute, error) {
	var r bt.NotificationRoute
	var kinds []string
	var sev string
	err := row.Scan(&r.ID, &r.ChannelID, &kinds, &r.Jobs, &sev, &r.CreatedAt, &r.CreatedBy)
	for _, k := range kinds {
		r.Kinds = append(r.Kinds, bt.AlertKind(k))
	}
	r.MinSeverity = bt.Severity(sev)
	return r, err
}

func (s notifyStore) NotificationRoutes(ctx context.Context, channelID int64) ([]bt.NotificationRoute, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+routeColumns+` FROM notification_routes WHERE $1 = 0 OR channel_id = $1 ORDER BY id`, channelID)
	return collect(rows, err, "read notification routes", scanRoute)
}

func (s notifyStore) CreateRoute(ctx context.Context, r bt.NotificationRoute) (bt.NotificationRoute, error) {
	out, err := insertRoute(ctx, s.pool, r)
	if violatedConstraint(err) == "notification_routes_channel_id_fkey" {
		return out, bt.ErrNotFound
	}
	return out, err
}

// insertRoute records r.
func insertRoute(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, r bt.NotificationRoute) (bt.NotificationRoute, error) {
	kinds := make([]string, len(r.Kinds))
	for i, k := range r.Kinds {
		kinds[i] = string(k)
	}
	jobs := r.Jobs
	if jobs == nil {
		jobs = []string{}
	}
	return scanRoute(q.QueryRow(ctx, `INSERT INTO notification_routes (channel_id, kinds, jobs, min_severity, created_by)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+routeColumns, r.ChannelID, kinds, jobs, string(r.MinSeverity), r.CreatedBy))
}

func (s notifyStore) DeleteRoute(ctx context.Context, id int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM notification_routes WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return bt.ErrNotFound
	}
	return err
}

func (s notifyStore) HasRoutes(ctx context.Context) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM notification_routes)`).Scan(&ok)
	return ok, err
}

const deliveryColumns = `o.id, o.episode_id, o.channel_id, o.kind, o.payload, o.status, o.attempts, o.next_attempt_at,
	coalesce(o.last_error, ''), o.created_at, o.sent_at`

func scanDelivery(row pgx.Row) (bt.Delivery, error) {
	var d bt.Delivery
	var kind, status string
	var payload []byte
	if err := row.Scan(&d.ID, &d.EpisodeID, &d.ChannelID, &kind, &payload, &status, &d.Attempts, &d.NextAttemptAt,
		&d.LastError, &d.CreatedAt, &d.SentAt); err != nil {
		return d, err
	}
	d.Kind, d.Status = bt.NotificationKind(kind), bt.DeliveryStatus(status)
	if err := json.Unmarshal(payload, &d.Alert); err != nil {
		return d, fmt.Errorf("read delivery %d's alarm: %w", d.ID, err)
	}
	return d, nil
}

func (s notifyStore) QueueTest(ctx context.Context, id int64, p bt.AlertPayload) (bt.Delivery, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return bt.Delivery{}, err
	}
	d, err := scanDelivery(s.pool.QueryRow(ctx, `INSERT INTO notification_outbox AS o (channel_id, kind, alert_key, payload)
		VALUES ($1, 'TEST', $2, $3) RETURNING `+deliveryColumns, id, p.Key, b))
	if violatedConstraint(err) == "notification_outbox_channel_id_fkey" {
		return d, bt.ErrNotFound
	}
	return d, err
}

// dueChannel is a channel with deliveries due, and what its token bucket allows now.
type dueChannel struct {
	channel store.StoredChannel
	tokens  float64
}

func (s notifyStore) ClaimDeliveries(ctx context.Context, max int, hold time.Duration) ([]store.ClaimedDelivery, int, error) {
	var out []store.ClaimedDelivery
	var pending int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = out[:0]
		// A channel's row is its bucket: locked while its deliveries are claimed, so instances
		// take turns on a channel (and skip one another's) and the bucket never goes below 0.
		rows, err := tx.Query(ctx, `SELECT `+channelColumns+`,
				least(burst, tokens + extract(epoch FROM statement_timestamp() - tokens_at) * rate_per_minute / 60.0)
			FROM notification_channels c
			WHERE EXISTS (SELECT 1 FROM notification_outbox o WHERE o.channel_id = c.id AND o.status = 'PENDING'
				AND o.next_attempt_at <= statement_timestamp())
			ORDER BY id FOR UPDATE SKIP LOCKED`)
		due, err := collect(rows, err, "read channels with deliveries due", func(row pgx.Row) (dueChannel, error) {
			var d dueChannel
			var kind string
			c := &d.channel
			err := row.Scan(&c.ID, &c.Name, &kind, &c.URL, &c.Secret, &c.RatePerMinute, &c.Burst, &c.CreatedAt, &c.UpdatedAt, &c.UpdatedBy, &d.tokens)
			c.Kind = bt.ChannelKind(kind)
			return d, err
		})
		if err != nil {
			return err
		}
		for _, d := range due {
			n := min(int(math.Floor(d.tokens)), max-len(out))
			if n <= 0 {
				continue
			}
			claimed, err := claimChannel(ctx, tx, d, n, hold)
			if err != nil {
				return err
			}
			out = append(out, claimed...)
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM notification_outbox WHERE status = 'PENDING'`).Scan(&pending)
	})
	slices.SortFunc(out, func(a, b store.ClaimedDelivery) int { return int(a.ID - b.ID) })
	return out, pending, err
}

// claimChannel claims up to n of d's due deliveries and takes their tokens from its bucket.
func claimChannel(ctx context.Context, tx pgx.Tx, d dueChannel, n int, hold time.Duration) ([]store.ClaimedDelivery, error) {
	rows, err := tx.Query(ctx, `UPDATE notification_outbox o SET attempts = attempts + 1,
			next_attempt_at = statement_timestamp() + make_interval(secs => $3)
		WHERE id IN (SELECT id FROM notification_outbox p
			WHERE p.channel_id = $1 AND p.status = 'PENDING' AND p.next_attempt_at <= statement_timestamp()
				AND NOT (p.kind = 'RESOLVE' AND EXISTS (SELECT 1 FROM notification_outbox t WHERE t.episode_id = p.episode_id
					AND t.channel_id = p.channel_id AND t.kind = 'TRIGGER' AND t.status = 'PENDING'))
			ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING `+deliveryColumns, d.channel.ID, n, hold.Seconds())
	list, err := collect(rows, err, "claim deliveries", scanDelivery)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `UPDATE notification_channels SET tokens = $2, tokens_at = statement_timestamp() WHERE id = $1`,
		d.channel.ID, d.tokens-float64(len(list))); err != nil {
		return nil, fmt.Errorf("take channel %d's tokens: %w", d.channel.ID, err)
	}
	out := make([]store.ClaimedDelivery, len(list))
	for i, dl := range list {
		out[i] = store.ClaimedDelivery{Delivery: dl, Channel: d.channel}
	}
	return out, nil
}

func (s notifyStore) FinishDelivery(ctx context.Context, id int64, errText string, retryIn time.Duration, giveUp bool) error {
	var err error
	switch {
	case errText == "":
		_, err = s.pool.Exec(ctx, `UPDATE notification_outbox SET status = 'SENT', sent_at = statement_timestamp(), last_error = NULL
			WHERE id = $1 AND status = 'PENDING'`, id)
	case giveUp:
		_, err = s.pool.Exec(ctx, `UPDATE notification_outbox SET status = 'FAILED', last_error = $2 WHERE id = $1 AND status = 'PENDING'`, id, errText)
	default:
		_, err = s.pool.Exec(ctx, `UPDATE notification_outbox SET last_error = $2,
			next_attempt_at = statement_timestamp() + make_interval(secs => $3) WHERE id = $1 AND status = 'PENDING'`, id, errText, retryIn.Seconds())
	}
	if err != nil {
		return fmt.Errorf("settle delivery %d: %w", id, err)
	}
	return nil
}

func (s notifyStore) Deliveries(ctx context.Context, f bt.DeliveryFilter) ([]bt.Delivery, error) {
	var q listQuery
	if f.ChannelID != 0 {
		q.where("o.channel_id = %s", f.ChannelID)
	}
	if f.Status != "" {
		q.where("o.status = %s", string(f.Status))
	}
	if f.BeforeID != 0 {
		q.where("o.id < %s", f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 20
	}
	rows, err := q.rows(ctx, s.pool, `SELECT `+deliveryColumns+` FROM notification_outbox o`, "o.id DESC", limit)
	return collect(rows, err, "list deliveries", scanDelivery)
}

// alertPayload is the jsonb of an episode h as its deliveries carry it (bt.AlertPayload).
const alertPayload = `jsonb_build_object('key', h.alert_key, 'episodeId', h.id, 'kind', h.kind, 'severity', h.severity,
	'jobName', h.job_name, 'runId', h.run_id, 'target', h.target, 'message', h.message, 'value', h.value,
	'since', h.since, 'firedAt', h.fired_at, 'resolvedAt', h.resolved_at)`

// queueNotifications queues, in SyncAlerts' transaction, a TRIGGER for every open episode that
// is not silenced, per channel its routes match, unless it has one; and a RESOLVE for every
// episode of resolved to every channel that had its TRIGGER. Episodes are recorded in turn
// (SyncAlerts' lock), so the NOT EXISTS sees every delivery queued before; the unique key
// (episode, channel, kind) holds regardless.
func queueNotifications(ctx context.Context, tx pgx.Tx, resolved []int64) error {
	if _, err := tx.Exec(ctx, `INSERT INTO notification_outbox (episode_id, channel_id, kind, alert_key, payload)
		SELECT DISTINCT ON (h.id, r.channel_id) h.id, r.channel_id, 'TRIGGER', h.alert_key, `+alertPayload+`
		FROM alert_history h
		JOIN notification_routes r ON (cardinality(r.kinds) = 0 OR h.kind = ANY(r.kinds))
			AND (cardinality(r.jobs) = 0 OR EXISTS (SELECT 1 FROM unnest(r.jobs) g WHERE h.job_name LIKE baton_glob_like(g)))
			AND (r.min_severity = 'WARNING' OR h.severity = 'CRITICAL')
		WHERE h.resolved_at IS NULL
			AND NOT EXISTS (SELECT 1 FROM alert_silences s WHERE s.alert_key = h.alert_key AND s.until > statement_timestamp())
			AND NOT EXISTS (SELECT 1 FROM notification_outbox o WHERE o.episode_id = h.id AND o.channel_id = r.channel_id AND o.kind = 'TRIGGER')
		ORDER BY h.id, r.channel_id
		ON CONFLICT (episode_id, channel_id, kind) DO NOTHING`); err != nil {
		return fmt.Errorf("queue alarm notifications: %w", err)
	}
	if len(resolved) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO notification_outbox (episode_id, channel_id, kind, alert_key, payload)
		SELECT o.episode_id, o.channel_id, 'RESOLVE', o.alert_key, `+alertPayload+`
		FROM notification_outbox o JOIN alert_history h ON h.id = o.episode_id
		WHERE o.kind = 'TRIGGER' AND o.episode_id = ANY($1)
		ON CONFLICT (episode_id, channel_id, kind) DO NOTHING`, resolved); err != nil {
		return fmt.Errorf("queue resolved alarm notifications: %w", err)
	}
	return nil
}
