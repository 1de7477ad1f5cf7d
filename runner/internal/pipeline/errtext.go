package pipeline

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"reflect"
	"strings"

	bt "github.com/baton-run/baton/runner/batontype"
)

// What a client of the API may read of an error. Run messages, the ledger's last_error and a
// run's error rows are shown to operators through GraphQL; they carry what the job said about
// a failure, never the text of the runner's own machinery (SQL, connection strings, driver
// internals, panic values). Such an error is logged in full under a short random reference,
// and the stored text is only "internal error (ref …)", which an operator can look up in the
// log.
//
// The rules, in order:
//   - an error the job classified (Transient, Rejected, Conflict, Ambiguous, Policy) is the
//     job's own message: shown, truncated;
//   - a panic, or an error whose chain holds an error of a database or Redis driver (a
//     *pgconn.PgError, a pgconn connection or I/O error, a go-redis error) or of the runner's
//     store, is internal;
//   - anything else is the job author's message: shown, truncated. A job's own network error
//     (an HTTP call to its provider) is the job's message, and the operator needs it.

// maxErrorText bounds a stored error message.
const maxErrorText = 2000

// internalPackages are the import paths whose error types are never shown to clients.
var internalPackages = []string{
	"github.com/jackc/pgx",
	"github.com/redis/go-redis",
	"github.com/baton-run/baton/runner/postgres",
	"github.com/baton-run/baton/runner/redislock",
}

// InternalMessage is the text that stands for an internal error logged under ref.
func InternalMessage(ref string) string { return "internal error (ref " + ref + ")" }

// NewErrorRef returns a short random reference for an internal error: eight hex digits, enough
// to find one log line among a day's.
func NewErrorRef() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// isInternalError reports whether err's text must not reach clients (see the rules above).
func isInternalError(err error) bool {
	if err == nil || isClassified(err) {
		return false
	}
	var p panicError
	if errors.As(err, &p) {
		return true
	}
	return chainHas(err, func(e error) bool {
		t := reflect.TypeOf(e)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		pkg := t.PkgPath()
		for _, p := range internalPackages {
			if pkg == p || strings.HasPrefix(pkg, p+"/") {
				return true
			}
		}
		return false
	})
}

// chainHas reports whether pred holds for err or any error it wraps (both Unwrap forms).
func chainHas(err error, pred func(error) bool) bool {
	for err != nil {
		if pred(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if chainHas(e, pred) {
					return true
				}
			}
			return false
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return false
		}
	}
	return false
}

// PublicErrorText returns the text of err that may be stored where clients read it: the job's
// message, truncated, or, for an internal error, InternalMessage with a fresh reference under
// which log records the full text.
func PublicErrorText(log *slog.Logger, err error) string {
	if err == nil {
		return ""
	}
	if !isInternalError(err) {
		return bt.Truncate(err.Error(), maxErrorText)
	}
	ref := NewErrorRef()
	if log == nil {
		log = slog.Default()
	}
	log.Error("internal error", "ref", ref, "err", err.Error())
	return InternalMessage(ref)
}
