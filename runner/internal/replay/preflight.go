package replay

import (
	"context"
	"fmt"
	"strings"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// measured is what a preflight judges by.
type measured struct {
	p          *bt.Preflight
	counts     map[bt.LedgerState]int64
	calls      int64
	job        Job
	registered bool
}

// measure reads what a preflight of generation gen of a job judges by: the generation's counts
// (from counters, never a COUNT over the ledger), the last checkpoint's age, the downstream
// error rate over five minutes and the job's code version against the one source ran.
func (s *Service) measure(ctx context.Context, settings *bt.JobSettings, source *bt.RunRecord, gen int64, scope bt.ReplayScope) (*measured, error) {
	st := s.cfg.Store
	counts, err := st.LedgerCounts(ctx, settings.Name, gen, 0)
	if err != nil {
		return nil, err
	}
	now, err := st.Now(ctx)
	if err != nil {
		return nil, err
	}
	p := &bt.Preflight{
		JobName: settings.Name, RunID: source.ID, Generation: gen, Scope: scope, RiskLevel: settings.RiskLevel,
		Confirmed: counts[bt.LedgerConfirmed], Ambiguous: counts[bt.LedgerAmbiguous], InFlight: counts[bt.LedgerInFlight],
		FailedByClass: map[bt.LedgerState]int64{}, FixQueue: counts[bt.LedgerBugSuspected],
		RunJobVersion: source.JobVersion, CurrentJobVersion: settings.JobVersion, ComputedAt: now,
	}
	for state, n := range counts {
		if state.Failed() {
			p.FailedByClass[state] = n
		}
	}
	if age, err := st.CheckpointAge(ctx, settings.Name, gen); err != nil {
		return nil, err
	} else if age != nil {
		secs := age.Seconds()
		p.LastCheckpointAgeSecs = &secs
	}
	calls, downstream, _, err := st.CallStats(ctx, settings.Name, 5*time.Minute)
	if err != nil {
		return nil, err
	}
	p.DownstreamCalls = calls
	if calls > 0 {
		p.DownstreamErrorRate = float64(downstream) / float64(calls)
	}
	job, ok := s.cfg.JobFunc(settings.Name)
	if ok {
		p.CurrentJobVersion = job.Version
	}
	p.JobVersionChanged = p.RunJobVersion != p.CurrentJobVersion
	return &measured{p: p, counts: counts, calls: calls, job: job, registered: ok}, nil
}

func (m *measured) block(reason string) {
	m.p.Blocked = true
	m.p.BlockingReasons = append(m.p.BlockingReasons, reason)
}

func (m *measured) approve(reason string) {
	m.p.RequiresApproval = true
	m.p.ApprovalReasons = append(m.p.ApprovalReasons, reason)
}

func (m *measured) check(name string, value, threshold float64, v bt.Verdict, detail string) {
	m.p.Checks = append(m.p.Checks, bt.Check{Name: name, Value: value, Threshold: threshold, Verdict: v, Detail: detail})
}

// Preflight computes what replaying scope of a run's generation would do and whether it may:
// counts by state (from counters), the last checkpoint's age, the downstream error rate over
// five minutes, whether the job's code changed since the run, whether approval is needed, and
// every check with its value and verdict.
func (s *Service) Preflight(ctx context.Context, runID int64, scope bt.ReplayScope) (*bt.Preflight, error) {
	return s.PreflightOf(ctx, runID, scope, nil)
}

// PreflightOf is Preflight for a replay of the selected targets (nil: every target of the
// scope): TargetsInScope counts the selected targets the scope retries, a check lists the
// others (confirmed, in doubt, or without an entry in the generation: left as they are), and
// it is blocked when none is in scope.
func (s *Service) PreflightOf(ctx context.Context, runID int64, scope bt.ReplayScope, targets []string) (*bt.Preflight, error) {
	if !scope.Valid() {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Message: fmt.Sprintf("unknown replay scope %q (TRANSIENT, FAILED or FULL)", scope), Field: "scope"}
	}
	run, err := s.cfg.Store.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	settings, err := s.cfg.Store.Job(ctx, run.JobName)
	if err != nil {
		return nil, err
	}
	m, err := s.measure(ctx, settings, run, run.Generation, scope)
	if err != nil {
		return nil, err
	}
	if targets == nil {
		for _, state := range scope.States() {
			m.p.TargetsInScope += m.counts[state]
		}
	} else if err := s.countSelected(ctx, m, run, targets); err != nil {
		return nil, err
	}
	s.judgeReplay(ctx, m, run, settings)
	return m.p, nil
}

