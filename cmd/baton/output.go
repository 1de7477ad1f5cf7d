package main

// The JSON that --output json prints. These types are the CLI's contract with scripts, apart
// from the API's: fields are added, never renamed or removed. README.md documents them.

// runJSON is a run.
type runJSON struct {
	Number int64  `json:"number"`
	ID     string `json:"id"`
	Job    string `json:"job"`
	Status string `json:"status"`
	// Outcome is SUCCEEDED (cleanly), NEEDS_ATTENTION (SUCCEEDED with items needing
	// attention), FAILED, CANCELLED, PAUSED, or ACTIVE (not ended).
	Outcome        string          `json:"outcome"`
	NeedsAttention bool            `json:"needsAttention"`
	Attention      wireAttention   `json:"attention"`
	Trigger        string          `json:"trigger"`
	Mode           string          `json:"mode"`
	RequestedBy    string          `json:"requestedBy"`
	Instance       string          `json:"instance"`
	Generation     int64           `json:"generation"`
	StartedAt      string          `json:"startedAt"`
	FinishedAt     *string         `json:"finishedAt"`
	StopReason     *string         `json:"stopReason"`
	Message        string          `json:"message"`
	Progress       progressJSON    `json:"progress"`
	Attempt        int             `json:"attempt"`
	AutoResume     *autoResumeJSON `json:"autoResume"`
	// ShardTotal and Shards are a sharded run's (runs show, watch lines); absent otherwise.
	ShardTotal *int        `json:"shardTotal,omitempty"`
	Shards     []shardJSON `json:"shards,omitempty"`
}

type progressJSON struct {
	Total     *int64   `json:"total"`
	Processed int64    `json:"processed"`
	Succeeded int64    `json:"succeeded"`
	Failed    int64    `json:"failed"`
	Skipped   int64    `json:"skipped"`
	Ambiguous int64    `json:"ambiguous"`
	Percent   *float64 `json:"percent"`
}

type autoResumeJSON struct {
	Outcome string  `json:"outcome"`
	DueAt   *string `json:"dueAt"`
	// ResumedBy is the number of the run that continued this one.
	ResumedBy *int64 `json:"resumedBy"`
}

// runOut is r as JSON; nil for nil.
func runOut(r *wireRun) *runJSON {
	if r == nil {
		return nil
	}
	_, word := outcome(r)
	p := r.Progress
	out := &runJSON{
		Number: runNum(r.ID), ID: r.ID, Job: r.JobName, Status: r.Status, Outcome: word,
		NeedsAttention: r.NeedsAttention, Attention: r.Attention,
		Trigger: r.Trigger, Mode: r.Mode, RequestedBy: r.RequestedBy, Instance: r.Instance, Generation: r.Generation,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, StopReason: r.StopReason, Message: r.Message,
		Progress: progressJSON{Total: p.Total, Processed: p.Processed, Succeeded: p.Succeeded, Failed: p.Failed,
			Skipped: p.Skipped, Ambiguous: p.Ambiguous, Percent: p.Percent},
		Attempt: r.Attempt, ShardTotal: r.ShardTotal, Shards: shardsOut(r.Shards),
	}
	if a := r.AutoResume; a != nil {
		out.AutoResume = &autoResumeJSON{Outcome: a.Outcome, DueAt: a.DueAt}
		if a.ResumedBy != nil {
			n := runNum(a.ResumedBy.ID)
			out.AutoResume.ResumedBy = &n
		}
	}
	return out
}

// runErrorJSON is one failed item of a run (runs show).
type runErrorJSON struct {
	Item         string `json:"item"`
	FailureClass string `json:"failureClass"`
	Message      string `json:"message"`
	Attempt      int    `json:"attempt"`
	At           string `json:"at"`
}

// runDetailJSON is `runs show`: the run, and its first failed items.
type runDetailJSON struct {
	runJSON
	Errors []runErrorJSON `json:"errors"`
	// MoreErrors says the run has failed items beyond Errors.
	MoreErrors bool `json:"moreErrors"`
}

