// Command baton runs and operates Baton: `serve` runs an instance (scheduler, workers, API),
// `migrate` manages the schema, `token` mints API tokens, and `jobs`, `runs`, `replays`,
// `maintenance` and `downstreams` drive a running cluster through its GraphQL API. Its exit
// codes are for scripts (exitcode.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/baton-run/baton/internal/buildinfo"
)

// version is the build's version, stamped at build time (internal/buildinfo, scripts/ldflags.sh).
var version = buildinfo.Version()

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	report(os.Stderr, err)
	stop()
	os.Exit(exitCode(err, exitError))
}

const usage = `usage: baton <command> [flags]

commands:
  serve                 run an instance: scheduler, workers, GraphQL API, admin console
  migrate up|down|version
                        apply, roll back or show the database schema
  token create --name NAME --role viewer|operator|approver|admin [--expires 30d]
                        mint an API token (printed on the last line)
  token list | token revoke --name NAME
  jobs list | start NAME | pause NAME | resume NAME | cancel RUN | watch RUN | ...
                        drive a running cluster through its GraphQL API
  runs list [--job NAME] [--status S] [--limit N] | runs show RUN
                        list runs, show one
  replays list | approve REQUEST | reject REQUEST
                        replay and RESTART requests and their four-eyes decision
  maintenance status|on|off
                        the cluster-wide maintenance pause
  downstreams list | show NAME | set NAME [--rate R] ... | pause NAME | resume NAME
                        the cluster-wide limits on calls to outside systems
  notify channels list|add|set|remove|test | routes list|add|remove | deliveries
                        where alarms are delivered: webhooks, Slack, PagerDuty
  version               print the version

'baton COMMAND --help' tells more. Read commands take --output json: stable JSON on
stdout (documented in the README). Every flag of 'serve' can also be set from the
environment; see 'baton serve -h'.

` + exitCodesText

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageErrorf("no command given")
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
	case "runs":
		return runsCommand(ctx, args[1:], stdout, stderr)
	case "replays":
		return replaysCommand(ctx, args[1:], stdout, stderr)
	case "maintenance":
		return maintenanceCommand(ctx, args[1:], stdout, stderr)
	case "downstreams":
		return downstreamsCommand(ctx, args[1:], stdout, stderr)
	case "notify":
		return notifyCommand(ctx, args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, buildinfo.String())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return flag.ErrHelp
	default:
		fmt.Fprint(stderr, usage)
		return usageErrorf("unknown command %q", args[0])
	}
}

// envOr returns the environment variable key, or def when it is unset.
func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}