// countSelected counts the selected targets the scope retries, and records a check for the
// others.
func (s *Service) countSelected(ctx context.Context, m *measured, run *bt.RunRecord, targets []string) error {
	in := map[bt.LedgerState]bool{}
	for _, st := range m.p.Scope.States() {
		in[st] = true
	}
	m.p.TargetKeys = targets
	var outside []string
	for _, key := range targets {
		rows, err := s.cfg.Store.Ledger(ctx, store.LedgerQuery{JobName: run.JobName, Generation: run.Generation, TargetKey: key, Limit: 50})
		if err != nil {
			return err
		}
		retried := false
		for _, e := range rows {
			retried = retried || in[e.State]
		}
		if retried {
			m.p.TargetsInScope++
		} else {
			outside = append(outside, key)
		}
	}
	if len(outside) > 0 {
		m.check("selected targets outside the scope", float64(len(outside)), 0, bt.VerdictWarn,
			fmt.Sprintf("%d selected target(s) are not retried by scope %s (confirmed, in doubt, or unknown in generation %d): %s",
				len(outside), m.p.Scope, run.Generation, strings.Join(outside, ", ")))
	}
	return nil
}

// judgeReplay adds a replay preflight's checks, blocking and approval reasons.
func (s *Service) judgeReplay(ctx context.Context, m *measured, run *bt.RunRecord, settings *bt.JobSettings) {
	p := m.p
	if !m.registered {
		m.block(fmt.Sprintf("job %s is not registered on this instance", run.JobName))
	}
	if run.Status.Active() {
		m.block(fmt.Sprintf("run %d is still %s: wait for it to finish or cancel it", run.ID, run.Status))
	}
	if active, err := s.cfg.Store.ActiveRun(ctx, run.JobName); err == nil && active != nil {
		id := active.ID
		p.ActiveRunID = &id
		if active.ID != run.ID {
			m.block(activeRunReason(run.JobName, active))
		}
	}
	switch {
	case p.Ambiguous > 0 && p.Scope == bt.ScopeFull:
		m.check("ambiguous effects", float64(p.Ambiguous), 0, bt.VerdictBlock, "targets in doubt must be reconciled before a full replay")
		m.block(fmt.Sprintf("%d target(s) are AMBIGUOUS_EFFECT: reconcile them before a full replay", p.Ambiguous))
	case p.Ambiguous > 0:
		m.check("ambiguous effects", float64(p.Ambiguous), 0, bt.VerdictWarn, "they stay quarantined: this replay does not touch them")
	default:
		m.check("ambiguous effects", 0, 0, bt.VerdictOK, "none")
	}
	if p.InFlight > 0 && !run.Status.Active() {
		m.check("in-flight intents", float64(p.InFlight), 0, bt.VerdictWarn, "intents without outcome: they become AMBIGUOUS_EFFECT, never retried")
	}
	// A generation without ledger rows (pruned, or never written) has nothing to tell the
	// replay: every target would look new and be called again, whatever it had done.
	var rows int64
	for _, n := range m.counts {
		rows += n
	}
	if rows == 0 {
		m.check("ledger rows", 0, 1, bt.VerdictBlock, "the generation has no ledger rows: a replay would call every target anew")
		m.block(fmt.Sprintf("generation %d has no ledger rows (pruned by retention, or never written): nothing to replay from", run.Generation))
	}
	if p.TargetsInScope == 0 && (p.Scope != bt.ScopeFull || p.TargetKeys != nil) {
		m.check("targets in scope", 0, 1, bt.VerdictBlock, "nothing to replay")
		m.block(fmt.Sprintf("no target of generation %d is in scope %s", run.Generation, p.Scope))
	} else {
		m.check("targets in scope", float64(p.TargetsInScope), 1, bt.VerdictOK, fmt.Sprintf("%d target(s) would be retried", p.TargetsInScope))
	}
	if p.FixQueue > 0 {
		m.check("fix queue", float64(p.FixQueue), 0, bt.VerdictWarn,
			fmt.Sprintf("%d target(s) failed the same way 3 times: they go to the fix queue, not to retry", p.FixQueue))
	}
	// Stop conditions, judged on the job's calls over the last five minutes: replaying into a
	// failing downstream only adds load and doubt.
	judgeDownstream(p, m.job.Downstream, m.calls)
	if p.LastCheckpointAgeSecs != nil {
		m.check("last checkpoint age", *p.LastCheckpointAgeSecs, 0, bt.VerdictOK,
			fmt.Sprintf("the generation's checkpoint last moved %s ago", time.Duration(*p.LastCheckpointAgeSecs*float64(time.Second)).Round(time.Second)))
	}
	if p.JobVersionChanged {
		m.check("job version", 1, 0, bt.VerdictWarn, fmt.Sprintf("run used version %q, the code is now %q", p.RunJobVersion, p.CurrentJobVersion))
		m.approve(fmt.Sprintf("the job's code changed since the run (%q → %q)", p.RunJobVersion, p.CurrentJobVersion))
	}
	if settings.RiskLevel == bt.RiskHigh {
		m.approve("HIGH-risk job: a second person must approve, with a compensation reference")
	}
}

