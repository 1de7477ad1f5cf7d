// Command baton runs and operates Baton: `serve` runs an instance (scheduler, workers, API),
// `migrate` manages the schema, `token` mints API tokens, `jobs` drives a running cluster
// through its GraphQL API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "baton:", err)
		}
		os.Exit(1)
	}
}

const usage = `usage: baton <command> [flags]

commands:
  serve                 run an instance: scheduler, workers, GraphQL API, admin console
  migrate up|down|version
                        apply, roll back or show the database schema
  token create --name NAME --role viewer|operator|approver|admin
                        mint an API token (printed on the last line)
  token list | token revoke --name NAME
  jobs list | start NAME | cancel RUN_ID | watch RUN_ID
                        drive a running cluster through its GraphQL API
  version               print the version

Every flag can also be set from the environment; see 'baton serve -h'.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		return serveCommand(ctx, args[1:], stdout, stderr)
	case "migrate":
		return migrateCommand(ctx, args[1:], stdout, stderr)
	case "token":
		return tokenCommand(ctx, args[1:], stdout, stderr)
	case "jobs":
		return jobsCommand(ctx, args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

// envOr returns the environment variable key, or def when it is unset.
func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}
