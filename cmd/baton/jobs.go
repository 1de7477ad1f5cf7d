package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gorilla/websocket"

	"github.com/baton-run/baton/graph"
)

const jobsUsage = `usage:
  baton jobs list
        every job: schedule, state, active and last run
  baton jobs start NAME [--mode RESUME|RESTART] [--restart] [--watch]
        start a run (RESUME continues from the last checkpoint); --watch follows it.
        A RESTART calls every target again under new keys: for a HIGH-risk job
        (APPROVAL_REQUIRED) or while targets are in doubt (REPLAY_BLOCKED) it is
        refused; request it with 'baton jobs restart NAME --request'
  baton jobs restart NAME [--watch]
        the same as start --restart
  baton jobs restart NAME --request --reason TEXT [--compensation-ref REF] [--watch]
        request a RESTART the gate holds: it waits for another token's approval
        (approveReplay, or the console's replay request page), then runs; a HIGH-risk
        job needs --compensation-ref (where the plan to undo it lives)
  baton jobs execute REQUEST [--watch]
        start the run of an APPROVED replay or RESTART request whose run could not
        start when it was approved (needs the approver role)
  baton jobs cancel RUN
        ask a run to stop at its next item boundary
  baton jobs schedule NAME [--cron EXPR] [--tz ZONE] [--enable|--disable] [--lease SECONDS]
        change a job's schedule (--cron "" makes it manual-only)
  baton jobs auto-resume NAME [--on|--off] [--max-attempts N] [--backoff 5s]
                         [--causes LEASE_EXPIRED,SHUTDOWN,DATABASE]
        print a job's auto-resume policy, or change it: whether a run whose holder
        died (LEASE_EXPIRED), whose instance shut down (SHUTDOWN) or whose database
        went away (DATABASE) continues by itself, how many times in a row (1-100),
        after how long (whole seconds up to 24h, doubling per attempt), for which
        of those causes (--causes "" covers none)
  baton jobs watch RUN
        follow a run's progress until it ends; exits non-zero unless it SUCCEEDED

RUN is a run number (42) or its global id; REQUEST a replay request number or its global id. The server is BATON_URL (default
http://127.0.0.1:8080); the token is BATON_TOKEN (make one with 'baton token create').
`

// jobsCommand drives a running cluster through its GraphQL API, as internal tools do.
func jobsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, fs, err := subcommandFlags("jobs", jobsUsage, args, stderr)
	if err != nil {
		return err
	}
	baseURL := fs.String("url", envOr("BATON_URL", "http://127.0.0.1:8080"), "server URL (env BATON_URL)")
	token := fs.String("token", os.Getenv("BATON_TOKEN"), "API token (env BATON_TOKEN)")
	opts := defineJobsFlags(fs)
	var wantArgs int
	switch sub {
	case "list":
		wantArgs = 0
	case "start", "restart", "execute", "cancel", "schedule", "auto-resume", "watch":
		wantArgs = 1
	default:
		fmt.Fprint(stderr, jobsUsage)
		return fmt.Errorf("jobs: unknown subcommand %q", sub)
	}
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { opts.set[f.Name] = true })
	if len(positional) != wantArgs {
		fmt.Fprint(stderr, jobsUsage)
		return fmt.Errorf("jobs %s: want %d argument(s), got %d", sub, wantArgs, len(positional))
	}
	if *token == "" {
		return errors.New("jobs: no token: set BATON_TOKEN (baton token create --name ... --role operator)")
	}
	c, err := newAPIClient(*baseURL, *token)
	if err != nil {
		return err
	}
	return opts.run(ctx, c, sub, positional, stdout)
}

// jobsFlags are the flags of the jobs subcommands, each read by the subcommands its usage
// names.
type jobsFlags struct {
	mode, cron, tz, reason, compRef, backoff, causes  *string
	restart, watch, enable, disable, request, on, off *bool
	lease, maxAttempts                                *int
	set                                               map[string]bool // the flags given on the command line
}

