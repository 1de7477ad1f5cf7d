package replay

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// Resolution is how an ambiguous target is resolved.
type Resolution string

// Resolutions.
const (
	ResolveConfirmed  Resolution = "CONFIRMED"
	ResolveNotApplied Resolution = "NOT_APPLIED"
)

// ResolveAmbiguous resolves an AMBIGUOUS_EFFECT entry by hand. CONFIRMED needs an evidence
// reference; both need a note. Audited.
func (s *Service) ResolveAmbiguous(ctx context.Context, entryID int64, res Resolution, evidenceRef, note, actor string) (*bt.LedgerEntry, error) {
	target := fmt.Sprintf("ledger:%d", entryID)
	evidenceRef, note = strings.TrimSpace(evidenceRef), strings.TrimSpace(note)
	// What reaches the ledger and the audit log: masked for a job with sensitive evidence.
	stored := evidenceRef
	if stored != "" {
		if e, lerr := s.cfg.Store.LedgerEntry(ctx, entryID); lerr == nil {
			if job, ok := s.cfg.JobFunc(e.JobName); ok && job.SensitiveEvidence {
				stored = s.cfg.MaskFunc(stored)
			}
		}
	}
	args := map[string]any{"entryId": entryID, "resolution": res, "evidenceRef": stored, "note": note}
	var err error
	switch {
	case res != ResolveConfirmed && res != ResolveNotApplied:
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "resolution must be CONFIRMED or NOT_APPLIED", Field: "resolution"}
	case note == "":
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "say why in a note", Field: "note"}
	case res == ResolveConfirmed && evidenceRef == "":
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "confirming an effect needs an evidence reference", Field: "evidenceRef"}
	case utf8.RuneCountInString(note) > 2000 || utf8.RuneCountInString(evidenceRef) > 500:
		err = &bt.Error{Code: bt.CodeInvalidInput, Message: "note (2000) or evidence reference (500) too long"}
	}
	if err != nil {
		s.cfg.AuditFunc(ctx, actor, "resolveAmbiguous", target, args, err)
		return nil, err
	}
	var ev *string
	if stored != "" {
		ev = &stored
	}
	e, err := s.cfg.Store.ResolveAmbiguous(ctx, entryID, bt.LedgerState(res), nil, ev, "resolved by hand: "+note,
		store.AuditRecord{Actor: NameOr(actor), Action: "resolveAmbiguous", Target: target, Arguments: args, Outcome: string(res)})
	if err != nil {
		s.cfg.AuditFunc(ctx, actor, "resolveAmbiguous", target, args, err)
	}
	return e, err
}
