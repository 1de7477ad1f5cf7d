package graph_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
)

// wirePolicy is Job.autoResume as the API answers it.
type wirePolicy struct {
	Enabled        bool
	MaxAttempts    int
	BackoffSeconds int
	On             []string
}

const policyFields = `autoResume { enabled maxAttempts backoffSeconds on }`

// storedPolicy is the job's auto-resume policy as its job_settings row holds it.
func (b *bundle) storedPolicy(job string) wirePolicy {
	b.T.Helper()
	var p wirePolicy
	if err := b.Pool.QueryRow(context.Background(), `SELECT auto_resume, auto_resume_max_attempts, auto_resume_backoff_seconds, auto_resume_on
		FROM job_settings WHERE name = $1`, job).Scan(&p.Enabled, &p.MaxAttempts, &p.BackoffSeconds, &p.On); err != nil {
		b.T.Fatal(err)
	}
	return p
}

// updateAutoResume sends updateJobAutoResume with input and returns its answer.
func (i *instance) updateAutoResume(t *testing.T, token string, input map[string]any) (*wirePolicy, []userError, *response) {
	t.Helper()
	r := i.post(t, token, `mutation($in: UpdateJobAutoResumeInput!) { updateJobAutoResume(input: $in) {
		job { `+policyFields+` } userErrors { code message field } } }`, map[string]any{"in": input})
	if len(r.Errors) > 0 {
		return nil, nil, r
	}
	var data struct {
		UpdateJobAutoResume struct {
			Job        *struct{ AutoResume wirePolicy }
			UserErrors []userError
		}
	}
	r.decode(t, &data)
	var p *wirePolicy
	if j := data.UpdateJobAutoResume.Job; j != nil {
		p = &j.AutoResume
	}
	return p, data.UpdateJobAutoResume.UserErrors, r
}

