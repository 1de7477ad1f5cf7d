package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// The exit codes of baton, for scripts: 0 only for success, and for a command that follows or
// shows a run, only when the run SUCCEEDED cleanly (status SUCCEEDED, no item needing
// attention). exitCodesText documents them; keep the two together.
const (
	exitOK    = 0
	exitError = 1 // any other failure: the database, the local system, an internal error
	exitUsage = 2 // a bad command line: unknown command or flag, missing argument, bad value
	exitAuth  = 3 // no token, an unknown, revoked or expired token, or a role that may not
	exitAPI   = 4 // the server could not be reached, failed, or refused the request
	// exitNotFound: no such run, job or replay request.
	exitNotFound = 5
	// exitRunFailed and the codes after it: the run the command followed or showed did not
	// succeed cleanly.
	exitRunFailed    = 10 // it ended FAILED
	exitRunAttention = 11 // it SUCCEEDED with failed, rejected or unresolved ambiguous items
	exitRunCancelled = 12 // it ended CANCELLED
	exitRunPaused    = 13 // it ended PAUSED (job pause or maintenance)
	exitRunActive    = 14 // it has not ended (STARTING or RUNNING): runs show only
)

// exitCodesText is the exit codes' part of baton's usage.
const exitCodesText = `exit codes:
  0   success; for a command that follows or shows a run: the run SUCCEEDED cleanly
  1   any other failure (the database, the local system, an internal error)
  2   bad usage: unknown command or flag, missing argument, bad value
  3   authentication or authorisation: no token, an unknown, revoked or expired
      token, or a role that may not do this
  4   the server could not be reached, failed, or refused the request
  5   no such run, job or replay request
  10  the run ended FAILED
  11  the run SUCCEEDED but has items needing attention (failed, rejected or
      unresolved ambiguous)
  12  the run ended CANCELLED
  13  the run ended PAUSED (job pause or maintenance)
  14  the run has not ended yet (runs show)
`

// exitCoder is an error that carries the exit code it means.
type exitCoder interface {
	error
	exitCode() int
}

// codedError is err with the exit code it means.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }
func (e *codedError) exitCode() int { return e.code }

// loggedError is an error already written to the log (serve's, once its logger exists), which
// main does not print again: a JSON log stream stays JSON to its last line.
type loggedError struct{ err error }

func (e *loggedError) Error() string { return e.err.Error() }
func (e *loggedError) Unwrap() error { return e.err }

// report prints err for main, unless it is help or already logged.
func report(stderr io.Writer, err error) {
	var logged *loggedError
	if err == nil || errors.Is(err, flag.ErrHelp) || errors.As(err, &logged) {
		return
	}
	fmt.Fprintln(stderr, "baton:", err)
}

// usageErrorf is a bad command line: exit code 2.
func usageErrorf(format string, args ...any) error {
	return &codedError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// usageError marks err as a bad command line: exit code 2.
func usageError(err error) error { return &codedError{code: exitUsage, err: err} }

// apiError is a top-level GraphQL error, or the refusal of a request before GraphQL (HTTP
// 401, a WebSocket closed with 4401).
type apiError struct {
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func (e *apiError) exitCode() int { return exitCodeOfAPI(e.Code) }

// exitCodeOfAPI maps a GraphQL error code to an exit code.
func exitCodeOfAPI(code string) int {
	switch code {
	case "UNAUTHENTICATED", "FORBIDDEN":
		return exitAuth
	case "NOT_FOUND":
		return exitNotFound
	}
	return exitAPI
}

// refusal is a mutation's user errors: the server refused the request and changed nothing.
type refusal struct{ errs []userErr }

func (r *refusal) Error() string {
	msgs := make([]string, len(r.errs))
	for i, u := range r.errs {
		msgs[i] = u.Code + ": " + u.Message
	}
	return strings.Join(msgs, "; ")
}

func (r *refusal) exitCode() int {
	for _, u := range r.errs {
		if u.Code == "NOT_FOUND" {
			return exitNotFound
		}
	}
	return exitAPI
}

// runEnd is the error of a run that did not succeed cleanly: its exit code says how it ended.
type runEnd struct {
	code int
	msg  string
}

func (e *runEnd) Error() string { return e.msg }
func (e *runEnd) exitCode() int { return e.code }

// exitCode is the exit code err means: 0 for nil and for a request for help, else the code of
// the first exitCoder in its chain, else def.
func exitCode(err error, def int) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var c exitCoder
	if errors.As(err, &c) {
		return c.exitCode()
	}
	return def
}