// defineJobsFlags defines the jobs subcommands' flags on fs.
func defineJobsFlags(fs *flag.FlagSet) *jobsFlags {
	return &jobsFlags{
		mode:    fs.String("mode", "RESUME", "start: RESUME or RESTART"),
		restart: fs.Bool("restart", false, "start: same as --mode RESTART"),
		watch:   fs.Bool("watch", false, "start: follow the run until it ends"),
		cron:    fs.String("cron", "", "schedule: cron expression"),
		tz:      fs.String("tz", "", "schedule: IANA time zone"),
		enable:  fs.Bool("enable", false, "schedule: enable the schedule"),
		disable: fs.Bool("disable", false, "schedule: disable the schedule"),
		lease:   fs.Int("lease", -1, "schedule: lease override in seconds (0 clears it)"),
		request: fs.Bool("request", false, "restart: request the RESTART for approval instead of starting it"),
		reason:  fs.String("reason", "", "restart --request: why the job must restart"),
		compRef: fs.String("compensation-ref", "", "restart --request: where the plan to undo the repeated effects lives (HIGH-risk jobs)"),
		on:      fs.Bool("on", false, "auto-resume: turn auto-resume on"),
		off:     fs.Bool("off", false, "auto-resume: turn auto-resume off"),
		// maxAttempts and backoff are sent only when given, so their defaults are never read.
		maxAttempts: fs.Int("max-attempts", 0, "auto-resume: automatic resumes in one chain (1 to 100)"),
		backoff:     fs.String("backoff", "", "auto-resume: wait before the first resume, whole seconds (5s, 1m or 30)"),
		causes:      fs.String("causes", "", "auto-resume: comma-separated LEASE_EXPIRED, SHUTDOWN, DATABASE (\"\": none)"),
		set:         map[string]bool{},
	}
}

// run runs the subcommand sub with its positional arguments against the API of c.
func (f *jobsFlags) run(ctx context.Context, c *apiClient, sub string, positional []string, stdout io.Writer) error {
	var err error
	switch sub {
	case "list":
		return c.listJobs(ctx, stdout)
	case "start":
		m := strings.ToUpper(*f.mode)
		if *f.restart {
			m = "RESTART"
		}
		if m != "RESUME" && m != "RESTART" {
			return fmt.Errorf("jobs start: --mode must be RESUME or RESTART, not %q", *f.mode)
		}
		id, err := c.startJob(ctx, positional[0], m, stdout)
		if err != nil || !*f.watch {
			return err
		}
		return c.watchRun(ctx, id, stdout)
	case "restart":
		var id string
		if *f.request {
			id, err = c.requestRestart(ctx, positional[0], *f.reason, *f.compRef, stdout)
		} else {
			id, err = c.startJob(ctx, positional[0], "RESTART", stdout)
		}
		if err != nil || !*f.watch || id == "" {
			return err
		}
		return c.watchRun(ctx, id, stdout)
	case "execute":
		req, err := requestIDArg(positional[0])
		if err != nil {
			return err
		}
		id, err := c.executeReplay(ctx, req, stdout)
		if err != nil || !*f.watch {
			return err
		}
		return c.watchRun(ctx, id, stdout)
	case "cancel":
		id, err := runIDArg(positional[0])
		if err != nil {
			return err
		}
		return c.cancelRun(ctx, id, stdout)
	case "schedule":
		in, err := f.scheduleInput(positional[0])
		if err != nil {
			return err
		}
		return c.updateSchedule(ctx, in, stdout)
	case "auto-resume":
		in, err := f.autoResumeInput(positional[0])
		if err != nil {
			return err
		}
		return c.autoResume(ctx, positional[0], in, stdout)
	default: // watch
		id, err := runIDArg(positional[0])
		if err != nil {
			return err
		}
		return c.watchRun(ctx, id, stdout)
	}
}

// scheduleInput is the updateSchedule input for job name: only what the flags change.
func (f *jobsFlags) scheduleInput(name string) (map[string]any, error) {
	if *f.enable && *f.disable {
		return nil, errors.New("jobs schedule: --enable and --disable exclude each other")
	}
	in := map[string]any{"name": name}
	if f.set["cron"] {
		in["cron"] = *f.cron
	}
	if f.set["tz"] {
		in["timezone"] = *f.tz
	}
	if *f.enable {
		in["enabled"] = true
	}
	if *f.disable {
		in["enabled"] = false
	}
	if f.set["lease"] {
		in["leaseSeconds"] = *f.lease
	}
	if len(in) == 1 {
		return nil, errors.New("jobs schedule: nothing to change (give --cron, --tz, --enable, --disable or --lease)")
	}
	return in, nil
}

// resumeCauses are the values of --causes.
var resumeCauses = []string{"LEASE_EXPIRED", "SHUTDOWN", "DATABASE"}

