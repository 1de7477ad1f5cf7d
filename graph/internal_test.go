package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2"

	"github.com/baton-run/baton/graph/generated"
	"github.com/baton-run/baton/graph/model"
	bt "github.com/baton-run/baton/runner/batontype"
)

func TestGlobalIDs(t *testing.T) {
	t.Parallel()
	id := globalIntID(typeRun, 42)
	if id != "UnVuOjQy" { // base64("Run:42"), as Relay clients expect
		t.Fatalf("global id %q", id)
	}
	if n, ok := decodeIntID(id, typeRun); !ok || n != 42 {
		t.Fatalf("decode: %d %v", n, ok)
	}
	for _, bad := range []string{"", "UnVuOjQy!", globalIntID(typeLedgerEntry, 42), globalID(typeRun, "x"), globalID(typeRun, "-1")} {
		if _, ok := decodeIntID(bad, typeRun); ok {
			t.Errorf("decodeIntID(%q) accepted", bad)
		}
	}
}

func TestCursors(t *testing.T) {
	t.Parallel()
	c := encodeCursor(cursorRuns, 1234)
	if id, ok := decodeCursor(c, cursorRuns); !ok || id != 1234 {
		t.Fatalf("round trip: %d %v", id, ok)
	}
	if _, ok := decodeCursor(c, cursorLedger); ok {
		t.Fatal("a runs cursor decodes as a ledger cursor")
	}
	ten, neg, big := 10, -1, MaxPageSize+1
	for _, tc := range []struct {
		first *int
		after *string
		ok    bool
		want  page
	}{
		{nil, nil, true, page{first: DefaultPageSize}},
		{&ten, &c, true, page{first: 10, after: 1234}},
		{&neg, nil, false, page{}},
		{&big, nil, false, page{}},
	} {
		p, err := parsePage(tc.first, tc.after, cursorRuns)
		if (err == nil) != tc.ok || (tc.ok && p != tc.want) {
			t.Errorf("parsePage(%v, %v) = %+v, %v", tc.first, tc.after, p, err)
		}
	}
}

func TestConnectionPages(t *testing.T) {
	t.Parallel()
	items := []int64{9, 8, 7}
	got, cursors, info := connection(items, page{first: 2, after: 10}, cursorRuns, func(v int64) int64 { return v })
	if len(got) != 2 || !info.HasNextPage || !info.HasPreviousPage || *info.EndCursor != cursors[1] {
		t.Fatalf("page %v, info %+v", got, info)
	}
	got, _, info = connection(items[:1], page{first: 2}, cursorRuns, func(v int64) int64 { return v })
	if len(got) != 1 || info.HasNextPage || info.HasPreviousPage {
		t.Fatalf("last page %v, info %+v", got, info)
	}
}

func TestRateLimiter(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	l := newRateLimiter(60, 2, func() time.Time { return now })
	if !l.allow(1) || !l.allow(1) || l.allow(1) {
		t.Fatal("a burst of 2 should pass, the 3rd not")
	}
	if !l.allow(2) {
		t.Fatal("buckets are per key")
	}
	now = now.Add(time.Second) // 60 a minute: one more
	if !l.allow(1) || l.allow(1) {
		t.Fatal("one token a second should refill")
	}
	now = now.Add(time.Hour)
	if !l.allow(1) || !l.allow(1) || l.allow(1) {
		t.Fatal("the bucket never holds more than the burst")
	}
	var nilLimiter *rateLimiter
	if !nilLimiter.allow(1) {
		t.Fatal("a nil limiter (disabled) must allow")
	}
}

func TestDepth(t *testing.T) {
	t.Parallel()
	schema := generated.NewExecutableSchema(generated.Config{}).Schema()
	for _, tc := range []struct {
		query string
		depth int
	}{
		{`{ me { name } }`, 2},
		{`{ jobs { nodes { activeRun { job { name } } } } }`, 5},
		{`query { ...F } fragment F on Query { jobs { edges { node { ... on Job { lastRun { id } } } } } }`, 5},
		{`{ __schema { types { fields { type { ofType { ofType { name } } } } } } }`, 1},
	} {
		doc, errs := gqlparser.LoadQuery(schema, tc.query)
		if errs != nil {
			t.Fatalf("%s: %v", tc.query, errs)
		}
		if d := depth(doc.Operations[0].SelectionSet, 0, map[string]bool{}); d != tc.depth {
			t.Errorf("depth(%s) = %d, want %d", tc.query, d, tc.depth)
		}
	}
	doc, _ := gqlparser.LoadQuery(schema, `mutation { a: pauseJob(input: {name: "x"}) { job { name } } b: pauseJob(input: {name: "y"}) { job { name } } }`)
	if n := countFields(doc.Operations[0].SelectionSet, map[string]bool{}); n != 2 {
		t.Errorf("countFields = %d, want 2", n)
	}
}

