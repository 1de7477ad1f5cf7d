package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// TokenStore keeps the API tokens (table api_tokens): authentication reads them, `baton token`
// and the admin token of a fresh install write them. Only hashes are stored, never a token.
type TokenStore struct {
	pool   *pgxpool.Pool
	listen *pgxpool.Pool // the pool ListenTokenRevocations LISTENs on; nil means pool
	actor  string        // who creates and revokes tokens, in the audit log; "" means "system"
}

// As returns the store on the same pools whose creations and revocations the audit log
// records as actor's ("cli:ada@ops-1", "server:baton-1").
func (s *TokenStore) As(actor string) *TokenStore {
	c := *s
	c.actor = actor
	return &c
}

// audit writes the audit row of a token's creation or revocation on q: the token's name and
// role, never the token or its hash.
func (s *TokenStore) audit(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, action, name string, args map[string]any, err error) error {
	actor := s.actor
	if actor == "" {
		actor = "system"
	}
	outcome := "ok"
	if err != nil {
		if outcome = string(bt.CodeOf(err)); outcome == "" {
			outcome = "error"
		}
	}
	args["name"] = name
	a := store.AuditRecord{Actor: actor, Action: action, Target: "token:" + name, Arguments: args, Outcome: outcome}.Sanitize()
	b, jerr := json.Marshal(a.Arguments)
	if jerr != nil {
		return jerr
	}
	_, xerr := q.Exec(ctx, `INSERT INTO audit_log (actor, action, target, arguments, outcome) VALUES ($1, $2, $3, $4, $5)`,
		a.Actor, a.Action, a.Target, b, a.Outcome)
	return xerr
}

// ListenOn makes ListenTokenRevocations LISTEN on pool, one that reaches PostgreSQL directly,
// for a store whose own pool goes through PgBouncer in transaction mode.
func (s *TokenStore) ListenOn(pool *pgxpool.Pool) { s.listen = pool }

// NewTokenStore returns a TokenStore on pool.
func NewTokenStore(pool *pgxpool.Pool) *TokenStore { return &TokenStore{pool: pool} }

// APIToken is an API token as stored: its SHA-256 hash, never the token itself.
type APIToken struct {
	ID         int64
	Name       string
	Role       string // viewer, operator, approver or admin
	Hash       string // SHA-256 of the token, lower-case hex
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	ExpiresAt  *time.Time // when the server stops accepting the token; nil: never
}

