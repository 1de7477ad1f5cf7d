package runner

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// Record records a mutation in audit_log. The runner audits its own control operations; the
// API audits what it refuses before reaching them.
func (s *AuditService) Record(ctx context.Context, actor, action, target string, args map[string]any, outcome string) error {
	return s.r.store.Audit(context.WithoutCancel(ctx), store.AuditRecord{Actor: actorOr(actor), Action: action, Target: target, Arguments: args, Outcome: outcome})
}

// audit records an operation's outcome: "ok" or the error's code.
func (r *Runner) audit(ctx context.Context, actor, action, target string, args map[string]any, err error) {
	outcome := "ok"
	if err != nil {
		outcome = string(bt.CodeOf(err))
		if outcome == "" {
			outcome = "error"
		}
	}
	if aerr := r.Audit().Record(ctx, actor, action, target, args, outcome); aerr != nil {
		r.log.Error("write audit row", "action", action, "err", aerr)
	}
}

// Log lists audit entries matching f, newest first, by keyset on id.
func (s *AuditService) Log(ctx context.Context, f bt.AuditFilter) ([]bt.AuditEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 20
	}
	return s.r.store.AuditLog(ctx, f)
}
