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
	args := a.Arguments
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
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

// AuditLog lists audit rows, newest first, before beforeID (0: from the newest).
func (s auditStore) AuditLog(ctx context.Context, beforeID int64, limit int) ([]bt.AuditEntry, error) {
	var q listQuery
	if beforeID != 0 {
		q.where("id < %s", beforeID)
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