// Expired reports whether the token has expired at now.
func (t *APIToken) Expired(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

const tokenColumns = `id, name, role, token_hash, created_at, last_used_at, revoked_at, expires_at`

func scanToken(row pgx.Row) (*APIToken, error) {
	var t APIToken
	err := row.Scan(&t.ID, &t.Name, &t.Role, &t.Hash, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt, &t.ExpiresAt)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// CreateToken stores a new live token that expires ttl after its creation by the database's
// clock (ttl <= 0: never). A name that any token ever had, live or revoked, comes
// back as CONFLICT: names are never reissued, so that a name recorded in runs, the audit log
// and replay requests always means one token (migration 10 keeps every name issued). An
// unknown role comes back as INVALID_INPUT.
//
// The creation is audited (action createToken, target token:NAME) in its transaction, and a
// refusal after its own row; the audit row names the token and its role, never the token.
func (s *TokenStore) CreateToken(ctx context.Context, name, role, hash string, ttl time.Duration) (*APIToken, error) {
	args := map[string]any{"role": role}
	if ttl > 0 {
		args["expiresInSeconds"] = int64(ttl.Seconds())
	}
	refused := func(err error) (*APIToken, error) {
		if aerr := s.audit(ctx, s.pool, "createToken", name, args, err); aerr != nil {
			return nil, fmt.Errorf("%w (and its audit row: %v)", err, aerr)
		}
		return nil, err
	}
	switch role {
	case "viewer", "operator", "approver", "admin":
	default:
		return refused(&bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("unknown role %q", role), Field: "role"})
	}
	var ttlSeconds *float64
	if ttl > 0 {
		secs := ttl.Seconds()
		ttlSeconds = &secs
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("create token %s: %w", name, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	t, err := scanToken(tx.QueryRow(ctx, `INSERT INTO api_tokens (name, role, token_hash, expires_at)
		VALUES ($1, $2, $3, now() + make_interval(secs => $4))
		RETURNING `+tokenColumns, name, role, hash, ttlSeconds))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		_ = tx.Rollback(ctx)
		return refused(&bt.Error{Code: bt.CodeConflict, Field: "name",
			Message: fmt.Sprintf("a token named %q was issued before: token names are never reissued, even after revocation; pick another name", name)})
	}
	if err != nil {
		return nil, fmt.Errorf("create token %s: %w", name, err)
	}
	args["tokenId"] = t.ID
	if err := s.audit(ctx, tx, "createToken", name, args, nil); err != nil {
		return nil, fmt.Errorf("create token %s: audit: %w", name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("create token %s: %w", name, err)
	}
	return t, nil
}

// TokenByHash returns the token with the given hash unless it was revoked (NOT_FOUND), expired
// or not: the caller tells an expired token from an unknown one (APIToken.Expired).
func (s *TokenStore) TokenByHash(ctx context.Context, hash string) (*APIToken, error) {
	t, err := scanToken(s.pool.QueryRow(ctx, `SELECT `+tokenColumns+` FROM api_tokens
		WHERE token_hash = $1 AND revoked_at IS NULL`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "no live token with this hash")
	}
	return t, err
}

// TouchToken records that a token was used. It writes at most once a minute per token, so a
// busy client does not turn every request into a write.
func (s *TokenStore) TouchToken(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE api_tokens SET last_used_at = now()
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, id)
	return err
}

// Tokens lists every token, live and revoked, oldest first.
func (s *TokenStore) Tokens(ctx context.Context) ([]*APIToken, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+tokenColumns+` FROM api_tokens ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*APIToken, error) { return scanToken(r) })
}

// TokenRevokedChannel is the NOTIFY channel on which RevokeToken announces a revocation, with
// the token's id as the payload, so that every instance listening (ListenTokenRevocations)
// closes the token's connections at once instead of at its next periodic check.
const TokenRevokedChannel = "baton_token_revoked"

// RevokeToken revokes the live token with the given name, or returns NOT_FOUND. The revocation
// is announced on TokenRevokedChannel when it commits, and audited (action revokeToken, target
// token:NAME) in its transaction; a revocation of no live token is audited as NOT_FOUND.
func (s *TokenStore) RevokeToken(ctx context.Context, name string) (*APIToken, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("revoke token %s: %w", name, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	t, err := scanToken(tx.QueryRow(ctx, `UPDATE api_tokens SET revoked_at = now()
		WHERE name = $1 AND revoked_at IS NULL RETURNING `+tokenColumns, name))
	if errors.Is(err, pgx.ErrNoRows) {
		_ = tx.Rollback(ctx)
		err = bt.Errorf(bt.CodeNotFound, "no live token named %q", name)
		if aerr := s.audit(ctx, s.pool, "revokeToken", name, map[string]any{}, err); aerr != nil {
			return nil, fmt.Errorf("%w (and its audit row: %v)", err, aerr)
		}
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("revoke token %s: %w", name, err)
	}
	if err := s.audit(ctx, tx, "revokeToken", name, map[string]any{"role": t.Role, "tokenId": t.ID}, nil); err != nil {
		return nil, fmt.Errorf("revoke token %s: audit: %w", name, err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, TokenRevokedChannel, strconv.FormatInt(t.ID, 10)); err != nil {
		return nil, fmt.Errorf("revoke token %s: announce: %w", name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("revoke token %s: %w", name, err)
	}
	return t, nil
}

// LiveTokenIDs returns those of ids that belong to live tokens: neither revoked nor expired
// (by the database's clock).
func (s *TokenStore) LiveTokenIDs(ctx context.Context, ids []int64) (map[int64]bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM api_tokens WHERE id = ANY($1) AND revoked_at IS NULL
		AND (expires_at IS NULL OR expires_at > now())`, ids)
	if err != nil {
		return nil, fmt.Errorf("live tokens: %w", err)
	}
	live, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("live tokens: %w", err)
	}
	m := make(map[int64]bool, len(live))
	for _, id := range live {
		m[id] = true
	}
	return m, nil
}

// ListenTokenRevocations listens on TokenRevokedChannel on a connection of its own, taken from
// the pool for as long as it listens. It calls listening once the LISTEN is in place (a caller
// that may have missed announcements re-checks then), and revoked with the id of every token
// revoked from then on, in any schema of the database (ids are only unique within one, so
// revoked may hear of ids that are not this store's; treat each as a hint to re-check). It
// returns when ctx ends (nil) or the connection fails.
func (s *TokenStore) ListenTokenRevocations(ctx context.Context, listening func(), revoked func(id int64)) error {
	pool := s.pool
	if s.listen != nil {
		pool = s.listen
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("listen for token revocations: %w", err)
	}
	defer func() {
		// The connection goes back to the pool: it must not stay subscribed. A connection
		// that cannot say so is closed, and the pool drops it.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `UNLISTEN *`); err != nil {
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{TokenRevokedChannel}.Sanitize()); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("listen for token revocations: %w", err)
	}
	listening()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("listen for token revocations: %w", err)
		}
		if id, err := strconv.ParseInt(n.Payload, 10, 64); err == nil {
			revoked(id)
		}
	}
}
