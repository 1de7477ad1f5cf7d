package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/baton-run/baton/migrations"
)

const migrateUsage = `usage: baton migrate [--database-url URL] up | down [N] | version
        up applies every pending migration; down rolls back N (default 1, 0: all);
        version prints the schema version

flags:
  --database-url URL    PostgreSQL URL (env BATON_DATABASE_URL or DATABASE_URL)
`

func migrateCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", stderr)
	dbURL := fs.String("database-url", defaultDatabaseURL(), "PostgreSQL URL (env BATON_DATABASE_URL or DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		return parseFailed(err, migrateUsage, stdout, stderr)
	}
	switch fs.Arg(0) {
	case "up":
		if err := migrations.Up(ctx, *dbURL); err != nil {
			return err
		}
	case "down":
		steps := 1
		if s := fs.Arg(1); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return usageErrorf("migrate down: steps must be a number >= 0 (0 = all), got %q", s)
			}
			steps = n
		}
		if err := migrations.Down(ctx, *dbURL, steps); err != nil {
			return err
		}
	case "version":
	case "help":
		fmt.Fprint(stdout, migrateUsage)
		return flag.ErrHelp
	default:
		fmt.Fprint(stderr, migrateUsage)
		return usageErrorf("migrate: unknown or missing action %q", fs.Arg(0))
	}
	v, dirty, err := migrations.Version(ctx, *dbURL)
	if err != nil {
		return err
	}
	latest, _ := migrations.Latest()
	fmt.Fprintf(stdout, "schema version %d (latest %d)", v, latest)
	if dirty {
		fmt.Fprint(stdout, " DIRTY: a migration failed half-way; fix it by hand, then force the version")
	}
	fmt.Fprintln(stdout)
	return nil
}
