package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// ledgerJob walks a list of targets, one Process call each, in order. behave decides what
// each call returns; every call is counted per target with the attempt number it was given.
// With checkpoints the token after target i is "i+1" and RESUME continues after it; without,
// every run walks the whole list and the ledger alone decides.
type ledgerJob struct {
	info runner.JobInfo

	mu           sync.Mutex
	targets      []string
	inputs       map[string]any
	step         string
	calls        map[string][]int                                                  // target → a.Number of each call
	internal     map[string]bool                                                   // targets whose step has no external effect
	behave       func(ctx context.Context, target string, a *runner.Attempt) error // nil: succeed
	noCheckpoint bool
}

func newLedgerJob(name string, targets ...string) *ledgerJob {
	return &ledgerJob{
		info: runner.JobInfo{Name: name, Description: "ledger test job", Version: "1", Lease: 30 * time.Second,
			Retry: runner.RetryPolicy{MaxAttempts: 1}, StopConditions: []runner.StopCondition{}},
		targets: targets, inputs: map[string]any{}, calls: map[string][]int{}, internal: map[string]bool{},
	}
}

func (j *ledgerJob) Info() runner.JobInfo { return j.info }

func (j *ledgerJob) Run(ctx context.Context, run *runner.Run) error {
	j.mu.Lock()
	targets := append([]string(nil), j.targets...)
	j.mu.Unlock()
	start, err := checkpointNumber(run)
	if err != nil {
		return err
	}
	for i := start; i < len(targets); i++ {
		item := j.item(i, targets[i])
		err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			return j.call(ctx, item.Target, a)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// checkpointNumber reads a test job's checkpoint, a number (0 for none).
func checkpointNumber(run *runner.Run) (int, error) {
	cp := run.Checkpoint()
	if cp == "" {
		return 0, nil
	}
	return strconv.Atoi(cp)
}

func (j *ledgerJob) item(i int, target string) runner.Item {
	j.mu.Lock()
	defer j.mu.Unlock()
	it := runner.Item{Target: target, Step: j.step, External: !j.internal[target], Input: j.inputs[target]}
	if it.Input == nil {
		it.Input = target
	}
	if !j.noCheckpoint {
		it.Checkpoint = strconv.Itoa(i + 1)
	}
	return it
}

func (j *ledgerJob) call(ctx context.Context, target string, a *runner.Attempt) error {
	j.mu.Lock()
	j.calls[target] = append(j.calls[target], a.Number)
	behave := j.behave
	j.mu.Unlock()
	if behave == nil {
		return nil
	}
	return behave(ctx, target, a)
}

func (j *ledgerJob) callsOf(target string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.calls[target])
}

func (j *ledgerJob) attemptsOf(target string) []int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]int(nil), j.calls[target]...)
}

func (j *ledgerJob) setTargets(targets ...string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.targets = targets
}

func (j *ledgerJob) addTarget(target string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.targets = append(j.targets, target)
}

func (j *ledgerJob) setBehave(fn func(ctx context.Context, target string, a *runner.Attempt) error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.behave = fn
}

func (j *ledgerJob) setInput(target string, v any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.inputs[target] = v
}

// reconcilingJob is a ledgerJob with a reconcile hook.
type reconcilingJob struct {
	*ledgerJob
	reconcile func(ctx context.Context, target, step, key string) (runner.Reconciliation, error)
}

func (j *reconcilingJob) Reconcile(ctx context.Context, target, step, key string) (runner.Reconciliation, error) {
	return j.reconcile(ctx, target, step, key)
}

// versioned is a job registered under a different code version (another instance running
// newer code); stop, when non-nil, replaces its stop conditions.
type versioned struct {
	runner.Job
	version string
	stop    []runner.StopCondition
}

func (v versioned) Info() runner.JobInfo {
	info := v.Job.Info()
	info.Version = v.version
	if v.stop != nil {
		info.StopConditions = v.stop
	}
	return info
}

// entry is a ledger row as the tests read it, straight from the table.
type entry struct {
	ID             int64
	Generation     int64
	State          bt.LedgerState
	Attempt        int
	Key            string
	InputHash      string
	InputChanged   bool
	External       bool
	EffectRef      *string
	EvidenceRef    *string
	LastError      *string
	SameErrorCount int
	RunID          int64
}

