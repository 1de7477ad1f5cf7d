package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/graph"
)

// apiFlags are the flags of every command that calls the API.
type apiFlags struct {
	url, token, output *string
}

// defineAPIFlags defines --url, --token and --output on fs.
func defineAPIFlags(fs *flag.FlagSet) *apiFlags {
	return &apiFlags{
		url:    fs.String("url", envOr("BATON_URL", "http://127.0.0.1:8080"), "server URL (env BATON_URL)"),
		token:  fs.String("token", os.Getenv("BATON_TOKEN"), "API token (env BATON_TOKEN)"),
		output: fs.String("output", "text", "text or json (read commands)"),
	}
}

// json reports whether --output asks for JSON.
func (f *apiFlags) json() bool { return *f.output == "json" }

// client checks the flags and returns a client of the API they name.
func (f *apiFlags) client(cmd string) (*apiClient, error) {
	if *f.output != "text" && *f.output != "json" {
		return nil, usageErrorf("%s: --output must be text or json, not %q", cmd, *f.output)
	}
	if *f.token == "" {
		return nil, &codedError{code: exitAuth, err: fmt.Errorf("%s: no token: set BATON_TOKEN (baton token create --name ... --role operator)", cmd)}
	}
	return newAPIClient(*f.url, *f.token)
}

// apiFlagsText documents the flags of apiFlags in the usage of the commands that take them.
const apiFlagsText = `flags of every subcommand:
  --url URL             the server (env BATON_URL, default http://127.0.0.1:8080)
  --token TOKEN         an API token (env BATON_TOKEN; make one with 'baton token create')
  --output text|json    json prints stable JSON on stdout (read commands; see README)
`

// writeJSON prints v as indented JSON on w.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runIDArg accepts a run number or a global Run id.
func runIDArg(s string) (string, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return graph.RunID(n), nil
	}
	if _, ok := graph.RunNumber(s); ok {
		return s, nil
	}
	return "", usageErrorf("%q is neither a run number nor a run id", s)
}

func runNumber(id string) string {
	if n, ok := graph.RunNumber(id); ok {
		return strconv.FormatInt(n, 10)
	}
	return id
}

// apiClient is a small GraphQL client: POST for queries and mutations, graphql-transport-ws
// for subscriptions.
type apiClient struct {
	endpoint string // http(s)://host/graphql
	token    string
	http     *http.Client
}

func newAPIClient(base, token string) (*apiClient, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErrorf("BATON_URL %q is not an http(s) URL", base)
	}
	if !strings.HasSuffix(u.Path, "/graphql") {
		u.Path += "/graphql"
	}
	return &apiClient{endpoint: u.String(), token: token, http: &http.Client{Timeout: 60 * time.Second}}, nil
}

// gqlError is a top-level GraphQL error.
type gqlError struct {
	Message    string `json:"message"`
	Extensions struct {
		Code string `json:"code"`
	} `json:"extensions"`
}

// userErr is a mutation's user error.
type userErr struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Field   *string `json:"field"`
}

// userErrs returns the refusal of a mutation's user errors, or nil when there are none.
func userErrs(ues []userErr) error {
	if len(ues) == 0 {
		return nil
	}
	return &refusal{errs: ues}
}

