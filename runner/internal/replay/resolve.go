package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
	e, lerr := s.cfg.Store.LedgerEntry(ctx, entryID)
	if stored != "" && lerr == nil {
		if job, ok := s.cfg.JobFunc(e.JobName); ok && job.SensitiveEvidence {
			stored = s.cfg.MaskFunc(stored)
		}
	}
	args := map[string]any{"entryId": entryID, "resolution": res, "evidenceRef": stored, "note": note}
	if lerr == nil {
		entryArgs(args, e)
	}
	if err := checkResolution(res, evidenceRef, note); err != nil {
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

// checkResolution checks a resolution by hand: a known resolution, a note, evidence for
// CONFIRMED, and their lengths.
func checkResolution(res Resolution, evidenceRef, note string) error {
	switch {
	case res != ResolveConfirmed && res != ResolveNotApplied:
		return &bt.Error{Code: bt.CodeInvalidInput, Message: "resolution must be CONFIRMED or NOT_APPLIED", Field: "resolution"}
	case note == "":
		return &bt.Error{Code: bt.CodeInvalidInput, Message: "say why in a note", Field: "note"}
	case res == ResolveConfirmed && evidenceRef == "":
		return &bt.Error{Code: bt.CodeInvalidInput, Message: "confirming an effect needs an evidence reference", Field: "evidenceRef"}
	case utf8.RuneCountInString(note) > 2000 || utf8.RuneCountInString(evidenceRef) > 500:
		return &bt.Error{Code: bt.CodeInvalidInput, Message: "note (2000) or evidence reference (500) too long"}
	}
	return nil
}

// entryArgs adds to an audit row's arguments what names entry e beside its id: its job,
// target key, step and generation.
func entryArgs(args map[string]any, e *bt.LedgerEntry) map[string]any {
	args["job"], args["targetKey"], args["step"], args["generation"] = e.JobName, e.Target, e.Step, e.Generation
	return args
}

// memberArgs names each member of a bulk operation for its audit row: its id, and its job,
// target key, step and generation when the entry exists.
func memberArgs(ctx context.Context, st interface {
	LedgerEntry(ctx context.Context, id int64) (*bt.LedgerEntry, error)
}, ids []int64) []map[string]any {
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		out[i] = map[string]any{"entryId": id}
		if e, err := st.LedgerEntry(ctx, id); err == nil {
			entryArgs(out[i], e)
		}
	}
	return out
}

// MaxMembers bounds the members of one bulk operation.
const MaxMembers = 100

// checkMembers refuses a bulk operation without members or with more than MaxMembers.
func checkMembers(ids []int64) error {
	switch {
	case len(ids) == 0:
		return &bt.Error{Code: bt.CodeInvalidInput, Message: "select at least one entry", Field: "entryIds"}
	case len(ids) > MaxMembers:
		return &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("at most %d entries at once, not %d", MaxMembers, len(ids)), Field: "entryIds"}
	}
	return nil
}

// bulkAudit is the one audit row of a bulk operation: its arguments, the members done and each
// member refused with its code. The outcome is success when every member was done, PARTIAL
// when some were, REFUSED when none was.
func bulkAudit(actor, action string, args map[string]any, done []int64, failed map[int64]error, success string) store.AuditRecord {
	out := maps.Clone(args)
	out["done"] = done
	refused := make([]map[string]any, 0, len(failed))
	ids := slices.Sorted(maps.Keys(failed))
	for _, id := range ids {
		refused = append(refused, map[string]any{"entryId": id, "code": string(bt.CodeOf(failed[id]))})
	}
	out["refused"] = refused
	outcome := success
	switch {
	case len(failed) > 0 && len(done) > 0:
		outcome = "PARTIAL"
	case len(failed) > 0:
		outcome = "REFUSED"
	}
	return store.AuditRecord{Actor: NameOr(actor), Action: action, Target: membersTarget(args["entryIds"].([]int64)), Arguments: out, Outcome: outcome}
}

// membersTarget names a bulk operation's members in the audit log's form: ledger:3,5,9.
func membersTarget(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return "ledger:" + strings.Join(parts, ",")
}

// ResolveAmbiguousMany resolves many AMBIGUOUS_EFFECT entries by hand with one note (and, for
// CONFIRMED, one evidence reference), audited as one row (action "resolveAmbiguousMany") that
// lists every member and what became of it. The checks of ResolveAmbiguous refuse the whole
// call; past them, each entry still in doubt is resolved and each that is not (NOT_FOUND,
// CONFLICT) is reported in failed and left as it was.
func (s *Service) ResolveAmbiguousMany(ctx context.Context, entryIDs []int64, res Resolution, evidenceRef, note, actor string) ([]*bt.LedgerEntry, map[int64]error, error) {
	evidenceRef, note = strings.TrimSpace(evidenceRef), strings.TrimSpace(note)
	stored := evidenceRef
	if stored != "" && s.anySensitive(ctx, entryIDs) {
		stored = s.cfg.MaskFunc(stored)
	}
	args := map[string]any{"entryIds": entryIDs, "resolution": res, "evidenceRef": stored, "note": note}
	err := checkMembers(entryIDs)
	if err == nil {
		err = checkResolution(res, evidenceRef, note)
	}
	if err == nil {
		args["members"] = memberArgs(ctx, s.cfg.Store, entryIDs)
	}
	if err != nil {
		s.cfg.AuditFunc(ctx, actor, "resolveAmbiguousMany", "", args, err)
		return nil, nil, err
	}
	var ev *string
	if stored != "" {
		ev = &stored
	}
	return s.cfg.Store.ResolveAmbiguousMany(ctx, entryIDs, bt.LedgerState(res), ev, "resolved by hand: "+note,
		func(done []int64, failed map[int64]error) store.AuditRecord {
			return bulkAudit(actor, "resolveAmbiguousMany", args, done, failed, string(res))
		})
}

// anySensitive reports whether any of the entries belongs to a job whose evidence is masked.
func (s *Service) anySensitive(ctx context.Context, ids []int64) bool {
	seen := map[string]bool{}
	for _, id := range ids {
		e, err := s.cfg.Store.LedgerEntry(ctx, id)
		if err != nil || seen[e.JobName] {
			continue
		}
		seen[e.JobName] = true
		if job, ok := s.cfg.JobFunc(e.JobName); ok && job.SensitiveEvidence {
			return true
		}
	}
	return false
}
