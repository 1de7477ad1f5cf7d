package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/baton-run/baton/server"
	"github.com/baton-run/baton/tracing"
)

// parseServeFlags maps the command line and the process environment onto a server.Config.
func parseServeFlags(args []string, stdout, stderr io.Writer) (*server.Config, error) {
	return parseServeConfig(args, os.LookupEnv, stdout, stderr)
}

// parseServeConfig maps the command line and the environment (lookupEnv) onto a
// server.Config, one flag and one variable per server.Settings entry: a flag wins over its
// variable, a variable over the default. A value that does not parse is an error naming its
// flag or variable, never silently the default. -h prints the settings on stdout and returns
// flag.ErrHelp.
func parseServeConfig(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (*server.Config, error) {
	fs := newFlagSet("serve", stderr)
	c := server.DefaultConfig()
	if err := c.LoadEnv(lookupEnv); err != nil {
		return nil, usageErrorf("serve: %w", err)
	}
	for _, s := range server.Settings() {
		fs.Var(s.Value(&c), s.Name, s.Usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printServeUsage(stdout)
			return nil, err
		}
		printServeUsage(stderr)
		return nil, usageError(err)
	}
	if fs.NArg() > 0 {
		return nil, usageErrorf("serve: unexpected argument %q", fs.Arg(0))
	}
	switch {
	case c.PoolSize < 0:
		return nil, usageErrorf("serve: --pool-size must be >= 0")
	case c.PollInterval < 100*time.Millisecond:
		return nil, usageErrorf("serve: --poll-interval must be at least 100ms")
	case c.Lease < time.Second:
		return nil, usageErrorf("serve: --lease must be at least 1s")
	}
	if _, err := c.NewLogger(io.Discard); err != nil {
		return nil, usageErrorf("serve: --%w", err)
	}
	if err := tracing.CheckExporter(c.TracesExporter); err != nil {
		return nil, usageErrorf("serve: --%w", err)
	}
	return &c, nil
}

// settingEnv returns the variable that sets s, and its text (server.Setting.LookupEnv).
func settingEnv(s server.Setting, lookupEnv func(string) (string, bool)) (name, text string, ok bool) {
	return s.LookupEnv(lookupEnv)
}

// printServeUsage lists every setting with its flag, variable and default.
func printServeUsage(w io.Writer) {
	fmt.Fprint(w, "usage: baton serve [flags]\n\nEach flag can also be set by its environment variable; a flag wins.\n\n")
	for _, s := range server.Settings() {
		env := s.Env
		if s.OldEnv != "" {
			env += " or " + s.OldEnv
		}
		def := "none"
		if s.Default != "" {
			def = s.Default
		}
		arg := " " + s.Type
		if s.Type == "bool" {
			arg = "[=true|false]"
		}
		fmt.Fprintf(w, "  --%s%s\n    \t%s (env %s; default %s)\n", s.Name, arg, s.Usage, env, def)
	}
}

// defaultDatabaseURL is the database-url setting of the environment, or its default: the
// commands besides serve that open the database read it the same way.
func defaultDatabaseURL() string {
	c := server.DefaultConfig()
	for _, s := range server.Settings() {
		if s.Name == "database-url" {
			if _, text, ok := settingEnv(s, os.LookupEnv); ok {
				return text
			}
		}
	}
	return c.DatabaseURL
}

// envBool reads a boolean variable of the demo's (see demoConfig), def when it is unset or
// not a boolean.
func envBool(key string, def bool) bool {
	if v := os.Getenv(key); v != "" {
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return def
}

func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseServeFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	log, err := c.NewLogger(stderr)
	if err != nil {
		return err
	}
	slog.SetDefault(log)
	o := *c
	o.Logger, o.Version = log, version
	if c.Demo {
		cfg, err := demoConfig()
		if err != nil {
			return err
		}
		o.JobsFunc = demoJobsFunc(ctx, cfg, !envBool("BATON_DEMO_SCHEDULES", true))
		o.AdminTokenName = "dev-admin"
	}
	o.Ready = func(base, token string) {
		fmt.Fprintf(stdout, "\nBaton is up.\n  admin console  %s/admin/\n  GraphQL        %s/graphql\n  playground     %s/playground\n  health         %s/healthz  %s/readyz  %s/metrics\n",
			base, base, base, base, base, base)
		if token != "" {
			fmt.Fprintf(stdout, "  admin token    %s\n\nLog in to the console with the admin token above: it is this instance's own,\nnew at every start and revoked when the instance stops cleanly.\n", token)
		}
	}
	if err := server.Serve(ctx, o); err != nil {
		// In the log, as the lines before it: a JSON stream stays JSON.
		log.Error("baton serve failed", "err", err)
		return &loggedError{err}
	}
	return nil
}
