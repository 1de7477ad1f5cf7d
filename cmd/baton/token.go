package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/server/httpapi"
)

const tokenUsage = `usage:
  baton token create --name NAME --role viewer|operator|approver|admin
        mint an API token; the token is printed on the last line of output, once.
        A name is issued once, ever: the name of a revoked token is refused, since
        runs, the audit log and replay approvals name the token by it
  baton token list
        list tokens (names, roles, last use; never the tokens)
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
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, tokenUsage)
		if len(args) == 0 {
			return errors.New("token: no subcommand given")
		}
		return flag.ErrHelp
	}
	sub := args[0]
	fs := flag.NewFlagSet("token "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, tokenUsage) }
	dbURL := fs.String("database-url", defaultDatabaseURL(), "PostgreSQL URL (env BATON_DATABASE_URL or DATABASE_URL)")
	var name, role *string
	switch sub {
	case "create":
		name = fs.String("name", "", "token name (who or what uses it)")
		role = fs.String("role", "", "viewer, operator, approver or admin")
	case "revoke":
		name = fs.String("name", "", "name of the token to revoke")
	case "list":
	default:
		fmt.Fprint(stderr, tokenUsage)
		return fmt.Errorf("token: unknown subcommand %q", sub)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("token %s: unexpected argument %q", sub, fs.Arg(0))
	}
	if name != nil && *name == "" {
		return fmt.Errorf("token %s: --name is required", sub)
	}

	pool, err := pgxpool.New(ctx, *dbURL)
	if err != nil {
		return fmt.Errorf("token: open database: %w", err)
	}
	defer pool.Close()
	store := httpapi.NewTokenStore(pool)

	switch sub {
	case "create":
		r, err := model.ParseRole(*role)
		if err != nil {
			return fmt.Errorf("token create: --role: %w", err)
		}
		token, t, err := httpapi.CreateToken(ctx, store, *name, r)
		if err != nil {
			return tokenError("create", err)
		}
		fmt.Fprintf(stdout, "created token %q with role %s; it is shown once, store it now:\n", t.Name, t.Role)
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
		tokens, err := store.Tokens(ctx)
		if err != nil {
			return tokenError("list", err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROLE\tCREATED\tLAST USED\tSTATUS")
		for _, t := range tokens {
			status := "live"
			if t.RevokedAt != nil {
				status = "revoked " + t.RevokedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.Role, t.CreatedAt.UTC().Format(time.RFC3339), timeOrNever(t.LastUsedAt), status)
		}
		return tw.Flush()
	}
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