// RestartPreflight computes what a RESTART of job would do and whether it may: the counts of
// its current generation (whose targets a new generation calls again under new keys), targets
// in doubt (AMBIGUOUS_EFFECT or IN_FLIGHT: they block), an active run (blocks), the stop
// conditions over the last five minutes, and approval for a HIGH-risk job. RunID is the newest
// run of the current generation. It returns nil and no error for a job that has never run.
func (s *Service) RestartPreflight(ctx context.Context, job string) (*bt.Preflight, error) {
	settings, err := s.cfg.Store.Job(ctx, job)
	if err != nil {
		return nil, err
	}
	source, err := s.restartSource(ctx, settings)
	if err != nil || source == nil {
		return nil, err
	}
	m, err := s.measure(ctx, settings, source, settings.CurrentGeneration, bt.ScopeFull)
	if err != nil {
		return nil, err
	}
	m.p.Kind = bt.KindRestart
	for _, n := range m.counts {
		m.p.TargetsInScope += n
	}
	if err := s.judgeRestart(ctx, m, settings); err != nil {
		return nil, err
	}
	return m.p, nil
}

// judgeRestart adds a RESTART preflight's checks, blocking and approval reasons.
func (s *Service) judgeRestart(ctx context.Context, m *measured, settings *bt.JobSettings) error {
	p, job, gen := m.p, settings.Name, settings.CurrentGeneration
	if !m.registered {
		m.block(fmt.Sprintf("job %s is not registered on this instance", job))
	}
	if active, err := s.cfg.Store.ActiveRun(ctx, job); err != nil {
		return err
	} else if active != nil {
		id := active.ID
		p.ActiveRunID = &id
		m.block(activeRunReason(job, active))
	}
	if p.Ambiguous > 0 {
		m.check("ambiguous effects", float64(p.Ambiguous), 0, bt.VerdictBlock, "a new generation would call them again under new keys")
		m.block(fmt.Sprintf("%d target(s) of generation %d are AMBIGUOUS_EFFECT: reconcile or resolve them before a RESTART", p.Ambiguous, gen))
	} else {
		m.check("ambiguous effects", 0, 0, bt.VerdictOK, "none")
	}
	if p.InFlight > 0 {
		m.check("in-flight intents", float64(p.InFlight), 0, bt.VerdictBlock, "intents without an outcome: they must become AMBIGUOUS_EFFECT and be settled first")
		m.block(fmt.Sprintf("%d target(s) of generation %d are IN_FLIGHT: wait for their run to end (they then become AMBIGUOUS_EFFECT) and settle them before a RESTART", p.InFlight, gen))
	}
	m.check("targets called again", float64(p.TargetsInScope), 0, bt.VerdictOK,
		fmt.Sprintf("generation %d recorded %d target(s), %d CONFIRMED: generation %d calls every target again under new keys", gen, p.TargetsInScope, p.Confirmed, gen+1))
	judgeDownstream(p, m.job.Downstream, m.calls)
	if settings.RiskLevel == bt.RiskHigh {
		if p.Confirmed > 0 {
			m.check("confirmed effects", float64(p.Confirmed), 0, bt.VerdictWarn,
				fmt.Sprintf("%d effect(s) confirmed in generation %d would be made again under new keys", p.Confirmed, gen))
		}
		m.approve("HIGH-risk job: a RESTART calls every target again, so a second person must approve, with a compensation reference")
	}
	return nil
}

// activeRunReason says why a job's active run blocks a replay or RESTART, naming the replay
// request that started it, if one did: right after a request executes, the run in the way is
// the request's own.
func activeRunReason(job string, active *bt.RunRecord) string {
	if active.ReplayRequestID != nil {
		return fmt.Sprintf("run %d of job %s, started by replay request %d, is %s: a further replay or RESTART waits for it to end",
			active.ID, job, *active.ReplayRequestID, active.Status)
	}
	return fmt.Sprintf("job %s has an active run (%d): wait for it to finish or cancel it", job, active.ID)
}

// restartSource returns the run a RESTART of the job supersedes: the newest run of its current
// generation, or its newest run at all; nil when the job has never run.
func (s *Service) restartSource(ctx context.Context, settings *bt.JobSettings) (*bt.RunRecord, error) {
	run, err := s.cfg.Store.GenerationRun(ctx, settings.Name, settings.CurrentGeneration)
	if err != nil || run != nil {
		return run, err
	}
	return s.cfg.Store.LastRun(ctx, settings.Name)
}

// judgeDownstream adds to a preflight a check for each downstream-error-rate stop condition,
// judged on the job's calls over the last five minutes, and blocks it when one would trip:
// repeating calls into a failing downstream only adds load and doubt.
func judgeDownstream(p *bt.Preflight, limits []DownstreamLimit, calls int64) {
	for _, c := range limits {
		detail := fmt.Sprintf("%.1f%% of %d external calls failed downstream in the last 5 minutes", p.DownstreamErrorRate*100, calls)
		verdict := bt.VerdictOK
		switch {
		case calls < int64(c.MinCalls):
			detail += fmt.Sprintf(" (no verdict under %d calls)", c.MinCalls)
		case p.DownstreamErrorRate > c.Threshold:
			verdict = bt.VerdictBlock
			p.Blocked = true
			p.BlockingReasons = append(p.BlockingReasons, fmt.Sprintf("stop condition %q: %s (threshold %.1f%%)", c.Name, detail, c.Threshold*100))
		}
		p.Checks = append(p.Checks, bt.Check{Name: c.Name, Value: p.DownstreamErrorRate, Threshold: c.Threshold, Verdict: verdict, Detail: detail})
	}
}
