package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

const jobsUsage = `usage:
  baton jobs list
        every job: schedule, state, active and last run
  baton jobs pause NAME
        pause a job: no fires, no starts; its active run stops at its next item
        boundary with status PAUSED
  baton jobs resume NAME [--watch]
        resume a paused job; when its last run ended PAUSED, a RESUME run continues
        it (--watch follows that run)
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
  baton jobs schedule NAME [--cron EXPR] [--tz ZONE] [--enable|--disable] [--lease SECONDS] [--reason TEXT]
        change a job's schedule (--cron "" makes it manual-only; @every takes 1s to 8760h
        in whole seconds). On a HIGH-risk job a change that makes it fire becomes a schedule
        request (APPROVAL_REQUIRED): another token approves it (baton replays approve REQUEST)
  baton jobs auto-resume NAME [--on|--off] [--max-attempts N] [--backoff 5s]
                         [--causes LEASE_EXPIRED,SHUTDOWN,DATABASE]
        print a job's auto-resume policy, or change it: whether a run whose holder
        died (LEASE_EXPIRED), whose instance shut down (SHUTDOWN) or whose database
        went away (DATABASE) continues by itself, how many times in a row (1-100),
        after how long (whole seconds up to 24h, doubling per attempt), for which
        of those causes (--causes "" covers none)
  baton jobs sharding NAME [--max-concurrent N]
        print how many shards of one of a sharded job's runs the cluster works at
        once, or change it (0: as many as there are free slots; up to 10000); it
        applies from the next claim of a shard
  baton jobs watch RUN
        follow a run until it ends (a sharded run's line sums up its shards)

--watch and watch print a progress bar on a terminal, and one line a second
elsewhere (with --output json, one JSON run a line); they exit 0 only when the run
SUCCEEDED cleanly, and otherwise with the code of how it ended (see 'baton help').
RUN is a run number (42) or its global id; REQUEST a replay request number or its
global id.

` + apiFlagsText

// jobsCommand drives a running cluster through its GraphQL API, as internal tools do.
func jobsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, fs, err := subcommandFlags("jobs", jobsUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	api := defineAPIFlags(fs)
	opts := defineJobsFlags(fs)
	var wantArgs int
	switch sub {
	case "list":
		wantArgs = 0
	case "start", "restart", "execute", "cancel", "schedule", "auto-resume", "sharding", "watch", "pause", "resume":
		wantArgs = 1
	default:
		return unknownSubcommand("jobs", sub, jobsUsage, stderr)
	}
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return parseFailed(err, jobsUsage, stdout, stderr)
	}
	fs.Visit(func(f *flag.Flag) { opts.set[f.Name] = true })
	if len(positional) != wantArgs {
		fmt.Fprint(stderr, jobsUsage)
		return usageErrorf("jobs %s: want %d argument(s), got %d", sub, wantArgs, len(positional))
	}
	c, err := api.client("jobs " + sub)
	if err != nil {
		return err
	}
	opts.json = api.json()
	return opts.run(ctx, c, sub, positional, stdout, stderr)
}

// jobsFlags are the flags of the jobs subcommands, each read by the subcommands its usage
// names.
type jobsFlags struct {
	mode, cron, tz, reason, compRef, backoff, causes  *string
	restart, watch, enable, disable, request, on, off *bool
	lease, maxAttempts, maxConcurrent                 *int
	set                                               map[string]bool // the flags given on the command line
	json                                              bool            // --output json
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
		reason:  fs.String("reason", "", "restart --request: why the job must restart; schedule: why, for a HIGH-risk job's schedule request"),
		compRef: fs.String("compensation-ref", "", "restart --request: where the plan to undo the repeated effects lives (HIGH-risk jobs)"),
		on:      fs.Bool("on", false, "auto-resume: turn auto-resume on"),
		off:     fs.Bool("off", false, "auto-resume: turn auto-resume off"),
		// maxAttempts and backoff are sent only when given, so their defaults are never read.
		maxAttempts: fs.Int("max-attempts", 0, "auto-resume: automatic resumes in one chain (1 to 100)"),
		backoff:     fs.String("backoff", "", "auto-resume: wait before the first resume, whole seconds (5s, 1m or 30)"),
		causes:      fs.String("causes", "", "auto-resume: comma-separated LEASE_EXPIRED, SHUTDOWN, DATABASE (\"\": none)"),
		// Sent only when given.
		maxConcurrent: fs.Int("max-concurrent", 0, "sharding: shards of one run worked at once (0: as many as there are free slots)"),
		set:           map[string]bool{},
	}
}