// autoResumeInput is the updateJobAutoResume input for job name: only what the flags change;
// nil when they change nothing (the policy is printed).
func (f *jobsFlags) autoResumeInput(name string) (map[string]any, error) {
	if *f.on && *f.off {
		return nil, errors.New("jobs auto-resume: --on and --off exclude each other")
	}
	in := map[string]any{"name": name}
	if *f.on || *f.off {
		in["enabled"] = *f.on
	}
	if f.set["max-attempts"] {
		in["maxAttempts"] = *f.maxAttempts
	}
	if f.set["backoff"] {
		secs, err := backoffSeconds(*f.backoff)
		if err != nil {
			return nil, err
		}
		in["backoffSeconds"] = secs
	}
	if f.set["causes"] {
		causes := []string{}
		for _, c := range strings.Split(*f.causes, ",") {
			c = strings.ToUpper(strings.TrimSpace(c))
			if c == "" {
				continue
			}
			if !slices.Contains(resumeCauses, c) {
				return nil, fmt.Errorf("jobs auto-resume: --causes: %q is not one of %s", c, strings.Join(resumeCauses, ", "))
			}
			causes = append(causes, c)
		}
		// In the order of the list, as the console sends them; one given twice stays twice
		// (the server refuses it).
		slices.SortStableFunc(causes, func(a, b string) int {
			return slices.Index(resumeCauses, a) - slices.Index(resumeCauses, b)
		})
		in["on"] = causes
	}
	if len(in) == 1 {
		return nil, nil
	}
	return in, nil
}

