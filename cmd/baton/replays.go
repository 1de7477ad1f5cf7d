package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

const replaysUsage = `usage:
  baton replays list [--status S1,S2] [--limit N] [--after CURSOR]
        replay and RESTART requests, newest first; --status keeps those of the
        statuses (PENDING_APPROVAL, APPROVED, REJECTED, BLOCKED, EXECUTED);
        --limit (default 20, at most 10000) reads as many pages as it takes
  baton replays approve REQUEST [--note TEXT] [--watch]
        approve a pending request (approver role, another token than the
        requester's) and start its run; --watch follows the run and exits as
        'jobs watch' does
  baton replays reject REQUEST [--note TEXT]
        reject a pending request (approver role, another token than the requester's)

REQUEST is a replay request number (7) or its global id.

` + apiFlagsText

// replayStatuses are the values of --status.
var replayStatuses = []string{"PENDING_APPROVAL", "APPROVED", "REJECTED", "BLOCKED", "EXECUTED"}

// replaysCommand lists, approves and rejects replay requests through the API.
func replaysCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, fs, err := subcommandFlags("replays", replaysUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	api := defineAPIFlags(fs)
	status := fs.String("status", "", "list: comma-separated statuses")
	limit := fs.Int("limit", 20, "list: how many requests")
	after := fs.String("after", "", "list: continue after this cursor")
	note := fs.String("note", "", "approve, reject: the decision's note")
	watch := fs.Bool("watch", false, "approve: follow the run until it ends")
	var want int
	switch sub {
	case "list":
	case "approve", "reject":
		want = 1
	default:
		return unknownSubcommand("replays", sub, replaysUsage, stderr)
	}
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return parseFailed(err, replaysUsage, stdout, stderr)
	}
	if len(positional) != want {
		fmt.Fprint(stderr, replaysUsage)
		return usageErrorf("replays %s: want %d argument(s), got %d", sub, want, len(positional))
	}
	if sub == "list" {
		statuses, err := enumList("replays list: --status", *status, replayStatuses)
		if err != nil {
			return err
		}
		if *limit < 1 || *limit > maxListLimit {
			return usageErrorf("replays list: --limit must be 1 to %d, not %d", maxListLimit, *limit)
		}
		c, err := api.client("replays list")
		if err != nil {
			return err
		}
		return c.listReplays(ctx, statuses, *limit, *after, api.json(), stdout)
	}
	id, err := requestIDArg(positional[0])
	if err != nil {
		return err
	}
	c, err := api.client("replays " + sub)
	if err != nil {
		return err
	}
	if sub == "reject" {
		_, err := c.decideReplay(ctx, "rejectReplay", "RejectReplayInput", id, *note, stdout)
		return err
	}
	said := stdout
	if api.json() && *watch {
		said = stderr // the watch's JSON lines are all of stdout
	}
	q, err := c.decideReplay(ctx, "approveReplay", "ApproveReplayInput", id, *note, said)
	if err != nil || !*watch {
		return err
	}
	if q.ReplayRun == nil {
		return &codedError{code: exitAPI, err: fmt.Errorf("replays approve %s: approved, but no run started", requestNumber(id))}
	}
	return c.watchRun(ctx, q.ReplayRun.ID, stdout, api.json())
}

// requestIDArg accepts a replay request number or its global id.
func requestIDArg(s string) (string, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return base64.StdEncoding.EncodeToString([]byte("ReplayRequest:" + strconv.FormatInt(n, 10))), nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && strings.HasPrefix(string(b), "ReplayRequest:") {
		return s, nil
	}
	return "", usageErrorf("%q is neither a replay request number nor a replay request id", s)
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
	ID           string   `json:"id"`
	Status       string   `json:"status"`
	ReplayRun    *wireRun `json:"replayRun"`
	ReopenReason *string  `json:"reopenReason"`
	ClaimedUntil *string  `json:"claimedUntil"`
	Preflight    struct {
		ApprovalReasons []string `json:"approvalReasons"`
		BlockingReasons []string `json:"blockingReasons"`
	} `json:"preflight"`
}