// TestJobAutoResumePolicy: Job.autoResume reads the declared policy (the default when the job
// declares none); updateJobAutoResume changes only the fields it is given, is audited, is
// refused to a viewer, and refuses a value out of range with INVALID_INPUT naming the field,
// writing nothing.
func TestJobAutoResumePolicy(t *testing.T) {
	b := setup(t)
	i := b.instance(instanceOpts{jobs: []runner.Job{&gatedJob{name: "heals", n: 1}}, noRun: true})
	op, viewer := b.token(model.RoleOperator), b.token(model.RoleViewer)

	var read struct {
		Job struct{ AutoResume wirePolicy }
	}
	i.post(t, viewer, `{ job(name: "heals") { `+policyFields+` } }`, nil).decode(t, &read)
	want := wirePolicy{Enabled: true, MaxAttempts: 3, BackoffSeconds: 5, On: []string{"LEASE_EXPIRED", "SHUTDOWN", "DATABASE"}}
	if !policyEqual(read.Job.AutoResume, want) {
		t.Fatalf("the policy of a job that declares none reads %+v, want the default %+v", read.Job.AutoResume, want)
	}

	got, ue, _ := i.updateAutoResume(t, op, map[string]any{"name": "heals", "maxAttempts": 5, "backoffSeconds": 30, "on": []string{"LEASE_EXPIRED"}})
	want = wirePolicy{Enabled: true, MaxAttempts: 5, BackoffSeconds: 30, On: []string{"LEASE_EXPIRED"}}
	if len(ue) > 0 || got == nil || !policyEqual(*got, want) {
		t.Fatalf("update: %+v, %+v; want %+v", got, ue, want)
	}
	if stored := b.storedPolicy("heals"); !policyEqual(stored, want) {
		t.Fatalf("the row holds %+v after the update, want %+v", stored, want)
	}
	if n := b.auditRows(b.tokenName(op), "updateJobAutoResume", "ok"); n != 1 {
		t.Fatalf("%d ok audit rows of updateJobAutoResume, want 1", n)
	}
	// Omitted fields stay; an empty list of causes is a list, not "unchanged".
	got, ue, _ = i.updateAutoResume(t, op, map[string]any{"name": "heals", "enabled": false, "on": []string{}})
	want = wirePolicy{Enabled: false, MaxAttempts: 5, BackoffSeconds: 30, On: []string{}}
	if len(ue) > 0 || got == nil || !policyEqual(*got, want) {
		t.Fatalf("update of enabled and on: %+v, %+v; want %+v", got, ue, want)
	}
	i.post(t, viewer, `{ job(name: "heals") { `+policyFields+` } }`, nil).decode(t, &read)
	if !policyEqual(read.Job.AutoResume, want) {
		t.Fatalf("read back %+v, want %+v", read.Job.AutoResume, want)
	}

	if _, _, r := i.updateAutoResume(t, viewer, map[string]any{"name": "heals", "enabled": true}); r.code() != graph.CodeForbidden {
		t.Fatalf("a viewer's update: code %q, want FORBIDDEN", r.code())
	}
	refusals := map[string]struct {
		input map[string]any
		field string
	}{
		"no attempts":        {map[string]any{"maxAttempts": 0}, "maxAttempts"},
		"too many attempts":  {map[string]any{"maxAttempts": 101}, "maxAttempts"},
		"negative backoff":   {map[string]any{"backoffSeconds": -1}, "backoffSeconds"},
		"backoff over a day": {map[string]any{"backoffSeconds": 86401}, "backoffSeconds"},
		// More seconds than a time.Duration holds.
		"huge backoff":      {map[string]any{"backoffSeconds": int64(1) << 40}, "backoffSeconds"},
		"a cause twice":     {map[string]any{"on": []string{"SHUTDOWN", "SHUTDOWN"}}, "on"},
		"with a good value": {map[string]any{"enabled": true, "maxAttempts": 0}, "maxAttempts"},
	}
	for name, c := range refusals {
		c.input["name"] = "heals"
		got, ue, r := i.updateAutoResume(t, op, c.input)
		if len(r.Errors) > 0 || got != nil || len(ue) != 1 || ue[0].Code != "INVALID_INPUT" || ue[0].Field == nil || *ue[0].Field != c.field {
			t.Errorf("%s: job %+v, user errors %+v, errors %+v; want INVALID_INPUT on %s", name, got, ue, r.Errors, c.field)
		}
	}
	if stored := b.storedPolicy("heals"); !policyEqual(stored, want) {
		t.Fatalf("the row holds %+v after the refusals, want it unchanged: %+v", stored, want)
	}
	if n := b.auditRows(b.tokenName(op), "updateJobAutoResume", "INVALID_INPUT"); n != len(refusals) {
		t.Fatalf("%d INVALID_INPUT audit rows, want %d", n, len(refusals))
	}
	if _, ue, _ := i.updateAutoResume(t, op, map[string]any{"name": "nope", "enabled": true}); len(ue) != 1 || ue[0].Code != "NOT_FOUND" {
		t.Fatalf("update of an unknown job: %+v, want NOT_FOUND", ue)
	}
}

func policyEqual(a, b wirePolicy) bool {
	return a.Enabled == b.Enabled && a.MaxAttempts == b.MaxAttempts && a.BackoffSeconds == b.BackoffSeconds && slices.Equal(a.On, b.On)
}

// stallJob is a one-item job with a one-second lease whose item waits until the test ends
// (stall is closed): the holder stops renewing its lease, as a dead one would.
type stallJob struct {
	name   string
	policy *runner.AutoResumePolicy
	stall  chan struct{} // closed when the test ends
}

func (j *stallJob) Info() runner.JobInfo {
	return runner.JobInfo{Name: j.name, Version: "1", Lease: time.Second, Retry: runner.RetryPolicy{MaxAttempts: 1}, AutoResume: j.policy}
}

