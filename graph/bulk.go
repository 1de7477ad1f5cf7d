package graph

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/baton-run/baton/graph/model"
	bt "github.com/baton-run/baton/runner/batontype"
)

// Bulk mutations (resolveAmbiguousMany, reconcileEntries) act on each member alone: a member
// refused gets its own user error, with the field entryIds[i] of its place in the input, and
// the others go on.

// bulkIDs decodes a bulk mutation's LedgerEntry ids: the ids, each id's place in the input
// (the first, for an id given twice), and a user error for each malformed one.
func bulkIDs(gids []string) (ids []int64, index map[int64]int, bad []*model.UserError) {
	index = map[int64]int{}
	for i, g := range gids {
		id, ok := decodeIntID(g, typeLedgerEntry)
		if !ok {
			bad = append(bad, userError(model.UserErrorCodeInvalidInput, memberField(i), "%q is not a LedgerEntry id", g)...)
			continue
		}
		if _, seen := index[id]; !seen {
			index[id] = i
			ids = append(ids, id)
		}
	}
	return ids, index, bad
}

func memberField(i int) string { return fmt.Sprintf("entryIds[%d]", i) }

// memberErrors turns the members a bulk operation refused into user errors, in input order
// (index nil: members chosen by the server, blamed on entryIds as a whole).
func memberErrors(failed map[int64]error, index map[int64]int) []*model.UserError {
	ids := slices.Collect(maps.Keys(failed))
	slices.SortFunc(ids, func(a, b int64) int {
		if index != nil {
			return index[a] - index[b]
		}
		return int(a - b)
	})
	out := []*model.UserError{}
	for _, id := range ids {
		err := failed[id]
		code, ok := userErrorCodes[bt.CodeOf(err)]
		if !ok {
			code = model.UserErrorCodeInvalidInput
		}
		field := "entryIds"
		if index != nil {
			field = memberField(index[id])
		}
		msg := err.Error()
		if be := (*bt.Error)(nil); errors.As(err, &be) {
			msg = be.Message
		}
		out = append(out, &model.UserError{Code: code, Field: &field, Message: fmt.Sprintf("entry %s: %s", globalIntID(typeLedgerEntry, id), msg)})
	}
	return out
}

// sortByMember orders user errors by the member they blame (entryIds[i]), errors of the whole
// call first.
func sortByMember(ues []*model.UserError) []*model.UserError {
	place := func(u *model.UserError) int {
		var i int
		if u.Field == nil {
			return -1
		}
		if _, err := fmt.Sscanf(*u.Field, "entryIds[%d]", &i); err != nil {
			return -1
		}
		return i
	}
	slices.SortStableFunc(ues, func(a, b *model.UserError) int { return place(a) - place(b) })
	return ues
}