const requestFields = `id status replayRun { ` + runFields + ` } preflight { approvalReasons blockingReasons } reopenReason claimedUntil`

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
	err := c.do(ctx, `mutation RequestRestart($in: RequestRestartInput!) { requestRestart(input: $in) { replayRequest { `+requestFields+` } userErrors { code message field } } }`,
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
	err := c.do(ctx, `mutation ExecuteReplay($in: ExecuteReplayInput!) { executeReplay(input: $in) { replayRequest { `+requestFields+` } userErrors { code message field } } }`,
		map[string]any{"in": map[string]any{"requestId": id}}, &data)
	if err != nil {
		return "", err
	}
	if err := userErrs(data.ExecuteReplay.UserErrors); err != nil {
		if req := data.ExecuteReplay.ReplayRequest; req != nil && req.Status != "APPROVED" {
			// Judged again, or found blocked: the request moved, and nothing started.
			return "", fmt.Errorf("jobs execute %s: request %s is %s now, nothing started: %w", requestNumber(id), requestNumber(req.ID), req.Status, err)
		}
		return "", fmt.Errorf("jobs execute %s: %w", requestNumber(id), err)
	}
	run := data.ExecuteReplay.ReplayRequest.ReplayRun
	if run == nil { // a schedule request starts no run
		fmt.Fprintf(stdout, "request %s executed: its schedule change is applied\n", requestNumber(id))
		return "", nil
	}
	fmt.Fprintf(stdout, "request %s executed: started run %s\n", requestNumber(id), runNumber(run.ID))
	return run.ID, nil
}

// requestNum is the number of the replay request of global id id, 0 when id is not one's.
func requestNum(id string) int64 {
	n, _ := strconv.ParseInt(requestNumber(id), 10, 64)
	return n
}

// wireRequestFull is a replay request as `replays list` reads it.
type wireRequestFull struct {
	wireRequest
	Kind string `json:"kind"`
	Job  struct {
		Name string `json:"name"`
	} `json:"job"`
	SourceRun struct {
		ID string `json:"id"`
	} `json:"sourceRun"`
	Scope           string  `json:"scope"`
	Reason          string  `json:"reason"`
	CompensationRef *string `json:"compensationRef"`
	RequestedBy     string  `json:"requestedBy"`
	DecidedBy       *string `json:"decidedBy"`
	DecisionNote    *string `json:"decisionNote"`
	CreatedAt       string  `json:"createdAt"`
	DecidedAt       *string `json:"decidedAt"`
	ExecutedAt      *string `json:"executedAt"`
}

const requestFullFields = requestFields + ` kind job { name } sourceRun { id } scope reason compensationRef requestedBy
	decidedBy decisionNote createdAt decidedAt executedAt`

func replayOut(q *wireRequestFull) replayJSON {
	out := replayJSON{
		Number: requestNum(q.ID), ID: q.ID, Kind: q.Kind, Job: q.Job.Name, Status: q.Status, Scope: q.Scope,
		SourceRun: runNum(q.SourceRun.ID), Reason: q.Reason, CompensationRef: q.CompensationRef,
		RequestedBy: q.RequestedBy, DecidedBy: q.DecidedBy, DecisionNote: q.DecisionNote,
		ApprovalReasons: q.Preflight.ApprovalReasons, BlockingReasons: q.Preflight.BlockingReasons,
		CreatedAt: q.CreatedAt, DecidedAt: q.DecidedAt, ExecutedAt: q.ExecutedAt,
		ReopenReason: q.ReopenReason, ClaimedUntil: q.ClaimedUntil,
	}
	if out.ApprovalReasons == nil {
		out.ApprovalReasons = []string{}
	}
	if out.BlockingReasons == nil {
		out.BlockingReasons = []string{}
	}
	if q.ReplayRun != nil {
		n := runNum(q.ReplayRun.ID)
		out.ReplayRun = &n
	}
	return out
}

