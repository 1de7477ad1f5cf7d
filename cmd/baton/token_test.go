package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/server/httpapi"
)

func TestTokenCommandRoundTrip(t *testing.T) {
	t.Parallel()
	url := testenv.Schema(t)
	store := httpapi.NewTokenStore(testenv.Pool(t, url))
	ctx := context.Background()
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := tokenCommand(ctx, append(args, "--database-url", url), &out, &errOut)
		return out.String(), err
	}

	out, err := run("create", "--name", "ci-bot", "--role", "operator")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	token := lines[len(lines)-1]
	if !strings.HasPrefix(token, httpapi.TokenPrefix) || len(token) < 40 {
		t.Fatalf("last line %q is not a token", token)
	}
	stored, err := store.TokenByHash(ctx, httpapi.HashToken(token))
	if err != nil || stored.Name != "ci-bot" || stored.Role != "operator" {
		t.Fatalf("stored token: %+v, %v", stored, err)
	}
	if strings.Contains(stored.Hash, token) || stored.Hash == token {
		t.Fatal("the token itself is stored")
	}

	if _, err := run("create", "--name", "ci-bot", "--role", "viewer"); err == nil {
		t.Fatal("a second live token with the same name was created")
	}
	if _, err := run("create", "--name", "x", "--role", "superuser"); err == nil {
		t.Fatal("an unknown role was accepted")
	}
	if _, err := run("create", "--role", "viewer"); err == nil {
		t.Fatal("a token without a name was created")
	}

	out, err = run("list")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "ci-bot") || !strings.Contains(out, "operator") || !strings.Contains(out, "live") || strings.Contains(out, token) {
		t.Fatalf("list:\n%s", out)
	}

	if _, err := run("revoke", "--name", "ci-bot"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.TokenByHash(ctx, httpapi.HashToken(token)); bt.CodeOf(err) != bt.CodeNotFound {
		t.Fatalf("revoked token still resolves: %v", err)
	}
	out, _ = run("list")
	if !strings.Contains(out, "revoked") {
		t.Fatalf("list after revoke:\n%s", out)
	}
	if _, err := run("revoke", "--name", "ci-bot"); err == nil {
		t.Fatal("revoking a revoked token succeeded")
	}
	// The name stays taken: it names the revoked token in runs and the audit log.
	if _, err := run("create", "--name", "ci-bot", "--role", "admin"); err == nil {
		t.Fatal("a revoked token's name was issued again")
	}
}

