package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// auditStore holds the audit log (audit_log).
type auditStore struct{ *Store }

func insertAudit(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, a store.AuditRecord) error {
	// Capped and redacted here, on the one path every audit row takes, so no secret and no
	// oversized payload is ever stored.
	a = a.Sanitize()
	b, err := json.Marshal(a.Arguments)
	if err != nil {
		return fmt.Errorf("encode audit arguments: %w", err)
	}
	_, err = q.Exec(ctx, `INSERT INTO audit_log (actor, action, target, arguments, outcome) VALUES ($1, $2, $3, $4, $5)`,
		a.Actor, a.Action, a.Target, b, a.Outcome)
	return err
}

// Audit inserts one audit row.
func (s auditStore) Audit(ctx context.Context, a store.AuditRecord) error {
	return insertAudit(ctx, s.pool, a)
}

// AuditLog lists audit rows matching f, newest first.
func (s auditStore) AuditLog(ctx context.Context, f bt.AuditFilter) ([]bt.AuditEntry, error) {
	var q listQuery
	for _, c := range []struct{ column, value string }{{"actor", f.Actor}, {"action", f.Action}, {"target", f.Target}, {"outcome", f.Outcome}} {
		if c.value != "" {
			q.where(c.column+" = %s", c.value)
		}
	}
	if f.Since != nil {
		q.where("created_at >= %s", *f.Since)
	}
	if f.Until != nil {
		q.where("created_at < %s", *f.Until)
	}
	if f.BeforeID != 0 {
		q.where("id < %s", f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 20
	}
	rows, err := q.rows(ctx, s.pool, `SELECT id, actor, action, target, arguments, outcome, created_at FROM audit_log`,
		"id DESC", limit)
	return collect(rows, err, "list audit log", scanAuditEntry)
}

func scanAuditEntry(row pgx.Row) (bt.AuditEntry, error) {
	var e bt.AuditEntry
	err := row.Scan(&e.ID, &e.Actor, &e.Action, &e.Target, &e.Arguments, &e.Outcome, &e.CreatedAt)
	return e, err
}