// run runs the subcommand sub with its positional arguments against the API of c. With
// --output json a watch's JSON lines are all of stdout: what the command did before it
// watches goes to stderr.
func (f *jobsFlags) run(ctx context.Context, c *apiClient, sub string, positional []string, stdout, stderr io.Writer) error {
	said := stdout
	if f.json && *f.watch {
		said = stderr
	}
	var err error
	switch sub {
	case "list":
		return c.listJobs(ctx, f.json, stdout)
	case "pause":
		return c.pauseJob(ctx, positional[0], stdout)
	case "resume":
		id, err := c.resumeJob(ctx, positional[0], said)
		if err != nil || !*f.watch || id == "" {
			return err
		}
		return c.watchRun(ctx, id, stdout, f.json)
	case "start":
		m := strings.ToUpper(*f.mode)
		if *f.restart {
			m = "RESTART"
		}
		if m != "RESUME" && m != "RESTART" {
			return usageErrorf("jobs start: --mode must be RESUME or RESTART, not %q", *f.mode)
		}
		id, err := c.startJob(ctx, positional[0], m, said)
		if err != nil || !*f.watch {
			return err
		}
		return c.watchRun(ctx, id, stdout, f.json)
	case "restart":
		var id string
		if *f.request {
			id, err = c.requestRestart(ctx, positional[0], *f.reason, *f.compRef, said)
		} else {
			id, err = c.startJob(ctx, positional[0], "RESTART", said)
		}
		if err != nil || !*f.watch || id == "" {
			return err
		}
		return c.watchRun(ctx, id, stdout, f.json)
	case "execute":
		req, err := requestIDArg(positional[0])
		if err != nil {
			return err
		}
		id, err := c.executeReplay(ctx, req, said)
		if err != nil || !*f.watch {
			return err
		}
		return c.watchRun(ctx, id, stdout, f.json)
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
	case "auto-resume", "sharding":
		return f.settings(ctx, c, sub, positional[0], stdout)
	default: // watch
		id, err := runIDArg(positional[0])
		if err != nil {
			return err
		}
		return c.watchRun(ctx, id, stdout, f.json)
	}
}

// settings runs the subcommands that read and change one of a job's runtime settings.
func (f *jobsFlags) settings(ctx context.Context, c *apiClient, sub, job string, stdout io.Writer) error {
	if sub == "sharding" {
		var n *int
		if f.set["max-concurrent"] {
			n = f.maxConcurrent
		}
		return c.jobSharding(ctx, job, n, f.json, stdout)
	}
	in, err := f.autoResumeInput(job)
	if err != nil {
		return err
	}
	return c.autoResume(ctx, job, in, f.json, stdout)
}