// A token name is never issued twice, even after revocation: the requester of a replay is
// named by their token, and a second token of that name would pass for them. The refusal is
// a CONFLICT on the field name, and nothing is stored.
func TestTokenNameNeverReissued(t *testing.T) {
	t.Parallel()
	url := testenv.Schema(t)
	pool := testenv.Pool(t, url)
	store := httpapi.NewTokenStore(pool)
	ctx := context.Background()
	first, _, err := httpapi.CreateToken(ctx, store, "alice", "OPERATOR")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.RevokeToken(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	_, _, err = httpapi.CreateToken(ctx, store, "alice", "APPROVER")
	var be *bt.Error
	if !errors.As(err, &be) || be.Code != bt.CodeConflict || be.Field != "name" || !strings.Contains(be.Message, "never reissued") {
		t.Fatalf("reissuing a revoked token's name: %v, want CONFLICT on name saying names are never reissued", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM api_tokens WHERE name = 'alice'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d tokens named alice (%v), want the revoked one only", n, err)
	}
	if _, err := store.TokenByHash(ctx, httpapi.HashToken(first)); bt.CodeOf(err) != bt.CodeNotFound {
		t.Fatalf("the revoked token resolves again: %v", err)
	}
	var out, errOut bytes.Buffer
	err = tokenCommand(ctx, []string{"create", "--name", "alice", "--role", "admin", "--database-url", url}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "never reissued") {
		t.Fatalf("token create of a used name: %v, want the refusal", err)
	}
}

// TestTokenRevokeAnnounces checks that `token revoke` announces the revocation on
// httpapi.TokenRevokedChannel, which running instances listen to.
func TestTokenRevokeAnnounces(t *testing.T) {
	t.Parallel()
	url := testenv.Schema(t)
	pool := testenv.Pool(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := tokenCommand(ctx, []string{"create", "--name", "announced", "--role", "viewer", "--database-url", url}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := pool.QueryRow(ctx, `SELECT id FROM api_tokens WHERE name = 'announced'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+httpapi.TokenRevokedChannel); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), "UNLISTEN *") }()
	if err := tokenCommand(ctx, []string{"revoke", "--name", "announced", "--database-url", url}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	// Other tests revoke tokens in the same database (ids repeat across schemas): wait for
	// this one's id.
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("no announcement of token %d: %v", id, err)
		}
		if n.Payload == strconv.FormatInt(id, 10) {
			return
		}
	}
}

// `token create --expires` stores a lifetime of whole days or hours and refuses anything
// else; the server refuses an expired token with a message of its own, over HTTP and on a
// WebSocket (close code 4401), at connection and once it expires while open.
func TestTokenExpiry(t *testing.T) {
	t.Parallel()
	started, ticks := make(chan string, 10), make(chan struct{}, 10)
	ctx, _, tokens, srv, url := cliServerDB(t, nil, gatedJob("cli-expiry", started, ticks))
	pool := testenv.Pool(t, url)
	create := func(args ...string) cliResult {
		return baton(ctx, append([]string{"token", "create", "--database-url", url}, args...)...)
	}
	lifetime := func(name string) (secs int64, ok bool) {
		err := pool.QueryRow(ctx, `SELECT extract(epoch FROM expires_at - created_at)::bigint FROM api_tokens WHERE name = $1`, name).Scan(&secs)
		return secs, err == nil
	}
	lastLine := func(s string) string {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		return lines[len(lines)-1]
	}

	res := create("--name", "ci-month", "--role", "operator", "--expires", "30d")
	if res.code != exitOK || !strings.Contains(res.stdout, "it expires at ") {
		t.Fatalf("create --expires 30d: exit %d (%v)\n%s", res.code, res.err, res.stdout)
	}
	month := lastLine(res.stdout)
	if secs, ok := lifetime("ci-month"); !ok || secs != 30*24*3600 {
		t.Fatalf("--expires 30d stored a lifetime of %ds (%t), want 30 days", secs, ok)
	}
	if res := create("--name", "ci-half-day", "--role", "viewer", "--expires", "12h"); res.code != exitOK {
		t.Fatalf("create --expires 12h: %v", res.err)
	}
	if secs, ok := lifetime("ci-half-day"); !ok || secs != 12*3600 {
		t.Fatalf("--expires 12h stored a lifetime of %ds (%t), want 12 hours", secs, ok)
	}
	if res := create("--name", "ci-forever", "--role", "viewer"); res.code != exitOK || !strings.Contains(res.stdout, "it never expires") {
		t.Fatalf("create without --expires: exit %d (%v)\n%s", res.code, res.err, res.stdout)
	}
	for _, junk := range []string{"30", "d", "0d", "-1d", "1.5d", "30m", "3651d", "1w", "+3d", "12H", "99999999999999999999h", " 3d"} {
		res := create("--name", "ci-junk", "--role", "viewer", "--expires", junk)
		if res.code != exitUsage || !strings.Contains(res.err.Error(), "--expires must be a whole number of days or hours") {
			t.Errorf("--expires %q: exit %d (%v), want exit 2 and the refusal", junk, res.code, res.err)
		}
	}
	var junkRows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM api_tokens WHERE name = 'ci-junk'`).Scan(&junkRows); err != nil || junkRows != 0 {
		t.Fatalf("%d tokens named ci-junk (%v), want none", junkRows, err)
	}

	// A live token with a lifetime works; one past its expiry is refused as expired.
	if res := baton(ctx, "jobs", "list", "--url", srv.URL, "--token", month); res.code != exitOK {
		t.Fatalf("jobs list with a token that expires in 30 days: %v", res.err)
	}
	res = create("--name", "ci-old", "--role", "operator", "--expires", "1h")
	old := lastLine(res.stdout)
	if _, err := pool.Exec(ctx, `UPDATE api_tokens SET created_at = now() - interval '2 hours', expires_at = now() - interval '1 hour'
		WHERE name = 'ci-old'`); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/graphql", strings.NewReader(`{"query":"{ me { name } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+old)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Errors []gqlError `json:"errors"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusUnauthorized || len(body.Errors) != 1 || body.Errors[0].Extensions.Code != "UNAUTHENTICATED" ||
		!strings.HasPrefix(body.Errors[0].Message, "token expired at ") || !strings.Contains(body.Errors[0].Message, `"ci-old"`) {
		t.Fatalf("an expired token over HTTP: %d %+v (%v), want 401 UNAUTHENTICATED \"token expired at …\"", resp.StatusCode, body, err)
	}
	if res := baton(ctx, "jobs", "list", "--url", srv.URL, "--token", old); res.code != exitAuth || !strings.Contains(res.err.Error(), "UNAUTHENTICATED: token expired at ") {
		t.Fatalf("jobs list with an expired token: exit %d (%v), want %d and token expired", res.code, res.err, exitAuth)
	}
	if res := baton(ctx, "jobs", "list", "--url", srv.URL, "--token", "bt_unknown"); res.code != exitAuth || !strings.Contains(res.err.Error(), "unknown or revoked token") {
		t.Fatalf("jobs list with an unknown token: exit %d (%v), want %d and unknown or revoked", res.code, res.err, exitAuth)
	}
	if res := baton(ctx, "jobs", "watch", "1", "--url", srv.URL, "--token", old); res.code != exitAuth ||
		!strings.Contains(res.err.Error(), "4401 unauthenticated: token expired at ") {
		t.Fatalf("jobs watch with an expired token: exit %d (%v), want %d and a 4401 close saying the token expired", res.code, res.err, exitAuth)
	}

	// token list says which tokens expire and which have expired.
	res = baton(ctx, "token", "list", "--database-url", url)
	for _, want := range []string{"EXPIRES", "ci-forever", "never"} {
		if !strings.Contains(res.stdout, want) {
			t.Fatalf("token list lacks %q:\n%s", want, res.stdout)
		}
	}
	var list tokensJSON
	res = baton(ctx, "token", "list", "--output", "json", "--database-url", url)
	if err := json.Unmarshal([]byte(res.stdout), &list); err != nil {
		t.Fatalf("token list --output json: %v\n%s", err, res.stdout)
	}
	status := map[string]tokenJSON{}
	for _, tk := range list.Tokens {
		status[tk.Name] = tk
	}
	if tk := status["ci-old"]; tk.Status != "expired" || tk.ExpiresAt == nil {
		t.Fatalf("ci-old in token list: %+v, want expired", tk)
	}
	if tk := status["ci-month"]; tk.Status != "live" || tk.ExpiresAt == nil || tk.LastUsedAt == nil {
		t.Fatalf("ci-month in token list: %+v, want live, expiring, used", tk)
	}
	if tk := status["ci-forever"]; tk.Status != "live" || tk.ExpiresAt != nil {
		t.Fatalf("ci-forever in token list: %+v, want live and never expiring", tk)
	}

	// A WebSocket open when its token expires is closed with 4401 and the expiry.
	short, _, err := httpapi.CreateExpiringToken(ctx, tokens, "ci-short", "OPERATOR", 8*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res := baton(ctx, "jobs", "start", "cli-expiry", "--url", srv.URL, "--token", short); res.code != exitOK {
		t.Fatalf("start: %v", res.err)
	}
	<-started
	var out lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"jobs", "watch", "1", "--url", srv.URL, "--token", short}, &out, &bytes.Buffer{})
	}()
	testenv.Eventually(t, 20*time.Second, "the watch to show the run", func() bool { return strings.Contains(out.lines()[0], "RUNNING") })
	select {
	case err := <-done:
		if exitCode(err, exitError) != exitAuth || !strings.Contains(err.Error(), "4401 unauthenticated: token expired at ") {
			t.Fatalf("the watch ended with %v, want a 4401 close saying the token expired", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the WebSocket of an expired token stays open")
	}
	close(ticks)
}

// `baton token create` and `revoke` write an audit row each, naming the token, its role and
// who ran the command (cli:user@host), never the token; a refused create is audited too.
func TestTokenCommandsAudited(t *testing.T) {
	t.Parallel()
	url := testenv.Schema(t)
	pool := testenv.Pool(t, url)
	ctx := context.Background()
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := tokenCommand(ctx, append(args, "--database-url", url), &out, &errOut)
		return out.String(), err
	}
	out, err := run("create", "--name", "audited-bot", "--role", "approver", "--expires", "30d")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	token := lines[len(lines)-1]
	if _, err := run("create", "--name", "audited-bot", "--role", "admin"); err == nil {
		t.Fatal("a taken name was issued again")
	}
	if _, err := run("revoke", "--name", "audited-bot"); err != nil {
		t.Fatal(err)
	}
	type row struct{ actor, action, target, outcome, args string }
	rows, err := pool.Query(ctx, `SELECT actor, action, target, outcome, arguments::text FROM audit_log ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.actor, &r.action, &r.target, &r.outcome, &r.args); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []struct{ action, outcome, arg string }{{"createToken", "ok", `"role": "approver"`}, {"createToken", "CONFLICT", `"role": "admin"`}, {"revokeToken", "ok", `"role": "approver"`}}
	if len(got) != len(want) {
		t.Fatalf("audit rows %+v, want %d", got, len(want))
	}
	actor := cliActor()
	if !strings.HasPrefix(actor, "cli:") || !strings.Contains(actor, "@") {
		t.Fatalf("the CLI's actor %q, want cli:user@host", actor)
	}
	for i, w := range want {
		g := got[i]
		if g.action != w.action || g.outcome != w.outcome || g.target != "token:audited-bot" || g.actor != actor || !strings.Contains(g.args, w.arg) {
			t.Errorf("audit row %d: %+v, want %s by %s on token:audited-bot, outcome %s, arguments with %s", i, g, w.action, actor, w.outcome, w.arg)
		}
		if strings.Contains(g.args, token) || strings.Contains(g.args, httpapi.HashToken(token)) {
			t.Errorf("audit row %d holds the token or its hash: %s", i, g.args)
		}
	}
}
