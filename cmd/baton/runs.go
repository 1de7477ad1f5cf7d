package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

const runsUsage = `usage:
  baton runs list [--job NAME] [--status S1,S2] [--limit N] [--after CURSOR]
        runs, newest first: of one job, or of every job; --status keeps the runs of
        those statuses (STARTING, RUNNING, SUCCEEDED, FAILED, CANCELLED, PAUSED);
        --limit (default 20, at most 10000) reads as many pages as it takes;
        --after continues a listing from the endCursor of its JSON
  baton runs show RUN
        one run: status, outcome, progress, items needing attention, its first
        failed items; a sharded run's shards (key, status, holder, progress,
        checkpoint, lease age). Exits as the run stands: 0 only when it SUCCEEDED cleanly,
        10-13 for how it ended otherwise, 14 while it has not ended

RUN is a run number (42) or its global id.

` + apiFlagsText

// runStatuses are the values of --status.
var runStatuses = []string{"STARTING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "PAUSED"}

// maxListLimit bounds --limit.
const maxListLimit = 10000

// runsCommand lists and shows runs through the API.
func runsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, fs, err := subcommandFlags("runs", runsUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	api := defineAPIFlags(fs)
	job := fs.String("job", "", "list: the job's runs only")
	status := fs.String("status", "", "list: comma-separated statuses")
	limit := fs.Int("limit", 20, "list: how many runs")
	after := fs.String("after", "", "list: continue after this cursor")
	var want int
	switch sub {
	case "list":
	case "show":
		want = 1
	default:
		return unknownSubcommand("runs", sub, runsUsage, stderr)
	}
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return parseFailed(err, runsUsage, stdout, stderr)
	}
	if len(positional) != want {
		fmt.Fprint(stderr, runsUsage)
		return usageErrorf("runs %s: want %d argument(s), got %d", sub, want, len(positional))
	}
	if sub == "show" {
		id, err := runIDArg(positional[0])
		if err != nil {
			return err
		}
		c, err := api.client("runs show")
		if err != nil {
			return err
		}
		return c.showRun(ctx, id, api.json(), stdout)
	}
	statuses, err := enumList("runs list: --status", *status, runStatuses)
	if err != nil {
		return err
	}
	if *limit < 1 || *limit > maxListLimit {
		return usageErrorf("runs list: --limit must be 1 to %d, not %d", maxListLimit, *limit)
	}
	c, err := api.client("runs list")
	if err != nil {
		return err
	}
	return c.listRuns(ctx, *job, statuses, *limit, *after, api.json(), stdout)
}

// enumList reads a comma-separated list of values of an enum, in any case; "" is none.
func enumList(what, s string, values []string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.ToUpper(strings.TrimSpace(v))
		if v == "" {
			continue
		}
		if !slices.Contains(values, v) {
			return nil, usageErrorf("%s: %q is not one of %s", what, v, strings.Join(values, ", "))
		}
		out = append(out, v)
	}
	return out, nil
}

