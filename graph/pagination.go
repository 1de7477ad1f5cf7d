package graph

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/baton-run/baton/graph/model"
)

// Connection pages: `first` defaults to DefaultPageSize and may not exceed MaxPageSize. Pages
// are keyset on an id (or, for jobs, the name): a cursor is an opaque encoding of the last key
// seen, tagged with the kind of list so that a cursor of one list cannot be used on another.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Cursor kinds.
const (
	cursorRuns      = "runs"
	cursorRunErrors = "run-errors"
	cursorLedger    = "ledger"
	cursorReplays   = "replays"
	cursorAudit     = "audit"
	cursorJobs      = "jobs"
)

// page is a parsed first/after pair.
type page struct {
	first int
	after int64 // 0: from the start
}

// parseFirst validates first: DefaultPageSize when absent, 0 to MaxPageSize.
func parseFirst(first *int) (int, error) {
	if first == nil {
		return DefaultPageSize, nil
	}
	switch {
	case *first < 0:
		return 0, badInput("first must not be negative")
	case *first > MaxPageSize:
		return 0, badInput("first must be at most %d, not %d", MaxPageSize, *first)
	}
	return *first, nil
}

// parsePage validates first and after for a list of kind.
func parsePage(first *int, after *string, kind string) (page, error) {
	n, err := parseFirst(first)
	p := page{first: n}
	if err != nil {
		return p, err
	}
	if after != nil && *after != "" {
		id, ok := decodeCursor(*after, kind)
		if !ok {
			return p, badInput("after is not a cursor of this list")
		}
		p.after = id
	}
	return p, nil
}

func encodeCursor(kind string, id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("c1:" + kind + ":" + strconv.FormatInt(id, 10)))
}

func decodeCursor(c, kind string) (int64, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(raw), "c1:"+kind+":")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || id <= 0 {
		return 0, false
	}
	return id, true
}

// connection builds a page of items fetched with limit first+1: the extra item, if present,
// only tells that there is a next page.
func connection[T any](items []T, p page, kind string, id func(T) int64) (edges []T, cursors []string, info *model.PageInfo) {
	info = &model.PageInfo{HasPreviousPage: p.after != 0}
	if len(items) > p.first {
		items = items[:p.first]
		info.HasNextPage = true
	}
	cursors = make([]string, len(items))
	for i, it := range items {
		cursors[i] = encodeCursor(kind, id(it))
	}
	if len(cursors) > 0 {
		info.StartCursor, info.EndCursor = &cursors[0], &cursors[len(cursors)-1]
	}
	return items, cursors, info
}

// keyPage is a parsed first/after pair of a list keyed by a string (jobs, by name).
type keyPage struct {
	first int
	after string // "": from the start
}

// parseKeyPage validates first and after for a list of kind keyed by strings.
func parseKeyPage(first *int, after *string, kind string) (keyPage, error) {
	n, err := parseFirst(first)
	p := keyPage{first: n}
	if err != nil {
		return p, err
	}
	if after != nil && *after != "" {
		key, ok := decodeKeyCursor(*after, kind)
		if !ok {
			return p, badInput("after is not a cursor of this list")
		}
		p.after = key
	}
	return p, nil
}

func encodeKeyCursor(kind, key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("c1:" + kind + ":" + key))
}

func decodeKeyCursor(c, kind string) (string, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", false
	}
	key, ok := strings.CutPrefix(string(raw), "c1:"+kind+":")
	if !ok || key == "" {
		return "", false
	}
	return key, true
}

// keyConnection is connection for a list keyed by strings.
func keyConnection[T any](items []T, p keyPage, kind string, key func(T) string) (edges []T, cursors []string, info *model.PageInfo) {
	info = &model.PageInfo{HasPreviousPage: p.after != ""}
	if len(items) > p.first {
		items = items[:p.first]
		info.HasNextPage = true
	}
	cursors = make([]string, len(items))
	for i, it := range items {
		cursors[i] = encodeKeyCursor(kind, key(it))
	}
	if len(cursors) > 0 {
		info.StartCursor, info.EndCursor = &cursors[0], &cursors[len(cursors)-1]
	}
	return items, cursors, info
}
