package graph

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Global ids are Relay's: base64 of "Type:key". Clients treat them as opaque.

// Types of global ids.
const (
	typeJob           = "Job"
	typeRun           = "Run"
	typeLedgerEntry   = "LedgerEntry"
	typeReplayRequest = "ReplayRequest"
	typeAuditEntry    = "AuditEntry"
)

// globalID returns the global id of the object of type typ with key key.
func globalID(typ, key string) string {
	return base64.StdEncoding.EncodeToString([]byte(typ + ":" + key))
}

func globalIntID(typ string, id int64) string { return globalID(typ, strconv.FormatInt(id, 10)) }

// parseGlobalID splits a global id into its type and key.
func parseGlobalID(id string) (typ, key string, ok bool) {
	raw, err := base64.StdEncoding.DecodeString(id)
	if err != nil {
		return "", "", false
	}
	typ, key, ok = strings.Cut(string(raw), ":")
	// A key is a job name or a number: never a NUL, never broken UTF-8 (PostgreSQL refuses both).
	if !ok || typ == "" || key == "" || strings.ContainsRune(key, 0) || !utf8.ValidString(key) {
		return "", "", false
	}
	return typ, key, true
}

// decodeIntID returns the numeric key of a global id of type typ.
func decodeIntID(id, typ string) (int64, bool) {
	t, key, ok := parseGlobalID(id)
	if !ok || t != typ {
		return 0, false
	}
	n, err := strconv.ParseInt(key, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// mustIntID is decodeIntID for query arguments: a malformed id is a BAD_USER_INPUT error.
func mustIntID(id, typ, arg string) (int64, error) {
	n, ok := decodeIntID(id, typ)
	if !ok {
		return 0, badInput("%s is not a %s id", arg, typ)
	}
	return n, nil
}

// RunID returns the global id of run id, for clients (such as the CLI) that know a run by
// its number.
func RunID(id int64) string { return globalIntID(typeRun, id) }

// RunNumber returns the run number in a global Run id.
func RunNumber(id string) (int64, bool) { return decodeIntID(id, typeRun) }