func (j *stallJob) Run(ctx context.Context, run *runner.Run) error {
	return run.Process(ctx, runner.Item{Target: "t1", Checkpoint: "1"}, func(context.Context, *runner.Attempt) error {
		// Deaf to its context, as a hung call is: the run must end by its lease, not by an
		// attempt that gave up (an item's failure would let the run succeed).
		<-j.stall
		return nil
	})
}

// wireChainRun is a run with its auto-resume fields as the API answers them.
type wireChainRun struct {
	ID          string
	Status      string
	Trigger     string
	StopReason  *string
	Attempt     int
	ResumedFrom *struct{ ID string }
	AutoResume  *struct {
		Outcome     string
		DueAt       *time.Time
		ResumedBy   *struct{ ID string }
		MaxAttempts int
	}
}

const chainFields = `id status trigger stopReason attempt resumedFrom { id }
	autoResume { outcome dueAt resumedBy { id } maxAttempts }`

// chain reads the job's runs, oldest first, through the API.
func (i *instance) chain(t *testing.T, token, job string) []wireChainRun {
	t.Helper()
	var data struct {
		Job struct {
			Runs struct{ Nodes []wireChainRun }
		}
	}
	i.post(t, token, `query($j: String!) { job(name: $j) { runs(first: 20) { nodes { `+chainFields+` } } } }`,
		map[string]any{"j": job}).decode(t, &data)
	runs := data.Job.Runs.Nodes
	slices.Reverse(runs)
	return runs
}

func (c wireChainRun) String() string {
	raw, _ := json.Marshal(c)
	return string(raw)
}