// runsJSON is `runs list`.
type runsJSON struct {
	Runs []*runJSON `json:"runs"`
	// EndCursor continues the listing (--after) when HasMore.
	HasMore   bool    `json:"hasMore"`
	EndCursor *string `json:"endCursor"`
}

// policyJSON is a job's auto-resume policy.
type policyJSON struct {
	Enabled        bool     `json:"enabled"`
	MaxAttempts    int      `json:"maxAttempts"`
	BackoffSeconds int64    `json:"backoffSeconds"`
	On             []string `json:"on"`
}

func policyOut(p wirePolicy) policyJSON {
	on := p.On
	if on == nil {
		on = []string{}
	}
	return policyJSON{Enabled: p.Enabled, MaxAttempts: p.MaxAttempts, BackoffSeconds: p.BackoffSeconds, On: on}
}

// jobJSON is a job (jobs list).
type jobJSON struct {
	Name string `json:"name"`
	// Cron is "" for a job that runs only when started.
	Cron       string     `json:"cron"`
	Timezone   string     `json:"timezone"`
	Enabled    bool       `json:"enabled"`
	Paused     bool       `json:"paused"`
	NextFireAt *string    `json:"nextFireAt"`
	AutoResume policyJSON `json:"autoResume"`
	ActiveRun  *runJSON   `json:"activeRun"`
	LastRun    *runJSON   `json:"lastRun"`
}

// jobsJSON is `jobs list`.
type jobsJSON struct {
	Jobs []jobJSON `json:"jobs"`
}

// autoResumeOutJSON is `jobs auto-resume`.
type autoResumeOutJSON struct {
	Job        string     `json:"job"`
	AutoResume policyJSON `json:"autoResume"`
}

// replayJSON is a replay or RESTART request.
type replayJSON struct {
	Number          int64    `json:"number"`
	ID              string   `json:"id"`
	Kind            string   `json:"kind"`
	Job             string   `json:"job"`
	Status          string   `json:"status"`
	Scope           string   `json:"scope"`
	SourceRun       int64    `json:"sourceRun"`
	Reason          string   `json:"reason"`
	CompensationRef *string  `json:"compensationRef"`
	RequestedBy     string   `json:"requestedBy"`
	DecidedBy       *string  `json:"decidedBy"`
	DecisionNote    *string  `json:"decisionNote"`
	ApprovalReasons []string `json:"approvalReasons"`
	BlockingReasons []string `json:"blockingReasons"`
	// ReplayRun is the number of the run the request started, once executed.
	ReplayRun  *int64  `json:"replayRun"`
	CreatedAt  string  `json:"createdAt"`
	DecidedAt  *string `json:"decidedAt"`
	ExecutedAt *string `json:"executedAt"`
	// ReopenReason says why the request went back to PENDING_APPROVAL, judged again when it
	// was approved or executed; null if it never did.
	ReopenReason *string `json:"reopenReason"`
	// ClaimedUntil is set while an execute holds the APPROVED request's claim.
	ClaimedUntil *string `json:"claimedUntil"`
}

// replaysJSON is `replays list`.
type replaysJSON struct {
	Replays   []replayJSON `json:"replays"`
	HasMore   bool         `json:"hasMore"`
	EndCursor *string      `json:"endCursor"`
}

// maintenanceJSON is `maintenance status`, and what `maintenance on|off` did.
type maintenanceJSON struct {
	Maintenance bool `json:"maintenance"`
	// ResumedRuns are the numbers of the runs lifting maintenance started (off only).
	ResumedRuns []int64 `json:"resumedRuns"`
}

// tokenJSON is a token (token list); never the token itself.
type tokenJSON struct {
	Name       string  `json:"name"`
	Role       string  `json:"role"`
	CreatedAt  string  `json:"createdAt"`
	LastUsedAt *string `json:"lastUsedAt"`
	ExpiresAt  *string `json:"expiresAt"`
	RevokedAt  *string `json:"revokedAt"`
	// Status is live, expired or revoked.
	Status string `json:"status"`
}

// tokensJSON is `token list`.
type tokensJSON struct {
	Tokens []tokenJSON `json:"tokens"`
}
