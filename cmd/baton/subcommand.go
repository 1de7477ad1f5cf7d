package main

import (
	"flag"
	"fmt"
	"io"
)

// subcommandFlags starts a command made of subcommands (jobs, token): with no subcommand or a
// request for help it prints usage and returns an error (flag.ErrHelp for help); otherwise it
// returns the subcommand and a flag set for it that prints usage on a bad flag.
func subcommandFlags(cmd, usage string, args []string, stderr io.Writer) (string, *flag.FlagSet, error) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return "", nil, fmt.Errorf("%s: no subcommand given", cmd)
		}
		return "", nil, flag.ErrHelp
	}
	fs := flag.NewFlagSet(cmd+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	return args[0], fs, nil
}