// TestRunAutoResumeChain: a run whose holder stops renewing its lease shows, through the API,
// the chain auto-resume makes of it — RESUMED by an AUTO_RESUME run of attempt 1 that
// continues it; that run, at the policy's last attempt, EXHAUSTED with the alarm raised; a
// PENDING resume with its due time under a policy changed at runtime; SUPERSEDED once a later
// run starts first; OFF when the policy is off.
func TestRunAutoResumeChain(t *testing.T) {
	b := setup(t)
	job := &stallJob{name: "stalls", policy: &runner.AutoResumePolicy{Enabled: true, MaxAttempts: 1, On: runner.DefaultAutoResume().On}, stall: make(chan struct{})}
	// Every stalled holder keeps its slot until the test ends.
	i := b.instance(instanceOpts{jobs: []runner.Job{job}, poolSize: 6, runner: func(c *runner.Config) {
		c.Scheduler, c.PollInterval = true, 100*time.Millisecond
	}})
	t.Cleanup(func() { close(job.stall) })
	op := b.token(model.RoleOperator)
	ended := func(what string, n int, done func(last wireChainRun) bool) []wireChainRun {
		t.Helper()
		var runs []wireChainRun
		testenv.Eventually(t, 30*time.Second, what, func() bool {
			runs = i.chain(t, op, "stalls")
			return len(runs) == n && done(runs[n-1])
		})
		return runs
	}

	first := i.startJob(t, op, "stalls")
	runs := ended("the first run to end by its lease and its resume to be given up", 2, func(last wireChainRun) bool {
		return last.AutoResume != nil && last.AutoResume.Outcome == "EXHAUSTED"
	})
	dead, resumed := runs[0], runs[1]
	if dead.ID != first || dead.Status != "FAILED" || dead.StopReason == nil || *dead.StopReason != "LEASE_EXPIRED" || dead.Attempt != 0 ||
		dead.AutoResume == nil || dead.AutoResume.Outcome != "RESUMED" || dead.AutoResume.DueAt == nil ||
		dead.AutoResume.ResumedBy == nil || dead.AutoResume.ResumedBy.ID != resumed.ID || dead.AutoResume.MaxAttempts != 1 {
		t.Fatalf("first run %s, want FAILED by LEASE_EXPIRED, attempt 0, RESUMED by %s with a due time, of 1 attempt", dead, resumed.ID)
	}
	if resumed.Trigger != "AUTO_RESUME" || resumed.Attempt != 1 || resumed.ResumedFrom == nil || resumed.ResumedFrom.ID != first ||
		resumed.StopReason == nil || *resumed.StopReason != "LEASE_EXPIRED" || resumed.AutoResume.DueAt != nil || resumed.AutoResume.ResumedBy != nil {
		t.Fatalf("resume %s, want AUTO_RESUME of attempt 1 from %s, ended by LEASE_EXPIRED, EXHAUSTED with no due time and no successor", resumed, first)
	}
	type alert struct{ Kind, JobName string }
	var alerts struct{ Alerts []alert }
	i.post(t, op, `{ alerts { kind jobName } }`, nil).decode(t, &alerts)
	if !slices.Contains(alerts.Alerts, alert{Kind: "AUTO_RESUME_EXHAUSTED", JobName: "stalls"}) {
		t.Fatalf("alerts %+v, want AUTO_RESUME_EXHAUSTED for stalls", alerts.Alerts)
	}

	// A policy changed at runtime governs the runs that end from then on.
	if _, ue, r := i.updateAutoResume(t, op, map[string]any{"name": "stalls", "maxAttempts": 3, "backoffSeconds": 3600}); len(ue) > 0 || len(r.Errors) > 0 {
		t.Fatalf("update: %+v %+v", ue, r.Errors)
	}
	before := time.Now()
	i.startJob(t, op, "stalls")
	runs = ended("an operator's RESUME to end by its lease and wait for its resume", 3, func(last wireChainRun) bool {
		return last.AutoResume != nil
	})
	pending := runs[2]
	if pending.Attempt != 0 || pending.AutoResume.Outcome != "PENDING" || pending.AutoResume.DueAt == nil ||
		pending.AutoResume.DueAt.Before(before.Add(50*time.Minute)) || pending.AutoResume.MaxAttempts != 3 {
		t.Fatalf("run %s, want a new chain (attempt 0) PENDING about an hour from now, of 3 attempts", pending)
	}
	if runs[1].AutoResume.MaxAttempts != 3 {
		t.Fatalf("the exhausted run reads maxAttempts %d, want the job's current 3", runs[1].AutoResume.MaxAttempts)
	}

	if _, ue, r := i.updateAutoResume(t, op, map[string]any{"name": "stalls", "enabled": false}); len(ue) > 0 || len(r.Errors) > 0 {
		t.Fatalf("update: %+v %+v", ue, r.Errors)
	}
	i.startJob(t, op, "stalls")
	runs = ended("a run under a policy turned off to end by its lease", 4, func(last wireChainRun) bool {
		return last.AutoResume != nil
	})
	if off := runs[3]; off.AutoResume.Outcome != "OFF" || off.AutoResume.DueAt != nil {
		t.Fatalf("run %s, want OFF with no due time", off)
	}
	testenv.Eventually(t, 10*time.Second, "the pending resume to be superseded by the later run", func() bool {
		runs = i.chain(t, op, "stalls")
		return runs[2].AutoResume.Outcome == "SUPERSEDED"
	})
	if runs[2].AutoResume.DueAt == nil || runs[2].AutoResume.ResumedBy != nil {
		t.Fatalf("superseded run %s, want its due time kept and no successor", runs[2])
	}
	// The run page's read: one run by id, with the run that resumed it.
	var one struct {
		Run struct {
			Attempt    int
			AutoResume struct {
				ResumedBy struct {
					Trigger     string
					Attempt     int
					ResumedFrom struct{ ID string }
				}
			}
		}
	}
	i.post(t, op, `query($id: ID!) { run(id: $id) { attempt autoResume { resumedBy { trigger attempt resumedFrom { id } } } } }`,
		map[string]any{"id": first}).decode(t, &one)
	if by := one.Run.AutoResume.ResumedBy; by.Trigger != "AUTO_RESUME" || by.Attempt != 1 || by.ResumedFrom.ID != first {
		t.Fatalf("run(%s).autoResume.resumedBy = %+v, want the AUTO_RESUME run of attempt 1 continuing it", first, by)
	}
}