// entry returns target's row in the job's newest generation that has one, or nil.
func (b *bundle) entry(job, target string) *entry {
	b.T.Helper()
	var e entry
	var state string
	err := b.Pool.QueryRow(context.Background(), `SELECT id, generation, state, attempt, idempotency_key, input_hash,
			input_changed, external, effect_ref, evidence_ref, last_error, same_error_count, run_id
		FROM job_ledger WHERE job_name = $1 AND target_key = $2 ORDER BY generation DESC LIMIT 1`, job, target).
		Scan(&e.ID, &e.Generation, &state, &e.Attempt, &e.Key, &e.InputHash, &e.InputChanged, &e.External,
			&e.EffectRef, &e.EvidenceRef, &e.LastError, &e.SameErrorCount, &e.RunID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		b.T.Fatal(err)
	}
	e.State = bt.LedgerState(state)
	return &e
}

// mustEntry is entry that fails the test when the row is missing.
func (b *bundle) mustEntry(job, target string) *entry {
	b.T.Helper()
	e := b.entry(job, target)
	if e == nil {
		b.T.Fatalf("no ledger row for %s/%s", job, target)
	}
	return e
}

// wantStates checks each target's ledger state.
func (b *bundle) wantStates(job string, want map[string]bt.LedgerState) {
	b.T.Helper()
	for target, st := range want {
		if e := b.mustEntry(job, target); e.State != st {
			b.T.Errorf("%s/%s is %s (attempt %d, error %v), want %s", job, target, e.State, e.Attempt, deref(e.LastError), st)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// finish waits for run id, started on r, to end and for its worker to let go (the worker
// releases the Redis lock after the final status commits, so a start made on seeing the
// status alone may still find the lock held), and returns the run as stored.
func (b *bundle) finish(r *runner.Runner, id int64) *bt.RunRecord {
	b.T.Helper()
	b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled, bt.StatusPaused)
	waitFor(b.T, fmt.Sprintf("the worker of run %d to release it", id), func() bool { return !r.Active(id) })
	rec, err := r.Runs().Get(context.Background(), id)
	if err != nil {
		b.T.Fatal(err)
	}
	// What the runner tracks of ledger states (rows it knows are new, states it wrote or read)
	// must never be wrong: a write that relied on it and was refused is redone as an upsert,
	// correct but a sign of a bookkeeping bug.
	if n := r.RedoneWrites(); n != 0 {
		b.T.Fatalf("%d item writes relied on a ledger state that was not so", n)
	}
	return rec
}

// succeed starts a run and waits for it to succeed.
func (b *bundle) succeed(r *runner.Runner, p runner.StartParams) *bt.RunRecord {
	b.T.Helper()
	id := mustStart(b.T, r, p)
	rec := b.finish(r, id)
	if rec.Status != bt.StatusSucceeded {
		b.T.Fatalf("run %d of %s ended %s (%s: %s), want SUCCEEDED", id, p.Job, rec.Status, rec.StopReason, rec.Message)
	}
	return rec
}

type counters struct{ processed, succeeded, failed, skipped, ambiguous int64 }

func (b *bundle) wantCounters(rec *bt.RunRecord, want counters) {
	b.T.Helper()
	got := counters{rec.Processed, rec.Succeeded, rec.Failed, rec.Skipped, rec.Ambiguous}
	if got != want {
		b.T.Errorf("run %d counters %+v, want %+v", rec.ID, got, want)
	}
}

// runErrors returns run id's error rows as target → failure class; a target with two rows
// fails the test (one row per failed item, not per attempt).
func (b *bundle) runErrors(id int64) map[string]string {
	b.T.Helper()
	rows, err := b.Pool.Query(context.Background(), `SELECT item_key, failure_class FROM job_run_errors WHERE run_id = $1`, id)
	if err != nil {
		b.T.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, c string
		if err := rows.Scan(&k, &c); err != nil {
			b.T.Fatal(err)
		}
		if prev, dup := out[k]; dup {
			b.T.Errorf("run %d has two error rows for %s (%s, %s)", id, k, prev, c)
		}
		out[k] = c
	}
	return out
}

// stateCounts runs a counting query returning (state, n) rows.
func (b *bundle) stateCounts(sql string, args ...any) map[bt.LedgerState]int64 {
	b.T.Helper()
	rows, err := b.Pool.Query(context.Background(), sql, args...)
	if err != nil {
		b.T.Fatal(err)
	}
	defer rows.Close()
	out := map[bt.LedgerState]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			b.T.Fatal(err)
		}
		if n != 0 {
			out[bt.LedgerState(st)] = n
		}
	}
	return out
}