func TestErrorPresenter(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	present := presentError(slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	for _, tc := range []struct {
		err     error
		code    string
		message string
	}{
		{errors.New(`ERROR: relation "job_runs" does not exist (SQLSTATE 42P01)`), CodeInternal, "internal error (ref *)"},
		{fmt.Errorf("read run: %w", &bt.Error{Code: bt.CodeNotFound, Message: "run 4 not found", Err: errors.New("pgx: no rows")}), "NOT_FOUND", "run 4 not found"},
		{badInput("first must be at most 100"), CodeBadUserInput, "first must be at most 100"},
		{forbidden(model.RoleOperator), CodeForbidden, "this needs the OPERATOR role or higher"},
	} {
		got := present(ctx, tc.err)
		if got.Extensions["code"] != tc.code {
			t.Errorf("present(%v) = %q %v; want code %q", tc.err, got.Message, got.Extensions, tc.code)
		}
		if prefix, ok := strings.CutSuffix(tc.message, "*)"); ok {
			ref, _ := got.Extensions["ref"].(string)
			if got.Message != prefix+ref+")" || len(ref) != 8 {
				t.Errorf("present(%v) = %q %v; want %q with the ref", tc.err, got.Message, got.Extensions, tc.message)
			}
			// The full text is in the log, under the ref the client got.
			if !strings.Contains(logs.String(), "ref="+ref) || !strings.Contains(logs.String(), "SQLSTATE 42P01") {
				t.Errorf("log lacks ref %s and the error's text:\n%s", ref, logs.String())
			}
		} else if got.Message != tc.message {
			t.Errorf("present(%v) = %q; want %q", tc.err, got.Message, tc.message)
		}
	}
}

func TestRecoverPanic(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	err := recoverPanic(slog.New(slog.NewTextHandler(&logs, nil)))(context.Background(), "index out of range [3] with length 2")
	got := presentError(slog.New(slog.DiscardHandler))(context.Background(), err)
	ref, _ := got.Extensions["ref"].(string)
	if got.Message != "internal error (ref "+ref+")" || len(ref) != 8 || got.Extensions["code"] != CodeInternal {
		t.Fatalf("a panic is presented as %q %v", got.Message, got.Extensions)
	}
	if !strings.Contains(logs.String(), "ref="+ref) || !strings.Contains(logs.String(), "index out of range") {
		t.Fatalf("log lacks the panic under ref %s:\n%s", ref, logs.String())
	}
}

func TestUserErrors(t *testing.T) {
	t.Parallel()
	ue, err := userErrors(&bt.Error{Code: bt.CodeInvalidCron, Message: "bad", Field: "cron"}, "name")
	if err != nil || len(ue) != 1 || ue[0].Code != model.UserErrorCodeInvalidCron || *ue[0].Field != "cron" {
		t.Fatalf("%+v %v", ue, err)
	}
	ue, err = userErrors(bt.Errorf(bt.CodeNotFound, "no job"), "name")
	if err != nil || *ue[0].Field != "name" {
		t.Fatalf("%+v %v", ue, err)
	}
	// Codes that are not business refusals stay top-level errors.
	for _, e := range []error{bt.Errorf(bt.CodeLeaseLost, "x"), errors.New("boom")} {
		if ue, err := userErrors(e, ""); ue != nil || err == nil {
			t.Errorf("userErrors(%v) = %+v, %v", e, ue, err)
		}
	}
	// Every user error code the schema declares is a runner code.
	for _, c := range model.AllUserErrorCode {
		if _, ok := userErrorCodes[bt.Code(c)]; !ok {
			t.Errorf("schema code %s maps to no runner code", c)
		}
	}
}

// The prefetch of a page reads its fields' arguments as gqlgen hands them over: literals,
// variables (json.Number) and a single enum for a list.
func TestPrefetchArguments(t *testing.T) {
	t.Parallel()
	for _, v := range []any{int64(3), json.Number("3"), 3, float64(3)} {
		if n, ok := toInt(v); !ok || n != 3 {
			t.Errorf("toInt(%#v) = %d, %v", v, n, ok)
		}
	}
	if _, ok := toInt(json.Number("3.5")); ok {
		t.Error("toInt(3.5) is an int")
	}
	for _, v := range []any{"FAILED", []any{"FAILED"}} {
		if s, ok := statusesArg(v); !ok || len(s) != 1 || s[0] != bt.StatusFailed {
			t.Errorf("statusesArg(%#v) = %v, %v", v, s, ok)
		}
	}
}
