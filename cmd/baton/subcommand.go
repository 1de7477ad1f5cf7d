package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "help" }

// subcommandFlags starts a command made of subcommands (jobs, runs, token, …): with a request
// for help it prints usage on stdout and returns flag.ErrHelp (exit code 0); with no
// subcommand it prints usage on stderr and returns a usage error; otherwise it returns the
// subcommand and a flag set for it (see newFlagSet).
func subcommandFlags(cmd, usage string, args []string, stdout, stderr io.Writer) (string, *flag.FlagSet, error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return "", nil, usageErrorf("%s: no subcommand given", cmd)
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return "", nil, flag.ErrHelp
	}
	return args[0], newFlagSet(cmd+" "+args[0], stderr), nil
}

// newFlagSet returns a flag set that reports a bad flag on stderr and prints no usage itself:
// parseFailed does, on stdout for -h and on stderr for a mistake.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	return fs
}

// parseFailed turns the error of parsing a command line into the command's: for -h or
// --help, usage on stdout and flag.ErrHelp (exit code 0); otherwise usage on stderr and a
// usage error (exit code 2).
func parseFailed(err error, usage string, stdout, stderr io.Writer) error {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return flag.ErrHelp
	}
	fmt.Fprint(stderr, usage)
	return usageError(err)
}

// unknownSubcommand prints usage on stderr and returns the usage error of an unknown
// subcommand.
func unknownSubcommand(cmd, sub, usage string, stderr io.Writer) error {
	fmt.Fprint(stderr, usage)
	return usageErrorf("%s: unknown subcommand %q", cmd, sub)
}

// parseInterleaved parses flags that may come before, between or after positional
// arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}