// checkCounts checks that the counters kept in the item transactions agree with a COUNT(*)
// over the ledger: for the generation, and for each run in runs (which must be the last
// writer of every row it wrote). It returns the generation's counts.
func (b *bundle) checkCounts(r *runner.Runner, job string, gen int64, runs ...int64) map[bt.LedgerState]int64 {
	b.T.Helper()
	ctx := context.Background()
	want := b.stateCounts(`SELECT state, count(*) FROM job_ledger WHERE job_name = $1 AND generation = $2 GROUP BY state`, job, gen)
	got, err := r.Ledger().Summary(ctx, job, gen, 0)
	if err != nil {
		b.T.Fatal(err)
	}
	if !sameCounts(got, want) {
		b.T.Errorf("generation %d counters %v, COUNT(*) over the ledger %v", gen, got, want)
	}
	for _, id := range runs {
		want := b.stateCounts(`SELECT state, count(*) FROM job_ledger WHERE run_id = $1 GROUP BY state`, id)
		got, err := r.Ledger().Summary(ctx, job, gen, id)
		if err != nil {
			b.T.Fatal(err)
		}
		if !sameCounts(got, want) {
			b.T.Errorf("run %d counters %v, COUNT(*) over its ledger rows %v", id, got, want)
		}
	}
	return want
}

func sameCounts(a, b map[bt.LedgerState]int64) bool {
	for k, v := range a {
		if v != 0 && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if v != 0 && a[k] != v {
			return false
		}
	}
	return true
}

// replayNow requests a replay that needs no approval and waits for its REPLAY run to end.
func (b *bundle) replayNow(r *runner.Runner, runID int64, scope bt.ReplayScope) *bt.RunRecord {
	b.T.Helper()
	req, err := r.Replays().Request(context.Background(), runner.ReplayParams{RunID: runID, Scope: scope, Reason: "retry " + string(scope), Actor: "ops"})
	if err != nil {
		b.T.Fatalf("replay %s of run %d: %v", scope, runID, err)
	}
	if req.Status != bt.ReplayExecuted || req.ReplayRunID == nil {
		b.T.Fatalf("replay %s of run %d is %s (run %v), want EXECUTED with a run", scope, runID, req.Status, req.ReplayRunID)
	}
	rec := b.finish(r, *req.ReplayRunID)
	if rec.Status != bt.StatusSucceeded || rec.Trigger != bt.TriggerReplay || rec.Generation != req.Generation {
		b.T.Fatalf("replay run %d: %s %s generation %d (%s), want a SUCCEEDED REPLAY of generation %d",
			rec.ID, rec.Status, rec.Trigger, rec.Generation, rec.Message, req.Generation)
	}
	return rec
}

// auditRow is one audit_log row.
type auditRow struct{ Actor, Action, Target, Outcome string }

// audits returns the audit rows of action, oldest first.
func (b *bundle) audits(action string) []auditRow {
	b.T.Helper()
	rows, err := b.Pool.Query(context.Background(), `SELECT actor, action, target, outcome FROM audit_log WHERE action = $1 ORDER BY id`, action)
	if err != nil {
		b.T.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auditRow, error) {
		var a auditRow
		err := r.Scan(&a.Actor, &a.Action, &a.Target, &a.Outcome)
		return a, err
	})
	if err != nil {
		b.T.Fatal(err)
	}
	return out
}

// wantAudit checks that an audit row (actor, action, target, outcome) exists.
func (b *bundle) wantAudit(actor, action, target, outcome string) {
	b.T.Helper()
	for _, a := range b.audits(action) {
		if a.Actor == actor && a.Target == target && a.Outcome == outcome {
			return
		}
	}
	b.T.Errorf("no audit row %s %s %s → %s; rows of %s: %+v", actor, action, target, outcome, action, b.audits(action))
}

func hasCheck(p *bt.Preflight, name string, v bt.Verdict) bool {
	for _, c := range p.Checks {
		if c.Name == name && c.Verdict == v {
			return true
		}
	}
	return false
}

// waitFor polls cond with a deadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, what, cond)
}

func runTarget(id int64) string { return fmt.Sprintf("run:%d", id) }

func replayTarget(id int64) string { return fmt.Sprintf("replay:%d", id) }
