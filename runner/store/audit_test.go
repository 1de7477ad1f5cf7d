package store_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-run/baton/runner/store"
)

func TestAuditSanitizeRedactsSecrets(t *testing.T) {
	t.Parallel()
	token := "bt_" + strings.Repeat("A", 43)
	in := store.AuditRecord{Action: "x", Arguments: map[string]any{
		"token":          "s3cret",
		"apiToken":       "s3cret",
		"client_secret":  "s3cret",
		"Password":       "s3cret",
		"authorization":  "Bearer abc",
		"header":         "Bearer abc",
		"note":           "pasted " + token + " by mistake",
		"nested":         map[string]any{"list": []any{map[string]any{"refreshToken": "s3cret"}}},
		"tokenId":        "t-17",
		"idempotencyKey": "k-1",
		"reason":         "fine",
	}}
	out := in.Sanitize()
	want := map[string]any{
		"token": store.Redacted, "apiToken": store.Redacted, "client_secret": store.Redacted, "Password": store.Redacted,
		"authorization": store.Redacted, "header": store.Redacted, "note": "pasted " + store.Redacted + " by mistake",
		"nested":  map[string]any{"list": []any{map[string]any{"refreshToken": store.Redacted}}},
		"tokenId": "t-17", "idempotencyKey": "k-1", "reason": "fine",
	}
	got, _ := json.Marshal(out.Arguments)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Fatalf("sanitized\n%s\nwant\n%s", got, exp)
	}
	if strings.Contains(string(got), "s3cret") || strings.Contains(string(got), token) {
		t.Fatalf("a secret survived: %s", got)
	}
	if in.Arguments["token"] != "s3cret" {
		t.Fatal("Sanitize changed the caller's map")
	}
}

func TestAuditSanitizeCapsArguments(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 50<<10)
	cases := []struct {
		name        string
		args        map[string]any
		wantCut     bool
		wantPreview bool
	}{
		{"small stays whole", map[string]any{"reason": "short", "n": 3}, false, false},
		{"one long string is shortened", map[string]any{"reason": big, "name": "job"}, true, false},
		{"many strings become a preview", func() map[string]any {
			m := map[string]any{}
			for i := range 200 {
				m[strings.Repeat("k", 40)+string(rune('a'+i%26))+strings.Repeat("z", i)] = strings.Repeat("v", 200)
			}
			return m
		}(), true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := store.AuditRecord{Target: "job:" + big, Arguments: c.args}.Sanitize()
			b, err := json.Marshal(out.Arguments)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > store.AuditArgumentsMax {
				t.Fatalf("stored %d bytes, want at most %d", len(b), store.AuditArgumentsMax)
			}
			if len(out.Target) > store.AuditTargetMax+len("…") {
				t.Fatalf("target of %d bytes", len(out.Target))
			}
			cut, _ := out.Arguments[store.AuditTruncatedKey].(bool)
			if cut != c.wantCut {
				t.Fatalf("truncated %v, want %v: %s", cut, c.wantCut, b)
			}
			_, preview := out.Arguments[store.AuditPreviewKey]
			if preview != c.wantPreview {
				t.Fatalf("preview %v, want %v", preview, c.wantPreview)
			}
			if c.wantCut {
				if n, _ := out.Arguments[store.AuditBytesKey].(int); n <= store.AuditArgumentsMax {
					t.Fatalf("original size %v, want the size asked", out.Arguments[store.AuditBytesKey])
				}
			} else if out.Arguments["reason"] != "short" {
				t.Fatalf("small arguments changed: %s", b)
			}
			if c.name == "one long string is shortened" && out.Arguments["name"] != "job" {
				t.Fatalf("short fields must survive shortening: %s", b)
			}
		})
	}
}