// do runs a query or mutation and decodes its data into out.
func (c *apiClient) do(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json, application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &codedError{code: exitAPI, err: fmt.Errorf("call %s: %w", c.endpoint, err)}
	}
	defer resp.Body.Close()
	var res struct {
		Data   json.RawMessage `json:"data"`
		Errors []gqlError      `json:"errors"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&res); err != nil {
		return &codedError{code: exitAPI, err: fmt.Errorf("call %s: HTTP %d: unreadable answer: %w", c.endpoint, resp.StatusCode, err)}
	}
	if len(res.Errors) > 0 {
		e := res.Errors[0]
		return &apiError{Code: e.Extensions.Code, Message: e.Message}
	}
	if resp.StatusCode != http.StatusOK {
		return &codedError{code: exitAPI, err: fmt.Errorf("call %s: HTTP %d", c.endpoint, resp.StatusCode)}
	}
	return json.Unmarshal(res.Data, out)
}

// wireRun is a run as the API sends it (runFields).
type wireRun struct {
	ID          string  `json:"id"`
	JobName     string  `json:"jobName"`
	Status      string  `json:"status"`
	Trigger     string  `json:"trigger"`
	Mode        string  `json:"mode"`
	RequestedBy string  `json:"requestedBy"`
	Instance    string  `json:"instance"`
	Generation  int64   `json:"generation"`
	Message     string  `json:"message"`
	StopReason  *string `json:"stopReason"`
	StartedAt   string  `json:"startedAt"`
	FinishedAt  *string `json:"finishedAt"`
	Progress    struct {
		Total     *int64   `json:"total"`
		Processed int64    `json:"processed"`
		Succeeded int64    `json:"succeeded"`
		Failed    int64    `json:"failed"`
		Skipped   int64    `json:"skipped"`
		Ambiguous int64    `json:"ambiguous"`
		Percent   *float64 `json:"percent"`
	} `json:"progress"`
	NeedsAttention bool            `json:"needsAttention"`
	Attention      wireAttention   `json:"attention"`
	Attempt        int             `json:"attempt"`
	AutoResume     *wireAutoResume `json:"autoResume"`
	// ShardTotal and Shards are a sharded run's, when asked for (shardFields).
	ShardTotal *int        `json:"shardTotal"`
	Shards     []wireShard `json:"shards"`
}

// wireAttention counts a run's items needing attention.
type wireAttention struct {
	Failed    int64 `json:"failed"`
	Rejected  int64 `json:"rejected"`
	Ambiguous int64 `json:"ambiguous"`
}

// wireAutoResume is what auto-resume made of a run's end.
type wireAutoResume struct {
	Outcome   string  `json:"outcome"`
	DueAt     *string `json:"dueAt"`
	ResumedBy *struct {
		ID string `json:"id"`
	} `json:"resumedBy"`
}

const runFields = `id jobName status trigger mode requestedBy instance generation message stopReason startedAt finishedAt
	progress { total processed succeeded failed skipped ambiguous percent }
	` + attentionFields + `
	attempt autoResume { outcome dueAt resumedBy { id } }`

// outcome says how r stands, for people and scripts: the exit code of a command that follows
// or shows it, and a word for the JSON output (SUCCEEDED, NEEDS_ATTENTION, FAILED, CANCELLED,
// PAUSED, ACTIVE). A run succeeded cleanly when its status is SUCCEEDED and nothing needs
// attention.
func outcome(r *wireRun) (code int, word string) {
	switch r.Status {
	case "SUCCEEDED":
		if r.NeedsAttention {
			return exitRunAttention, "NEEDS_ATTENTION"
		}
		return exitOK, "SUCCEEDED"
	case "FAILED":
		return exitRunFailed, "FAILED"
	case "CANCELLED":
		return exitRunCancelled, "CANCELLED"
	case "PAUSED":
		return exitRunPaused, "PAUSED"
	}
	return exitRunActive, "ACTIVE"
}

// attentionText is "3 failed, 0 rejected, 1 ambiguous", or "" when nothing needs attention.
func attentionText(r *wireRun) string {
	if !r.NeedsAttention {
		return ""
	}
	a := r.Attention
	return fmt.Sprintf("%d failed, %d rejected, %d ambiguous", a.Failed, a.Rejected, a.Ambiguous)
}

// runEndError is the error of a command that followed or showed run r: nil when r succeeded
// cleanly, else a *runEnd with the exit code of how it stands.
func runEndError(r *wireRun) error {
	code, _ := outcome(r)
	if code == exitOK {
		return nil
	}
	var msg string
	switch code {
	case exitRunAttention:
		msg = fmt.Sprintf("run %s SUCCEEDED with items needing attention: %s", runNumber(r.ID), attentionText(r))
	case exitRunActive:
		msg = fmt.Sprintf("run %s has not ended: %s", runNumber(r.ID), r.Status)
	default:
		msg = fmt.Sprintf("run %s ended %s", runNumber(r.ID), r.Status)
		if r.Message != "" {
			msg += ": " + r.Message
		}
		if a := attentionText(r); a != "" {
			msg += " (" + a + ")"
		}
	}
	if c := chainText(r); c != "" {
		msg += " (" + c + ")"
	}
	return &runEnd{code: code, msg: msg}
}

// chainText says where a run stands in its chain of automatic resumes — "attempt 2",
// "auto-resume due 2026-12-01T10:00:05Z", "resumed by #44", "auto-resume EXHAUSTED after 3
// attempts" — or "" for a run outside any.
func chainText(r *wireRun) string {
	var parts []string
	if r.Attempt > 0 {
		parts = append(parts, fmt.Sprintf("attempt %d", r.Attempt))
	}
	if a := r.AutoResume; a != nil {
		switch {
		case a.Outcome == "PENDING" && a.DueAt != nil:
			parts = append(parts, "auto-resume due "+*a.DueAt)
		case a.Outcome == "RESUMED" && a.ResumedBy != nil:
			parts = append(parts, "resumed by #"+runNumber(a.ResumedBy.ID))
		case a.Outcome == "EXHAUSTED":
			parts = append(parts, fmt.Sprintf("auto-resume EXHAUSTED after %s", attempts(r.Attempt)))
		default:
			parts = append(parts, "auto-resume "+a.Outcome)
		}
	}
	return strings.Join(parts, ", ")
}

// wirePolicy is a job's auto-resume policy.
type wirePolicy struct {
	Enabled        bool     `json:"enabled"`
	MaxAttempts    int      `json:"maxAttempts"`
	BackoffSeconds int64    `json:"backoffSeconds"`
	On             []string `json:"on"`
}

const policyFields = `autoResume { enabled maxAttempts backoffSeconds on }`

// policyText is a policy in a few words: "on, 3 attempts, backoff 5s, causes LEASE_EXPIRED,SHUTDOWN".
func policyText(p wirePolicy) string {
	state := "off"
	if p.Enabled {
		state = "on"
	}
	causes := strings.Join(p.On, ",")
	if causes == "" {
		causes = "none"
	}
	return fmt.Sprintf("%s, %s, backoff %s, causes %s", state, attempts(p.MaxAttempts), time.Duration(p.BackoffSeconds)*time.Second, causes)
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

// attentionFields asks whether a run needs attention, and for what (ADR 13).
const attentionFields = `needsAttention attention { failed rejected ambiguous }`

// runNum is the number of the run of global id id, 0 when id is not a run's.
func runNum(id string) int64 {
	n, _ := graph.RunNumber(id)
	return n
}

// pageInfo is a connection's page info.
type pageInfo struct {
	HasNextPage bool    `json:"hasNextPage"`
	EndCursor   *string `json:"endCursor"`
}

// runsPageSize and replaysPageSize are how many runs and replay requests a listing asks for
// at a time: pages whose complexity stays well under the API's default limit of 2000.
const (
	runsPageSize    = 50
	replaysPageSize = 25
)

// operationName names the operation of a document whose field is field: the field with its
// first letter in upper case (startJob: StartJob), as the server's spans and logs show it.
func operationName(field string) string {
	if field == "" {
		return field
	}
	return strings.ToUpper(field[:1]) + field[1:]
}