// backoffSeconds reads --backoff: a duration of whole seconds (5s, 1m30s) or a number of seconds.
func backoffSeconds(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d%time.Second != 0 {
		return 0, fmt.Errorf("jobs auto-resume: --backoff must be whole seconds such as 5s, 2m or 30, not %q", s)
	}
	return int64(d / time.Second), nil
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

// runIDArg accepts a run number or a global Run id.
func runIDArg(s string) (string, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return graph.RunID(n), nil
	}
	if _, ok := graph.RunNumber(s); ok {
		return s, nil
	}
	return "", fmt.Errorf("%q is neither a run number nor a run id", s)
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
		return nil, fmt.Errorf("jobs: BATON_URL %q is not an http(s) URL", base)
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

func userErrs(ues []userErr) error {
	if len(ues) == 0 {
		return nil
	}
	msgs := make([]string, len(ues))
	for i, u := range ues {
		msgs[i] = u.Code + ": " + u.Message
	}
	return errors.New(strings.Join(msgs, "; "))
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
		return fmt.Errorf("call %s: %w", c.endpoint, err)
	}
	defer resp.Body.Close()
	var res struct {
		Data   json.RawMessage `json:"data"`
		Errors []gqlError      `json:"errors"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&res); err != nil {
		return fmt.Errorf("call %s: HTTP %d: unreadable answer: %w", c.endpoint, resp.StatusCode, err)
	}
	if len(res.Errors) > 0 {
		e := res.Errors[0]
		return fmt.Errorf("%s: %s", e.Extensions.Code, e.Message)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("call %s: HTTP %d", c.endpoint, resp.StatusCode)
	}
	return json.Unmarshal(res.Data, out)
}

type wireRun struct {
	ID         string  `json:"id"`
	JobName    string  `json:"jobName"`
	Status     string  `json:"status"`
	Message    string  `json:"message"`
	FinishedAt *string `json:"finishedAt"`
	Progress   struct {
		Total     *int64   `json:"total"`
		Processed int64    `json:"processed"`
		Succeeded int64    `json:"succeeded"`
		Failed    int64    `json:"failed"`
		Skipped   int64    `json:"skipped"`
		Ambiguous int64    `json:"ambiguous"`
		Percent   *float64 `json:"percent"`
	} `json:"progress"`
	Attempt    int             `json:"attempt"`
	AutoResume *wireAutoResume `json:"autoResume"`
}

// wireAutoResume is what auto-resume made of a run's end.
type wireAutoResume struct {
	Outcome   string  `json:"outcome"`
	DueAt     *string `json:"dueAt"`
	ResumedBy *struct {
		ID string `json:"id"`
	} `json:"resumedBy"`
}

const runFields = `id jobName status message finishedAt progress { total processed succeeded failed skipped ambiguous percent }
	attempt autoResume { outcome dueAt resumedBy { id } }`

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

// jobsPageSize is how many jobs the listing asks for at a time: a page whose complexity (two
// runs per job) stays well under the API's default limit of 2000.
const jobsPageSize = 25

// listJobs prints every job, reading the jobs connection a page at a time.
func (c *apiClient) listJobs(ctx context.Context, stdout io.Writer) error {
	type job struct {
		Name            string     `json:"name"`
		Cron            string     `json:"cron"`
		Timezone        string     `json:"timezone"`
		Enabled         bool       `json:"enabled"`
		Paused          bool       `json:"paused"`
		NextScheduledAt *string    `json:"nextScheduledAt"`
		AutoResume      wirePolicy `json:"autoResume"`
		ActiveRun       *wireRun   `json:"activeRun"`
		LastRun         *wireRun   `json:"lastRun"`
	}
	var jobs []job
	var after *string
	for {
		var data struct {
			Jobs struct {
				Nodes    []job `json:"nodes"`
				PageInfo struct {
					HasNextPage bool    `json:"hasNextPage"`
					EndCursor   *string `json:"endCursor"`
				} `json:"pageInfo"`
			} `json:"jobs"`
		}
		err := c.do(ctx, `query($first: Int, $after: String) { jobs(first: $first, after: $after) {
			nodes { name cron timezone enabled paused nextScheduledAt `+policyFields+`
				activeRun { `+runFields+` } lastRun { `+runFields+` } }
			pageInfo { hasNextPage endCursor } } }`, map[string]any{"first": jobsPageSize, "after": after}, &data)
		if err != nil {
			return err
		}
		jobs = append(jobs, data.Jobs.Nodes...)
		if !data.Jobs.PageInfo.HasNextPage || data.Jobs.PageInfo.EndCursor == nil {
			break
		}
		after = data.Jobs.PageInfo.EndCursor
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCHEDULE\tSTATE\tNEXT FIRE\tAUTO-RESUME\tACTIVE RUN\tLAST RUN")
	for _, j := range jobs {
		schedule := "manual"
		if j.Cron != "" {
			schedule = j.Cron + " " + j.Timezone
		}
		state := "enabled"
		switch {
		case j.Paused:
			state = "paused"
		case !j.Enabled:
			state = "disabled"
		}
		next, active, last := "-", "-", "-"
		if j.NextScheduledAt != nil {
			next = *j.NextScheduledAt
		}
		if r := j.ActiveRun; r != nil {
			active = fmt.Sprintf("#%s %s %s", runNumber(r.ID), r.Status, progressText(r))
			if c := chainText(r); c != "" {
				active += " (" + c + ")"
			}
		}
		if r := j.LastRun; r != nil {
			last = fmt.Sprintf("#%s %s", runNumber(r.ID), r.Status)
			if c := chainText(r); c != "" {
				last += " (" + c + ")"
			}
		}
		resume := "off"
		if p := j.AutoResume; p.Enabled {
			resume = fmt.Sprintf("%d x %s", p.MaxAttempts, time.Duration(p.BackoffSeconds)*time.Second)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Name, schedule, state, next, resume, active, last)
	}
	return tw.Flush()
}

func (c *apiClient) startJob(ctx context.Context, name, mode string, stdout io.Writer) (string, error) {
	var data struct {
		StartJob struct {
			Run        *wireRun  `json:"run"`
			UserErrors []userErr `json:"userErrors"`
		} `json:"startJob"`
	}
	err := c.do(ctx, `mutation($in: StartJobInput!) { startJob(input: $in) { run { `+runFields+` } userErrors { code message field } } }`,
		map[string]any{"in": map[string]any{"name": name, "mode": mode}}, &data)
	if err != nil {
		return "", err
	}
	if err := userErrs(data.StartJob.UserErrors); err != nil {
		switch gated(data.StartJob.UserErrors) {
		case "APPROVAL_REQUIRED":
			return "", fmt.Errorf("jobs start %s: %w\nrequest the RESTART with: baton jobs restart %s --request --reason TEXT --compensation-ref REF", name, err, name)
		case "REPLAY_BLOCKED":
			return "", fmt.Errorf("jobs start %s: %w\nsettle the targets in doubt first (the console's Ambiguous queue), then restart again", name, err)
		}
		return "", fmt.Errorf("jobs start %s: %w", name, err)
	}
	r := data.StartJob.Run
	fmt.Fprintf(stdout, "started run %s of %s (%s, id %s)\n", runNumber(r.ID), name, mode, r.ID)
	return r.ID, nil
}

// gated returns the code with which the RESTART gate refused a start, or "".
func gated(ues []userErr) string {
	for _, u := range ues {
		if u.Code == "APPROVAL_REQUIRED" || u.Code == "REPLAY_BLOCKED" {
			return u.Code
		}
	}
	return ""
}

// requestIDArg accepts a replay request number or its global id.
func requestIDArg(s string) (string, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return base64.StdEncoding.EncodeToString([]byte("ReplayRequest:" + strconv.FormatInt(n, 10))), nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && strings.HasPrefix(string(b), "ReplayRequest:") {
		return s, nil
	}
	return "", fmt.Errorf("%q is neither a replay request number nor a replay request id", s)
}

func requestNumber(id string) string {
	if b, err := base64.StdEncoding.DecodeString(id); err == nil {
		if n, ok := strings.CutPrefix(string(b), "ReplayRequest:"); ok {
			return n
		}
	}
	return id
}

type wireRequest struct {
	ID        string   `json:"id"`
	Status    string   `json:"status"`
	ReplayRun *wireRun `json:"replayRun"`
	Preflight struct {
		ApprovalReasons []string `json:"approvalReasons"`
		BlockingReasons []string `json:"blockingReasons"`
	} `json:"preflight"`
}

const requestFields = `id status replayRun { ` + runFields + ` } preflight { approvalReasons blockingReasons }`

// requestRestart records a RESTART request and returns the id of its run when it started at
// once, "" when it waits for approval.
func (c *apiClient) requestRestart(ctx context.Context, name, reason, compensationRef string, stdout io.Writer) (string, error) {
	var data struct {
		RequestRestart struct {
			ReplayRequest *wireRequest `json:"replayRequest"`
			UserErrors    []userErr    `json:"userErrors"`
		} `json:"requestRestart"`
	}
	in := map[string]any{"name": name, "reason": reason}
	if compensationRef != "" {
		in["compensationRef"] = compensationRef
	}
	err := c.do(ctx, `mutation($in: RequestRestartInput!) { requestRestart(input: $in) { replayRequest { `+requestFields+` } userErrors { code message field } } }`,
		map[string]any{"in": in}, &data)
	if err != nil {
		return "", err
	}
	req := data.RequestRestart.ReplayRequest
	if err := userErrs(data.RequestRestart.UserErrors); err != nil {
		if req != nil { // recorded, but blocked
			return "", fmt.Errorf("jobs restart %s: request %s is %s: %w", name, requestNumber(req.ID), req.Status, err)
		}
		return "", fmt.Errorf("jobs restart %s: %w", name, err)
	}
	if req.ReplayRun != nil {
		fmt.Fprintf(stdout, "RESTART request %s of %s needed no approval: started run %s\n", requestNumber(req.ID), name, runNumber(req.ReplayRun.ID))
		return req.ReplayRun.ID, nil
	}
	fmt.Fprintf(stdout, "RESTART request %s of %s is %s (%s); another token with the approver role approves it (approveReplay)\n",
		requestNumber(req.ID), name, req.Status, strings.Join(req.Preflight.ApprovalReasons, "; "))
	return "", nil
}

// executeReplay starts the run of an APPROVED request and returns the run's id.
func (c *apiClient) executeReplay(ctx context.Context, id string, stdout io.Writer) (string, error) {
	var data struct {
		ExecuteReplay struct {
			ReplayRequest *wireRequest `json:"replayRequest"`
			UserErrors    []userErr    `json:"userErrors"`
		} `json:"executeReplay"`
	}
	err := c.do(ctx, `mutation($in: ExecuteReplayInput!) { executeReplay(input: $in) { replayRequest { `+requestFields+` } userErrors { code message field } } }`,
		map[string]any{"in": map[string]any{"requestId": id}}, &data)
	if err != nil {
		return "", err
	}
	if err := userErrs(data.ExecuteReplay.UserErrors); err != nil {
		return "", fmt.Errorf("jobs execute %s: %w", requestNumber(id), err)
	}
	run := data.ExecuteReplay.ReplayRequest.ReplayRun
	fmt.Fprintf(stdout, "request %s executed: started run %s\n", requestNumber(id), runNumber(run.ID))
	return run.ID, nil
}

func (c *apiClient) cancelRun(ctx context.Context, id string, stdout io.Writer) error {
	var data struct {
		CancelRun struct {
			Run        *wireRun  `json:"run"`
			UserErrors []userErr `json:"userErrors"`
		} `json:"cancelRun"`
	}
	err := c.do(ctx, `mutation($in: CancelRunInput!) { cancelRun(input: $in) { run { `+runFields+` } userErrors { code message field } } }`,
		map[string]any{"in": map[string]any{"runId": id}}, &data)
	if err != nil {
		return err
	}
	if err := userErrs(data.CancelRun.UserErrors); err != nil {
		return fmt.Errorf("jobs cancel %s: %w", runNumber(id), err)
	}
	fmt.Fprintf(stdout, "cancel requested for run %s of %s; it stops at its next item boundary\n", runNumber(id), data.CancelRun.Run.JobName)
	return nil
}

func (c *apiClient) updateSchedule(ctx context.Context, in map[string]any, stdout io.Writer) error {
	var data struct {
		UpdateJobSchedule struct {
			Job *struct {
				Name          string   `json:"name"`
				Cron          string   `json:"cron"`
				Timezone      string   `json:"timezone"`
				Enabled       bool     `json:"enabled"`
				LeaseSeconds  *int     `json:"leaseSeconds"`
				NextFireTimes []string `json:"nextFireTimes"`
			} `json:"job"`
			UserErrors []userErr `json:"userErrors"`
		} `json:"updateJobSchedule"`
	}
	err := c.do(ctx, `mutation($in: UpdateJobScheduleInput!) { updateJobSchedule(input: $in) {
		job { name cron timezone enabled leaseSeconds nextFireTimes(n: 3) } userErrors { code message field } } }`,
		map[string]any{"in": in}, &data)
	if err != nil {
		return err
	}
	if err := userErrs(data.UpdateJobSchedule.UserErrors); err != nil {
		return fmt.Errorf("jobs schedule %s: %w", in["name"], err)
	}
	j := data.UpdateJobSchedule.Job
	schedule := "manual only"
	if j.Cron != "" {
		schedule = j.Cron + " in " + j.Timezone
	}
	fmt.Fprintf(stdout, "%s: %s, enabled=%t\n", j.Name, schedule, j.Enabled)
	if len(j.NextFireTimes) > 0 {
		fmt.Fprintf(stdout, "next fires: %s\n", strings.Join(j.NextFireTimes, ", "))
	}
	return nil
}

// autoResume prints job name's auto-resume policy after changing it with in (nil: no change).
func (c *apiClient) autoResume(ctx context.Context, name string, in map[string]any, stdout io.Writer) error {
	type job struct {
		AutoResume wirePolicy `json:"autoResume"`
	}
	var p wirePolicy
	if in == nil {
		var data struct {
			Job *job `json:"job"`
		}
		if err := c.do(ctx, `query($n: String!) { job(name: $n) { `+policyFields+` } }`, map[string]any{"n": name}, &data); err != nil {
			return err
		}
		if data.Job == nil {
			return fmt.Errorf("jobs auto-resume %s: NOT_FOUND: no job of that name", name)
		}
		p = data.Job.AutoResume
	} else {
		var data struct {
			UpdateJobAutoResume struct {
				Job        *job      `json:"job"`
				UserErrors []userErr `json:"userErrors"`
			} `json:"updateJobAutoResume"`
		}
		err := c.do(ctx, `mutation($in: UpdateJobAutoResumeInput!) { updateJobAutoResume(input: $in) {
			job { `+policyFields+` } userErrors { code message field } } }`, map[string]any{"in": in}, &data)
		if err != nil {
			return err
		}
		if err := userErrs(data.UpdateJobAutoResume.UserErrors); err != nil {
			return fmt.Errorf("jobs auto-resume %s: %w", name, err)
		}
		p = data.UpdateJobAutoResume.Job.AutoResume
	}
	fmt.Fprintf(stdout, "%s: auto-resume %s\n", name, policyText(p))
	return nil
}

// watchRun follows a run over a graphql-transport-ws subscription, drawing a progress bar,
// and returns an error unless the run ends SUCCEEDED.
func (c *apiClient) watchRun(ctx context.Context, id string, stdout io.Writer) error {
	final, err := c.subscribeRun(ctx, id, func(r *wireRun) {
		line := fmt.Sprintf("run %s %-9s %s", runNumber(r.ID), r.Status, progressText(r))
		if isTerminal(stdout) {
			fmt.Fprintf(stdout, "\r\033[K%s", line)
		} else {
			fmt.Fprintln(stdout, line)
		}
	})
	if isTerminal(stdout) {
		fmt.Fprintln(stdout)
	}
	if err != nil {
		return err
	}
	if final == nil {
		return fmt.Errorf("run %s: the subscription ended before the run did", runNumber(id))
	}
	if final.Status != "SUCCEEDED" {
		msg := ""
		if final.Message != "" {
			msg = ": " + final.Message
		}
		if c := chainText(final); c != "" {
			msg += " (" + c + ")"
		}
		return fmt.Errorf("run %s ended %s%s", runNumber(id), final.Status, msg)
	}
	return nil
}

// progressText draws "[#####.....]  50.0% 5/10 (1 failed)".
func progressText(r *wireRun) string {
	p := r.Progress
	const width = 20
	var b strings.Builder
	if p.Percent != nil {
		filled := int(*p.Percent / 100 * width)
		b.WriteString("[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]")
		fmt.Fprintf(&b, " %5.1f%%", *p.Percent)
	} else {
		b.WriteString("[" + strings.Repeat("?", width) + "]")
	}
	if p.Total != nil {
		fmt.Fprintf(&b, " %d/%d", p.Processed, *p.Total)
	} else {
		fmt.Fprintf(&b, " %d", p.Processed)
	}
	if p.Failed > 0 || p.Ambiguous > 0 {
		fmt.Fprintf(&b, " (%d failed, %d ambiguous)", p.Failed, p.Ambiguous)
	}
	return b.String()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// wsMessage is a graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// subscribeRun runs the runProgress subscription, calling each for every state, and returns
// the last state received once the server completes the subscription.
func (c *apiClient) subscribeRun(ctx context.Context, id string, each func(*wireRun)) (*wireRun, error) {
	u, _ := url.Parse(c.endpoint)
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	dialer := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 10 * time.Second}
	conn, resp, err := dialer.DialContext(ctx, u.String(), nil)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("open websocket %s: HTTP %d", u, resp.StatusCode)
		}
		return nil, fmt.Errorf("open websocket %s: %w", u, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	send := func(m wsMessage) error { return conn.WriteJSON(m) }
	initPayload, _ := json.Marshal(map[string]string{"authorization": "Bearer " + c.token})
	if err := send(wsMessage{Type: "connection_init", Payload: initPayload}); err != nil {
		return nil, err
	}
	sub, _ := json.Marshal(map[string]any{
		"query":     `subscription($id: ID!) { runProgress(runId: $id) { ` + runFields + ` } }`,
		"variables": map[string]any{"id": id},
	})
	var last *wireRun
	for {
		var m wsMessage
		if err := conn.ReadJSON(&m); err != nil {
			if ctx.Err() != nil {
				return last, ctx.Err()
			}
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return last, fmt.Errorf("server closed the subscription: %d %s", ce.Code, ce.Text)
			}
			return last, fmt.Errorf("read subscription: %w", err)
		}
		switch m.Type {
		case "connection_ack":
			if err := send(wsMessage{ID: "1", Type: "subscribe", Payload: sub}); err != nil {
				return last, err
			}
		case "ping":
			if err := send(wsMessage{Type: "pong"}); err != nil {
				return last, err
			}
		case "next":
			var payload struct {
				Data struct {
					RunProgress *wireRun `json:"runProgress"`
				} `json:"data"`
				Errors []gqlError `json:"errors"`
			}
			if err := json.Unmarshal(m.Payload, &payload); err != nil {
				return last, fmt.Errorf("decode subscription event: %w", err)
			}
			if len(payload.Errors) > 0 {
				return last, fmt.Errorf("%s: %s", payload.Errors[0].Extensions.Code, payload.Errors[0].Message)
			}
			if r := payload.Data.RunProgress; r != nil {
				last = r
				each(r)
			}
		case "error":
			var errs []gqlError
			_ = json.Unmarshal(m.Payload, &errs)
			if len(errs) > 0 {
				return last, fmt.Errorf("%s: %s", errs[0].Extensions.Code, errs[0].Message)
			}
			return last, errors.New("subscription refused")
		case "complete":
			_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
			return last, nil
		}
	}
}
