// Command embed is a program of its own that embeds Baton: it registers its job
// (greet-customers, job.go) and serves it with the scheduler, workers, GraphQL API and console
// of `baton serve`. It runs beside `make run` without clashing: its own database
// (baton_example), Env (example) and address (:8090). `make example` creates the database and
// runs it; the BATON_* variables of `baton serve` (BATON_DATABASE_URL, BATON_ADDR, …) change
// any setting.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := server.DefaultConfig() // the defaults of `baton serve`, then this program's own
	c.DatabaseURL = "postgres://postgres@127.0.0.1:5432/baton_example?sslmode=disable"
	c.Env = "example"
	c.Addr = ":8090"
	if err := c.LoadEnv(os.LookupEnv); err != nil { // the variables win, as for `baton serve`
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(2)
	}
	log, err := c.NewLogger(os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(2)
	}
	c.Logger = log
	c.Jobs = []runner.Job{greeter{}}
	// For development: a fresh admin token of this instance's own, revoked when it stops.
	c.AdminTokenName = "example-admin"
	c.Ready = func(base, token string) {
		fmt.Printf("example up: console %s/admin/  GraphQL %s/graphql  admin token %s\n", base, base, token)
	}
	if err := server.Serve(ctx, c); err != nil {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}
