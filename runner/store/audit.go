package store

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Audit is the audit log: a row for every mutation.
type Audit interface {
	// Audit inserts one audit row. Implementations store Sanitize's form of the record.
	Audit(ctx context.Context, a AuditRecord) error
	// AuditLog lists audit rows matching f, newest first.
	AuditLog(ctx context.Context, f bt.AuditFilter) ([]bt.AuditEntry, error)
}

// AuditRecord is an audit row to insert.
type AuditRecord struct {
	Actor, Action, Target string
	Arguments             map[string]any
	Outcome               string
}

// Limits of what one audit row stores.
const (
	// AuditArgumentsMax bounds an entry's arguments as stored JSON, in bytes.
	AuditArgumentsMax = 8 << 10
	// AuditStringMax bounds each string argument once the whole exceeds AuditArgumentsMax.
	AuditStringMax = 256
	// AuditTargetMax bounds the target column.
	AuditTargetMax = 512
	// AuditPreviewMax bounds the preview kept of arguments that stay too large.
	AuditPreviewMax = 2 << 10
)

// Redacted replaces every secret value in stored audit arguments.
const Redacted = "[REDACTED]"

// Keys of the markers Sanitize adds to arguments it had to cut.
const (
	AuditTruncatedKey = bt.AuditTruncatedKey
	AuditBytesKey     = "_originalBytes"
	AuditPreviewKey   = "_preview"
)

// secretKeys are the argument names (lower case, letters only) whose values are secrets.
var secretKeys = []string{"token", "password", "passwd", "secret", "authorization", "apikey", "credential", "credentials", "cookie", "privatekey", "accesskey", "bearer"}

// isSecretKey reports whether an argument named k holds a secret: its name, without case or
// punctuation, is or ends with one of secretKeys ("token", "apiToken", "client_secret"), so
// that an identity such as "tokenId" or "idempotencyKey" stays readable.
func isSecretKey(k string) bool {
	var b strings.Builder
	for _, r := range strings.ToLower(k) {
		if r >= 'a' && r <= 'z' {
			b.WriteRune(r)
		}
	}
	n := b.String()
	for _, s := range secretKeys {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// apiToken matches a Baton API token ("bt_" and 32 random bytes, base64url) inside any text.
var apiToken = regexp.MustCompile(`bt_[A-Za-z0-9_-]{43}`)

// redactValue hides credentials in a string whatever its name: an Authorization header value
// whole, and every Baton API token it contains.
func redactValue(s string) string {
	l := strings.ToLower(strings.TrimSpace(s))
	if strings.HasPrefix(l, "bearer ") || strings.HasPrefix(l, "basic ") {
		return Redacted
	}
	return apiToken.ReplaceAllString(s, Redacted)
}

// Sanitize returns the record as the audit log stores it: secrets redacted, the target cut to
// AuditTargetMax, and arguments whose JSON exceeds AuditArgumentsMax cut down, first by
// shortening long strings, then to a preview, and marked with AuditTruncatedKey and the
// original size in AuditBytesKey. It never fails: arguments that do not encode are replaced
// by a marker.
func (a AuditRecord) Sanitize() AuditRecord {
	out := a
	if len(out.Target) > AuditTargetMax {
		out.Target = cutUTF8(out.Target, AuditTargetMax) + "…"
	}
	args, _ := redact(a.Arguments).(map[string]any)
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		out.Arguments = map[string]any{AuditTruncatedKey: true, AuditPreviewKey: fmt.Sprintf("arguments not encodable: %v", err)}
		return out
	}
	if len(b) <= AuditArgumentsMax {
		out.Arguments = args
		return out
	}
	size := len(b)
	short, _ := shorten(args).(map[string]any)
	short[AuditTruncatedKey], short[AuditBytesKey] = true, size
	if sb, err := json.Marshal(short); err == nil && len(sb) <= AuditArgumentsMax {
		out.Arguments = short
		return out
	}
	out.Arguments = map[string]any{AuditTruncatedKey: true, AuditBytesKey: size, AuditPreviewKey: cutUTF8(string(b), AuditPreviewMax)}
	return out
}

// redact copies v (decoded JSON or Go maps and slices of it) with secret values replaced.
func redact(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			if isSecretKey(k) && e != nil && e != "" {
				m[k] = Redacted
				continue
			}
			m[k] = redact(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = redact(e)
		}
		return l
	case string:
		return redactValue(x)
	case nil:
		return nil
	default:
		// A typed value (a struct, a typed slice): redact its JSON form.
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		var d any
		if json.Unmarshal(b, &d) != nil {
			return x
		}
		switch d.(type) {
		case map[string]any, []any, string:
			return redact(d)
		}
		return x
	}
}

// shorten copies v with every string cut to AuditStringMax bytes and every list to 32 items.
func shorten(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = shorten(e)
		}
		return m
	case []any:
		n := min(len(x), 32)
		l := make([]any, n, n+1)
		for i := range n {
			l[i] = shorten(x[i])
		}
		if len(x) > n {
			l = append(l, fmt.Sprintf("… %d more", len(x)-n))
		}
		return l
	case string:
		if len(x) > AuditStringMax {
			return cutUTF8(x, AuditStringMax) + fmt.Sprintf("… (%d bytes)", len(x))
		}
		return x
	}
	return v
}

// cutUTF8 returns s cut to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
