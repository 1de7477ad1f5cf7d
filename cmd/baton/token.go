package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/server/httpapi"
)

const tokenUsage = `usage:
  baton token create --name NAME --role viewer|operator|approver|admin [--expires 30d]
        mint an API token; the token is printed on the last line of output, once.
        A name is issued once, ever: the name of a revoked token is refused, since
        runs, the audit log and replay approvals name the token by it. --expires
        gives it a lifetime, in whole days (30d) or hours (12h), up to 3650d: the
        server then refuses it with "token expired"; without it, it never expires
  baton token list [--output json]
        list tokens (names, roles, last use, expiry, status; never the tokens)
  baton token revoke --name NAME
        revoke the live token named NAME: every instance refuses it and closes its
        WebSocket connections at once (within the 5s token cache TTL at worst); the
        name stays taken

flags (every subcommand):
  --database-url URL    PostgreSQL URL (env BATON_DATABASE_URL or DATABASE_URL)
`

// tokenCommand mints, lists and revokes API tokens, directly in the database: it needs no
// running server, and no token to make the first one.
func tokenCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, fs, err := subcommandFlags("token", tokenUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	dbURL := fs.String("database-url", defaultDatabaseURL(), "PostgreSQL URL (env BATON_DATABASE_URL or DATABASE_URL)")
	var name, role, expires, output *string
	switch sub {
	case "create":
		name = fs.String("name", "", "token name (who or what uses it)")
		role = fs.String("role", "", "viewer, operator, approver or admin")
		expires = fs.String("expires", "", "lifetime: whole days (30d) or hours (12h); none: never expires")
	case "revoke":
		name = fs.String("name", "", "name of the token to revoke")
	case "list":
		output = fs.String("output", "text", "text or json")
	default:
		return unknownSubcommand("token", sub, tokenUsage, stderr)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return parseFailed(err, tokenUsage, stdout, stderr)
	}
	if fs.NArg() > 0 {
		return usageErrorf("token %s: unexpected argument %q", sub, fs.Arg(0))
	}
	if name != nil && *name == "" {
		return usageErrorf("token %s: --name is required", sub)
	}
	var ttl time.Duration
	if sub == "create" {
		r, err := model.ParseRole(*role)
		if err != nil {
			return usageErrorf("token create: --role: %w", err)
		}
		*role = string(r)
		if ttl, err = tokenLifetime(*expires); err != nil {
			return err
		}
	}
	if output != nil && *output != "text" && *output != "json" {
		return usageErrorf("token list: --output must be text or json, not %q", *output)
	}

	pool, err := pgxpool.New(ctx, *dbURL)
	if err != nil {
		return fmt.Errorf("token: open database: %w", err)
	}
	defer pool.Close()
	store := httpapi.NewTokenStore(pool).As(cliActor())

	switch sub {
	case "create":
		token, t, err := httpapi.CreateExpiringToken(ctx, store, *name, model.Role(*role), ttl)
		if err != nil {
			return tokenError("create", err)
		}
		expiry := "it never expires"
		if t.ExpiresAt != nil {
			expiry = "it expires at " + t.ExpiresAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(stdout, "created token %q with role %s (%s); it is shown once, store it now:\n", t.Name, t.Role, expiry)
		fmt.Fprintln(stdout, token)
		return nil
	case "revoke":
		t, err := store.RevokeToken(ctx, *name)
		if err != nil {
			return tokenError("revoke", err)
		}
		fmt.Fprintf(stdout, "revoked token %q (role %s); running instances close its WebSocket connections (code 4401) and refuse it\n", t.Name, t.Role)
		return nil
	default:
		return listTokens(ctx, store, *output == "json", stdout)
	}
}

// listTokens prints every token, revoked and expired ones too, as text or JSON.
func listTokens(ctx context.Context, store *httpapi.TokenStore, asJSON bool, stdout io.Writer) error {
	tokens, err := store.Tokens(ctx)
	if err != nil {
		return tokenError("list", err)
	}
	now := time.Now()
	if asJSON {
		out := tokensJSON{Tokens: make([]tokenJSON, len(tokens))}
		for i, t := range tokens {
			out.Tokens[i] = tokenJSON{Name: t.Name, Role: t.Role, CreatedAt: t.CreatedAt.UTC().Format(time.RFC3339),
				LastUsedAt: timeOrNil(t.LastUsedAt), ExpiresAt: timeOrNil(t.ExpiresAt), RevokedAt: timeOrNil(t.RevokedAt),
				Status: tokenStatus(t, now)}
		}
		return writeJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tCREATED\tLAST USED\tEXPIRES\tSTATUS")
	for _, t := range tokens {
		status := tokenStatus(t, now)
		if t.RevokedAt != nil {
			status += " " + t.RevokedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Role, t.CreatedAt.UTC().Format(time.RFC3339), timeOrNever(t.LastUsedAt), timeOrNever(t.ExpiresAt), status)
	}
	return tw.Flush()
}

// tokenStatus is live, expired (by this machine's clock) or revoked.
func tokenStatus(t *httpapi.APIToken, now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return "revoked"
	case t.Expired(now):
		return "expired"
	}
	return "live"
}

// tokenLifetime reads --expires: "" (never), or a whole number of days ("30d") or hours
// ("12h"), at most httpapi.MaxTokenTTL.
func tokenLifetime(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	bad := usageErrorf("token create: --expires must be a whole number of days or hours, such as 30d or 12h, up to %dd; not %q",
		httpapi.MaxTokenTTL/(24*time.Hour), s)
	unit := map[byte]time.Duration{'d': 24 * time.Hour, 'h': time.Hour}[s[len(s)-1]]
	if unit == 0 {
		return 0, bad
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n <= 0 || n > int64(httpapi.MaxTokenTTL/unit) || strings.HasPrefix(s, "+") {
		return 0, bad
	}
	return time.Duration(n) * unit, nil
}

func timeOrNil(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

func timeOrNever(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// tokenError explains the common failure of running before the schema is migrated.
func tokenError(op string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return fmt.Errorf("token %s: the database has no api_tokens table; run `baton migrate up` first", op)
	}
	return fmt.Errorf("token %s: %w", op, err)
}

// cliActor names whoever runs the CLI in the audit log: cli:user@host.
func cliActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	} else if v := os.Getenv("USER"); v != "" {
		name = v
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return "cli:" + name + "@" + host
}