// listRuns prints up to limit runs, reading the runs connection a page at a time.
func (c *apiClient) listRuns(ctx context.Context, job string, statuses []string, limit int, after string, asJSON bool, stdout io.Writer) error {
	vars := map[string]any{}
	if job != "" {
		vars["job"] = job
	}
	if len(statuses) > 0 {
		vars["status"] = statuses
	}
	if after != "" {
		vars["after"] = after
	}
	var runs []*wireRun
	var page pageInfo
	for len(runs) < limit {
		vars["first"] = min(limit-len(runs), runsPageSize)
		var data struct {
			Runs struct {
				Nodes    []*wireRun `json:"nodes"`
				PageInfo pageInfo   `json:"pageInfo"`
			} `json:"runs"`
		}
		err := c.do(ctx, `query Runs($job: String, $status: [RunStatus!], $first: Int, $after: String) {
			runs(jobName: $job, status: $status, first: $first, after: $after) {
				nodes { `+runFields+` } pageInfo { hasNextPage endCursor } } }`, vars, &data)
		if err != nil {
			return err
		}
		runs = append(runs, data.Runs.Nodes...)
		page = data.Runs.PageInfo
		if !page.HasNextPage || page.EndCursor == nil {
			break
		}
		vars["after"] = *page.EndCursor
	}
	if asJSON {
		out := runsJSON{Runs: make([]*runJSON, len(runs)), HasMore: page.HasNextPage, EndCursor: page.EndCursor}
		for i, r := range runs {
			out.Runs[i] = runOut(r)
		}
		return writeJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tJOB\tSTATUS\tTRIGGER\tSTARTED\tFINISHED\tPROGRESS\tATTENTION")
	for _, r := range runs {
		finished := "-"
		if r.FinishedAt != nil {
			finished = *r.FinishedAt
		}
		attention := "-"
		if a := attentionText(r); a != "" {
			attention = a
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", runNumber(r.ID), r.JobName, r.Status, r.Trigger, r.StartedAt, finished, progressText(r), attention)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.HasNextPage && page.EndCursor != nil {
		fmt.Fprintf(stdout, "more runs: --after %s\n", *page.EndCursor)
	}
	return nil
}

// runErrorsShown is how many failed items `runs show` lists.
const runErrorsShown = 10

// showRun prints a run and returns runEndError of it: scripts read how it stands from the
// exit code.
func (c *apiClient) showRun(ctx context.Context, id string, asJSON bool, stdout io.Writer) error {
	var data struct {
		Run *struct {
			wireRun
			Errors struct {
				Nodes []struct {
					ItemKey      string `json:"itemKey"`
					FailureClass string `json:"failureClass"`
					Message      string `json:"message"`
					Attempt      int    `json:"attempt"`
					CreatedAt    string `json:"createdAt"`
				} `json:"nodes"`
				PageInfo pageInfo `json:"pageInfo"`
			} `json:"errors"`
		} `json:"run"`
	}
	err := c.do(ctx, `query Run($id: ID!, $n: Int) { run(id: $id) { `+runFields+shardFields+`
		errors(first: $n) { nodes { itemKey failureClass message attempt createdAt } pageInfo { hasNextPage endCursor } } } }`,
		map[string]any{"id": id, "n": runErrorsShown}, &data)
	if err != nil {
		return err
	}
	if data.Run == nil {
		return &apiError{Code: "NOT_FOUND", Message: fmt.Sprintf("no run %s", runNumber(id))}
	}
	r := &data.Run.wireRun
	if asJSON {
		out := runDetailJSON{runJSON: *runOut(r), Errors: []runErrorJSON{}, MoreErrors: data.Run.Errors.PageInfo.HasNextPage}
		for _, e := range data.Run.Errors.Nodes {
			out.Errors = append(out.Errors, runErrorJSON{Item: e.ItemKey, FailureClass: e.FailureClass, Message: e.Message, Attempt: e.Attempt, At: e.CreatedAt})
		}
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
		return runEndError(r)
	}
	if err := printRun(stdout, r); err != nil {
		return err
	}
	if err := printShards(stdout, r.Shards); err != nil {
		return err
	}
	if errs := data.Run.Errors.Nodes; len(errs) > 0 {
		fmt.Fprintln(stdout, "\nfailed items:")
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ITEM\tCLASS\tATTEMPT\tMESSAGE")
		for _, e := range errs {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", e.ItemKey, e.FailureClass, e.Attempt, e.Message)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if data.Run.Errors.PageInfo.HasNextPage {
			fmt.Fprintf(stdout, "  … and more (the console lists them all)\n")
		}
	}
	return runEndError(r)
}

// printRun writes a run's fields, one per line, for runs show.
func printRun(stdout io.Writer, r *wireRun) error {
	_, word := outcome(r)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("run", runNumber(r.ID)+" ("+r.ID+")")
	row("job", r.JobName)
	row("status", r.Status)
	row("outcome", word)
	if a := attentionText(r); a != "" {
		row("attention", a)
	}
	row("trigger", fmt.Sprintf("%s %s, generation %d, requested by %s", r.Trigger, r.Mode, r.Generation, r.RequestedBy))
	row("instance", r.Instance)
	row("started", r.StartedAt)
	if r.FinishedAt != nil {
		row("finished", *r.FinishedAt)
	}
	if r.StopReason != nil {
		row("stop reason", *r.StopReason)
	}
	row("progress", progressText(r))
	if sh := shardsText(r); sh != "" {
		row("shards", sh)
	}
	if ch := chainText(r); ch != "" {
		row("auto-resume", ch)
	}
	if r.Message != "" {
		row("message", r.Message)
	}
	return tw.Flush()
}
