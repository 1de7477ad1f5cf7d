package store

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Audit is the audit log: a row for every mutation.
type Audit interface {
	// Audit inserts one audit row.
	Audit(ctx context.Context, a AuditRecord) error
	// AuditLog lists audit rows, newest first, before beforeID (0: from the newest).
	AuditLog(ctx context.Context, beforeID int64, limit int) ([]bt.AuditEntry, error)
}

// AuditRecord is an audit row to insert.
type AuditRecord struct {
	Actor, Action, Target string
	Arguments             map[string]any
	Outcome               string
}
