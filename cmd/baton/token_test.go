package main

import (
	"bytes"
	"context"
	"errors"
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
