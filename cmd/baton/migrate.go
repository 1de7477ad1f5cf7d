package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/baton-run/baton/migrations"
)

func migrateCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbURL := fs.String("database-url", defaultDatabaseURL(), "PostgreSQL URL (env BATON_DATABASE_URL or DATABASE_URL)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: baton migrate [--database-url URL] up | down [N] | version")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
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
				return fmt.Errorf("migrate down: steps must be a number >= 0 (0 = all), got %q", s)
			}
			steps = n
		}
		if err := migrations.Down(ctx, *dbURL, steps); err != nil {
			return err
		}
	case "version":
	default:
		fs.Usage()
		return fmt.Errorf("migrate: unknown or missing action %q", fs.Arg(0))
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
