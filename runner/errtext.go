package runner

import "github.com/baton-run/baton/runner/internal/pipeline"

// What a client of the API may read of an error: the job's own message, never the text of
// the runner's machinery (SQL, connection strings, driver internals, panic values), which is
// logged under a short random reference instead. The rules are pipeline.PublicErrorText's.

// InternalMessage is the text that stands for an internal error logged under ref.
func InternalMessage(ref string) string { return pipeline.InternalMessage(ref) }

// NewErrorRef returns a short random reference for an internal error: eight hex digits, enough
// to find one log line among a day's.
func NewErrorRef() string { return pipeline.NewErrorRef() }
