package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
)

func TestPublicErrorText(t *testing.T) {
	t.Parallel()
	pgErr := &pgconn.PgError{Code: "42P01", Message: `relation "secret_table" does not exist`}
	for _, tc := range []struct {
		name     string
		err      error
		internal bool
		want     string // the text shown; for an internal error, a part of the text logged
	}{
		{"job's own error", errors.New("payee 17 has no account"), false, "payee 17 has no account"},
		{"classified", Rejected(errors.New("card declined")), false, "card declined"},
		{"classified database error", Transient(fmt.Errorf("provider busy: %w", pgErr)), false, ""},
		{"job's network error", fmt.Errorf("call provider: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}), false, ""},
		{"database error", fmt.Errorf("write results: %w", pgErr), true, "secret_table"},
		{"joined database error", errors.Join(errors.New("a"), pgErr), true, "secret_table"},
		{"redis error", fmt.Errorf("lock: %w", redis.Nil), true, "redis: nil"},
		{"panic", panicError{"runtime error: index out of range"}, true, "index out of range"},
	} {
		var logs bytes.Buffer
		got := PublicErrorText(slog.New(slog.NewTextHandler(&logs, nil)), tc.err)
		if !tc.internal {
			want := tc.want
			if want == "" {
				want = tc.err.Error()
			}
			if got != want || logs.Len() != 0 {
				t.Errorf("%s: %q (log %q), want %q", tc.name, got, logs.String(), want)
			}
			continue
		}
		ref, ok := strings.CutPrefix(got, "internal error (ref ")
		ref, ok2 := strings.CutSuffix(ref, ")")
		if !ok || !ok2 || len(ref) != 8 {
			t.Errorf("%s: %q, want an internal error with a ref", tc.name, got)
			continue
		}
		if !strings.Contains(logs.String(), "ref="+ref) || !strings.Contains(logs.String(), tc.want) {
			t.Errorf("%s: log %q lacks the ref and the text", tc.name, logs.String())
		}
	}
	long := errors.New(strings.Repeat("x", 3000))
	if got := PublicErrorText(slog.New(slog.DiscardHandler), long); len(got) != maxErrorText {
		t.Errorf("a long message is %d bytes, want %d", len(got), maxErrorText)
	}
}
