package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	bt "github.com/baton-run/baton/runner/batontype"
)

// APIToken is an API token as stored: its SHA-256 hash, never the token itself.
type APIToken struct {
	ID         int64
	Name       string
	Role       string // viewer, operator, approver or admin
	Hash       string // SHA-256 of the token, lower-case hex
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

const tokenColumns = `id, name, role, token_hash, created_at, last_used_at, revoked_at`

func scanToken(row pgx.Row) (*APIToken, error) {
	var t APIToken
	err := row.Scan(&t.ID, &t.Name, &t.Role, &t.Hash, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// CreateToken stores a new live token. A live token with the same name already existing comes
// back as CONFLICT; an unknown role as INVALID_INPUT.
func (s *Store) CreateToken(ctx context.Context, name, role, hash string) (*APIToken, error) {
	switch role {
	case "viewer", "operator", "approver", "admin":
	default:
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("unknown role %q", role), Field: "role"}
	}
	t, err := scanToken(s.pool.QueryRow(ctx, `INSERT INTO api_tokens (name, role, token_hash) VALUES ($1, $2, $3)
		RETURNING `+tokenColumns, name, role, hash))
	if isUniqueViolation(err) {
		return nil, &bt.Error{Code: bt.CodeConflict, Message: fmt.Sprintf("a live token named %q already exists", name), Field: "name"}
	}
	if err != nil {
		return nil, fmt.Errorf("create token %s: %w", name, err)
	}
	return t, nil
}

// TokenByHash returns the live (not revoked) token with the given hash, or NOT_FOUND.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*APIToken, error) {
	t, err := scanToken(s.pool.QueryRow(ctx, `SELECT `+tokenColumns+` FROM api_tokens
		WHERE token_hash = $1 AND revoked_at IS NULL`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "no live token with this hash")
	}
	return t, err
}

// TouchToken records that a token was used. It writes at most once a minute per token, so a
// busy client does not turn every request into a write.
func (s *Store) TouchToken(ctx context.Context, id int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE api_tokens SET last_used_at = now()
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, id)
	return err
}

// Tokens lists every token, live and revoked, oldest first.
func (s *Store) Tokens(ctx context.Context) ([]*APIToken, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+tokenColumns+` FROM api_tokens ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*APIToken, error) { return scanToken(r) })
}

// RevokeToken revokes the live token with the given name, or returns NOT_FOUND.
func (s *Store) RevokeToken(ctx context.Context, name string) (*APIToken, error) {
	t, err := scanToken(s.pool.QueryRow(ctx, `UPDATE api_tokens SET revoked_at = now()
		WHERE name = $1 AND revoked_at IS NULL RETURNING `+tokenColumns, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, bt.Errorf(bt.CodeNotFound, "no live token named %q", name)
	}
	return t, err
}