// scheduleInput is the updateSchedule input for job name: only what the flags change.
func (f *jobsFlags) scheduleInput(name string) (map[string]any, error) {
	if *f.enable && *f.disable {
		return nil, usageErrorf("jobs schedule: --enable and --disable exclude each other")
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
	if len(in) > 1 && f.set["reason"] {
		in["reason"] = *f.reason
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
		return nil, usageErrorf("jobs auto-resume: --on and --off exclude each other")
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
				return nil, usageErrorf("jobs auto-resume: --causes: %q is not one of %s", c, strings.Join(resumeCauses, ", "))
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
		return 0, usageErrorf("jobs auto-resume: --backoff must be whole seconds such as 5s, 2m or 30, not %q", s)
	}
	return int64(d / time.Second), nil
}

// jobsPageSize is how many jobs the listing asks for at a time: a page whose complexity (two
// runs per job) stays well under the API's default limit of 2000.
const jobsPageSize = 25

// listJobs prints every job, reading the jobs connection a page at a time.
// wireJob is a job as the jobs list reads it.
type wireJob struct {
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

func (c *apiClient) listJobs(ctx context.Context, asJSON bool, stdout io.Writer) error {
	var jobs []wireJob
	var after *string
	for {
		var data struct {
			Jobs struct {
				Nodes    []wireJob `json:"nodes"`
				PageInfo struct {
					HasNextPage bool    `json:"hasNextPage"`
					EndCursor   *string `json:"endCursor"`
				} `json:"pageInfo"`
			} `json:"jobs"`
		}
		err := c.do(ctx, `query Jobs($first: Int, $after: String) { jobs(first: $first, after: $after) {
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
	if asJSON {
		out := jobsJSON{Jobs: make([]jobJSON, len(jobs))}
		for i, j := range jobs {
			out.Jobs[i] = jobJSON{Name: j.Name, Cron: j.Cron, Timezone: j.Timezone, Enabled: j.Enabled, Paused: j.Paused,
				NextFireAt: j.NextScheduledAt, AutoResume: policyOut(j.AutoResume), ActiveRun: runOut(j.ActiveRun), LastRun: runOut(j.LastRun)}
		}
		return writeJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCHEDULE\tSTATE\tNEXT FIRE\tAUTO-RESUME\tACTIVE RUN\tLAST RUN")
	for _, j := range jobs {
		fmt.Fprintln(tw, jobLine(j))
	}
	return tw.Flush()
}

// jobLine is one job's tab-separated row of the jobs list.
func jobLine(j wireJob) string {
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
		if a := attentionText(r); a != "" {
			last += " (needs attention: " + a + ")"
		}
		if c := chainText(r); c != "" {
			last += " (" + c + ")"
		}
	}
	resume := "off"
	if p := j.AutoResume; p.Enabled {
		resume = fmt.Sprintf("%d x %s", p.MaxAttempts, time.Duration(p.BackoffSeconds)*time.Second)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", j.Name, schedule, state, next, resume, active, last)
}

func (c *apiClient) startJob(ctx context.Context, name, mode string, stdout io.Writer) (string, error) {
	var data struct {
		StartJob struct {
			Run        *wireRun  `json:"run"`
			UserErrors []userErr `json:"userErrors"`
		} `json:"startJob"`
	}
	err := c.do(ctx, `mutation StartJob($in: StartJobInput!) { startJob(input: $in) { run { `+runFields+` } userErrors { code message field } } }`,
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

func (c *apiClient) cancelRun(ctx context.Context, id string, stdout io.Writer) error {
	var data struct {
		CancelRun struct {
			Run        *wireRun  `json:"run"`
			UserErrors []userErr `json:"userErrors"`
		} `json:"cancelRun"`
	}
	err := c.do(ctx, `mutation CancelRun($in: CancelRunInput!) { cancelRun(input: $in) { run { `+runFields+` } userErrors { code message field } } }`,
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
			ScheduleRequest *wireRequest `json:"scheduleRequest"`
			UserErrors      []userErr    `json:"userErrors"`
		} `json:"updateJobSchedule"`
	}
	err := c.do(ctx, `mutation UpdateJobSchedule($in: UpdateJobScheduleInput!) { updateJobSchedule(input: $in) {
		job { name cron timezone enabled leaseSeconds nextFireTimes(n: 3) } scheduleRequest { `+requestFields+` } userErrors { code message field } } }`,
		map[string]any{"in": in}, &data)
	if err != nil {
		return err
	}
	if err := userErrs(data.UpdateJobSchedule.UserErrors); err != nil {
		if req := data.UpdateJobSchedule.ScheduleRequest; req != nil {
			// Not applied: recorded as a request that another token approves.
			return fmt.Errorf("jobs schedule %s: nothing changed yet; schedule request %s is %s (baton replays approve %s, by another token with the approver role): %w",
				in["name"], requestNumber(req.ID), req.Status, requestNumber(req.ID), err)
		}
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
func (c *apiClient) autoResume(ctx context.Context, name string, in map[string]any, asJSON bool, stdout io.Writer) error {
	type job struct {
		AutoResume wirePolicy `json:"autoResume"`
	}
	var p wirePolicy
	if in == nil {
		var data struct {
			Job *job `json:"job"`
		}
		if err := c.do(ctx, `query JobPolicy($n: String!) { job(name: $n) { `+policyFields+` } }`, map[string]any{"n": name}, &data); err != nil {
			return err
		}
		if data.Job == nil {
			return fmt.Errorf("jobs auto-resume %s: %w", name, &apiError{Code: "NOT_FOUND", Message: "no job of that name"})
		}
		p = data.Job.AutoResume
	} else {
		var data struct {
			UpdateJobAutoResume struct {
				Job        *job      `json:"job"`
				UserErrors []userErr `json:"userErrors"`
			} `json:"updateJobAutoResume"`
		}
		err := c.do(ctx, `mutation UpdateJobAutoResume($in: UpdateJobAutoResumeInput!) { updateJobAutoResume(input: $in) {
			job { `+policyFields+` } userErrors { code message field } } }`, map[string]any{"in": in}, &data)
		if err != nil {
			return err
		}
		if err := userErrs(data.UpdateJobAutoResume.UserErrors); err != nil {
			return fmt.Errorf("jobs auto-resume %s: %w", name, err)
		}
		p = data.UpdateJobAutoResume.Job.AutoResume
	}
	if asJSON {
		return writeJSON(stdout, autoResumeOutJSON{Job: name, AutoResume: policyOut(p)})
	}
	fmt.Fprintf(stdout, "%s: auto-resume %s\n", name, policyText(p))
	return nil
}

// pauseJob pauses job name.
func (c *apiClient) pauseJob(ctx context.Context, name string, stdout io.Writer) error {
	var data struct {
		PauseJob struct {
			Job *struct {
				ActiveRun *wireRun `json:"activeRun"`
			} `json:"job"`
			UserErrors []userErr `json:"userErrors"`
		} `json:"pauseJob"`
	}
	err := c.do(ctx, `mutation PauseJob($in: PauseJobInput!) { pauseJob(input: $in) { job { activeRun { id } } userErrors { code message field } } }`,
		map[string]any{"in": map[string]any{"name": name}}, &data)
	if err != nil {
		return err
	}
	if err := userErrs(data.PauseJob.UserErrors); err != nil {
		return fmt.Errorf("jobs pause %s: %w", name, err)
	}
	msg := "paused " + name + ": no fires, no starts"
	if j := data.PauseJob.Job; j != nil && j.ActiveRun != nil {
		msg += fmt.Sprintf("; run %s stops at its next item boundary", runNumber(j.ActiveRun.ID))
	}
	fmt.Fprintln(stdout, msg)
	return nil
}

// resumeJob resumes job name and returns the id of the RESUME run it started, or "".
func (c *apiClient) resumeJob(ctx context.Context, name string, stdout io.Writer) (string, error) {
	var data struct {
		ResumeJob struct {
			Run        *wireRun  `json:"run"`
			UserErrors []userErr `json:"userErrors"`
		} `json:"resumeJob"`
	}
	err := c.do(ctx, `mutation ResumeJob($in: ResumeJobInput!) { resumeJob(input: $in) { run { id } userErrors { code message field } } }`,
		map[string]any{"in": map[string]any{"name": name}}, &data)
	if err != nil {
		return "", err
	}
	if err := userErrs(data.ResumeJob.UserErrors); err != nil {
		return "", fmt.Errorf("jobs resume %s: %w", name, err)
	}
	if r := data.ResumeJob.Run; r != nil {
		fmt.Fprintf(stdout, "resumed %s: run %s continues its paused run\n", name, runNumber(r.ID))
		return r.ID, nil
	}
	fmt.Fprintf(stdout, "resumed %s\n", name)
	return "", nil
}