// listReplays prints up to limit replay requests, a page at a time.
func (c *apiClient) listReplays(ctx context.Context, statuses []string, limit int, after string, asJSON bool, stdout io.Writer) error {
	vars := map[string]any{}
	if len(statuses) > 0 {
		vars["status"] = statuses
	}
	if after != "" {
		vars["after"] = after
	}
	var reqs []*wireRequestFull
	var page pageInfo
	for len(reqs) < limit {
		vars["first"] = min(limit-len(reqs), replaysPageSize)
		var data struct {
			ReplayRequests struct {
				Nodes    []*wireRequestFull `json:"nodes"`
				PageInfo pageInfo           `json:"pageInfo"`
			} `json:"replayRequests"`
		}
		err := c.do(ctx, `query ReplayRequests($status: [ReplayStatus!], $first: Int, $after: String) {
			replayRequests(status: $status, first: $first, after: $after) {
				nodes { `+requestFullFields+` } pageInfo { hasNextPage endCursor } } }`, vars, &data)
		if err != nil {
			return err
		}
		reqs = append(reqs, data.ReplayRequests.Nodes...)
		page = data.ReplayRequests.PageInfo
		if !page.HasNextPage || page.EndCursor == nil {
			break
		}
		vars["after"] = *page.EndCursor
	}
	if asJSON {
		out := replaysJSON{Replays: make([]replayJSON, len(reqs)), HasMore: page.HasNextPage, EndCursor: page.EndCursor}
		for i, q := range reqs {
			out.Replays[i] = replayOut(q)
		}
		return writeJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REQUEST\tKIND\tJOB\tSTATUS\tSOURCE RUN\tREQUESTED BY\tCREATED\tRUN\tREASON")
	for _, q := range reqs {
		run := "-"
		if q.ReplayRun != nil {
			run = runNumber(q.ReplayRun.ID)
		}
		status := q.Status
		if q.ReopenReason != nil && q.Status == "PENDING_APPROVAL" {
			status += " (reopened)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", requestNumber(q.ID), q.Kind, q.Job.Name, status,
			runNumber(q.SourceRun.ID), q.RequestedBy, q.CreatedAt, run, oneLine(q.Reason, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.HasNextPage && page.EndCursor != nil {
		fmt.Fprintf(stdout, "more requests: --after %s\n", *page.EndCursor)
	}
	return nil
}

// oneLine is s on one line, cut to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// decideReplay approves or rejects (mutation, with its input type) request id, and returns
// the request as it then is.
func (c *apiClient) decideReplay(ctx context.Context, mutation, inputType, id, note string, stdout io.Writer) (*wireRequest, error) {
	in := map[string]any{"requestId": id}
	if note != "" {
		in["note"] = note
	}
	var data map[string]struct {
		ReplayRequest *wireRequest `json:"replayRequest"`
		UserErrors    []userErr    `json:"userErrors"`
	}
	err := c.do(ctx, `mutation `+operationName(mutation)+`($in: `+inputType+`!) { `+mutation+`(input: $in) { replayRequest { `+requestFields+` } userErrors { code message field } } }`,
		map[string]any{"in": in}, &data)
	if err != nil {
		return nil, err
	}
	p := data[mutation]
	verb := map[string]string{"approveReplay": "approve", "rejectReplay": "reject"}[mutation]
	if err := userErrs(p.UserErrors); err != nil {
		return nil, fmt.Errorf("replays %s %s: %w", verb, requestNumber(id), err)
	}
	q := p.ReplayRequest
	msg := fmt.Sprintf("request %s is %s", requestNumber(id), q.Status)
	if q.ReplayRun != nil {
		msg += ": started run " + runNumber(q.ReplayRun.ID)
	}
	fmt.Fprintln(stdout, msg)
	return q, nil
}
