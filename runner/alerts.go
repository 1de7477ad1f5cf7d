package runner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	bt "github.com/baton-run/baton/runner/batontype"
)

// AlarmService judges the alarms and keeps their cluster-wide state: episodes, acknowledgements
// and silences. Get it with Runner.Alarms.
type AlarmService struct{ r *Runner }

// Alarms returns the alarm service.
func (r *Runner) Alarms() *AlarmService { return &AlarmService{r} }

// Active returns the active alarms, judged by the database clock:
//   - HEARTBEAT_MISSED: a running run has not written for more than its whole lease (two
//     renewal half-lives missed);
//   - CHECKPOINT_STALLED: a running run's checkpoint has not moved for StallAfter;
//   - NO_LEDGER_WRITES: a running run keeps renewing its lease but commits no item;
//   - TARGET_RETRIED: targets attempted 3 or more times without success;
//   - DOWNSTREAM_ERRORS: more than 10% of a job's external calls failed downstream over 5
//     minutes (at least 20 calls);
//   - AMBIGUOUS_EFFECT: any target whose effect is in doubt;
//   - AUTO_RESUME_EXHAUSTED: a job's latest run ended by a lost holder, a shutdown or the
//     database after the last attempt its auto-resume policy allows: nothing continues it
//     until an operator does (a RESUME clears the alarm);
//   - SCHEDULED_FIRE_BLOCKED: a job's latest scheduled fire was a RESTART refused because its
//     current generation holds targets in doubt, and no run of the job has started since.
//
// Each call records what it finds in the cluster-wide alarm history (any instance's call
// opens, refreshes and resolves episodes for all of them) and returns the active alarms with
// their episode, acknowledgement and silence.
func (s *AlarmService) Active(ctx context.Context) ([]bt.Alert, error) {
	r := s.r
	active, err := s.judge(ctx)
	if err != nil {
		return nil, err
	}
	return r.store.SyncAlerts(ctx, active)
}

// MaxAlertSilence is the longest silence an alarm takes.
const MaxAlertSilence = 30 * 24 * time.Hour

// Acknowledge records actor's acknowledgement of the active alarm id. An alarm acknowledged
// already keeps its first acknowledgement. NOT_FOUND: the alarm is not active.
func (s *AlarmService) Acknowledge(ctx context.Context, id, actor string) (*bt.Alert, error) {
	r := s.r
	a, err := r.store.AckAlert(ctx, id, actorOr(actor))
	r.audit(ctx, actor, "acknowledgeAlert", "alert:"+id, map[string]any{"id": id}, err)
	return a, err
}

// Silence hides the active alarm id from the console's lists, badges and live stream for
// d (1 second to MaxAlertSilence; 0 lifts a silence), by the database clock. NOT_FOUND: the
// alarm is not active; INVALID_INPUT: d out of range.
func (s *AlarmService) Silence(ctx context.Context, id string, d time.Duration, actor, reason string) (*bt.Alert, error) {
	r := s.r
	args := map[string]any{"id": id, "seconds": d.Seconds(), "reason": reason}
	if d != 0 && (d < time.Second || d > MaxAlertSilence) {
		err := &bt.Error{Code: bt.CodeInvalidInput, Field: "seconds", Message: fmt.Sprintf("a silence lasts from 1 second to %d days (0 lifts it)", int(MaxAlertSilence.Hours()/24))}
		r.audit(ctx, actor, "silenceAlert", "alert:"+id, args, err)
		return nil, err
	}
	a, err := r.store.SilenceAlert(ctx, id, d, actorOr(actor), reason)
	r.audit(ctx, actor, "silenceAlert", "alert:"+id, args, err)
	return a, err
}

// History lists alarm episodes, active and resolved, newest first.
func (s *AlarmService) History(ctx context.Context, f bt.AlertHistoryFilter) ([]bt.Alert, error) {
	if f.Limit <= 0 {
		f.Limit = 20
	}
	return s.r.store.AlertHistory(ctx, f)
}

// stuck judges one running run, or one held shard, by its heartbeat, its ledger writes and its
// checkpoint. A shard's alarms name its run and the shard.
func (s *AlarmService) stuck(now time.Time, run *bt.RunRecord) []bt.Alert {
	r := s.r
	id, key, what := run.ID, fmt.Sprintf("run:%d", run.ID), fmt.Sprintf("run %d of %s", run.ID, run.JobName)
	if s := run.Shard; s != nil {
		id, key, what = s.RunID, fmt.Sprintf("run:%d:shard:%s", s.RunID, s.Key), fmt.Sprintf("shard %s of run %d of %s", s.Key, s.RunID, run.JobName)
	}
	lease := time.Duration(run.LeaseSeconds) * time.Second
	stall := 10 * time.Minute
	if job, ok := r.Job(run.JobName); ok && job.Info().StallAfter > 0 {
		stall = job.Info().StallAfter
	}
	if since := now.Sub(run.HeartbeatAt); since > lease {
		return []bt.Alert{{ID: fmt.Sprintf("%s:%s", bt.AlertHeartbeatMissed, key), Kind: bt.AlertHeartbeatMissed,
			Severity: "CRITICAL", JobName: run.JobName, RunID: &id, Value: since.Seconds(), Since: run.HeartbeatAt,
			Message: fmt.Sprintf("%s on %s has not renewed its lease for %s (lease %s): the worker may be stuck or dead",
				what, run.Instance, since.Round(time.Second), lease)}}
	}
	if since := now.Sub(run.LastProgressAt); since > stall {
		return []bt.Alert{{ID: fmt.Sprintf("%s:%s", bt.AlertNoLedgerWrites, key), Kind: bt.AlertNoLedgerWrites,
			Severity: "WARNING", JobName: run.JobName, RunID: &id, Value: since.Seconds(), Since: run.LastProgressAt,
			Message: fmt.Sprintf("%s keeps its lease but has committed no item for %s", what, since.Round(time.Second))}}
	}
	if since := now.Sub(run.LastCheckpointAt); since > stall {
		return []bt.Alert{{ID: fmt.Sprintf("%s:%s", bt.AlertCheckpointStalled, key), Kind: bt.AlertCheckpointStalled,
			Severity: "WARNING", JobName: run.JobName, RunID: &id, Value: since.Seconds(), Since: run.LastCheckpointAt,
			Message: fmt.Sprintf("%s: checkpoint %q unchanged for %s", what, run.Checkpoint, since.Round(time.Second))}}
	}
	return nil
}

// judge computes the active alarms from the database's facts.
func (s *AlarmService) judge(ctx context.Context) ([]bt.Alert, error) {
	r := s.r
	f, err := r.store.AlertFacts(ctx)
	if err != nil {
		return nil, err
	}
	var out []bt.Alert
	for _, run := range append(f.Active, f.Shards...) {
		if run.Status != bt.StatusRunning || run.ShardTotal > 0 {
			continue // a sharded run lives by its shards, judged one by one
		}
		out = append(out, s.stuck(f.Now, run)...)
	}
	for job, n := range f.Retried {
		out = append(out, bt.Alert{ID: fmt.Sprintf("%s:job:%s", bt.AlertTargetRetried, job), Kind: bt.AlertTargetRetried,
			Severity: "WARNING", JobName: job, Value: float64(n), Since: f.Now,
			Message: fmt.Sprintf("%d target(s) of %s were attempted 3 or more times without success", n, job)})
	}
	for job, v := range f.Downstream {
		calls, errs := v[0], v[1]
		if calls >= 20 && float64(errs)/float64(calls) > 0.10 {
			rate := float64(errs) / float64(calls)
			out = append(out, bt.Alert{ID: fmt.Sprintf("%s:job:%s", bt.AlertDownstreamErrors, job), Kind: bt.AlertDownstreamErrors,
				Severity: "WARNING", JobName: job, Value: rate, Since: f.Now,
				Message: fmt.Sprintf("%.1f%% of %d external calls of %s failed downstream (5xx, 429, timeouts) in the last 5 minutes", rate*100, calls, job)})
		}
	}
	for job, n := range f.Ambiguous {
		out = append(out, bt.Alert{ID: fmt.Sprintf("%s:job:%s", bt.AlertAmbiguousEffect, job), Kind: bt.AlertAmbiguousEffect,
			Severity: "CRITICAL", JobName: job, Value: float64(n), Since: f.Now,
			Message: fmt.Sprintf("%d target(s) of %s may or may not have had their effect: reconcile them before any replay", n, job)})
	}
	for job, run := range f.Exhausted {
		id := run.ID
		since := run.StartedAt
		if run.FinishedAt != nil {
			since = *run.FinishedAt
		}
		out = append(out, bt.Alert{ID: fmt.Sprintf("%s:job:%s", bt.AlertAutoResumeExhausted, job), Kind: bt.AlertAutoResumeExhausted,
			Severity: "CRITICAL", JobName: job, RunID: &id, Value: float64(run.Attempt), Since: since,
			Message: fmt.Sprintf("run %d of %s ended %s after %d automatic resume(s), the last its policy allows: start it with RESUME to continue from checkpoint %q",
				id, job, run.StopReason, run.Attempt, run.Checkpoint)})
	}
	for job, f := range f.Blocked {
		out = append(out, bt.Alert{ID: fmt.Sprintf("%s:job:%s", bt.AlertScheduledFireBlocked, job), Kind: bt.AlertScheduledFireBlocked,
			Severity: "CRITICAL", JobName: job, Value: 1, Since: f.At,
			Message: fmt.Sprintf("the scheduled RESTART of %s due %s was refused, and its schedule starts nothing until the targets in doubt are settled: %s",
				job, f.ScheduledFor.UTC().Format(time.RFC3339), f.Detail)})
	}
	if degraded := r.ds.degradedInstances(); len(degraded) > 0 {
		out = append(out, bt.Alert{ID: string(bt.AlertDownstreamDegraded), Kind: bt.AlertDownstreamDegraded,
			Severity: "CRITICAL", Value: float64(len(degraded)), Since: f.Now,
			Message: fmt.Sprintf("Redis is unreachable from %s: their calls to downstreams are limited on each instance's share of the limit (the limit divided by the live instances), not cluster-wide", strings.Join(degraded, ", "))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// alertCollector exposes the alarms as Prometheus gauges: baton_alerts{kind} and
// baton_alert_value{kind} (the worst value of the kind), computed at most every 5 seconds.
type alertCollector struct {
	r     *Runner
	count *prometheus.Desc
	value *prometheus.Desc

	mu     sync.Mutex
	at     time.Time
	alerts []bt.Alert
}

// AlertCollector returns a Prometheus collector of the runner's alarms; register it once per
// process.
func (r *Runner) AlertCollector() prometheus.Collector {
	return &alertCollector{r: r,
		count: prometheus.NewDesc("baton_alerts", "Active alarms by kind.", []string{"kind"}, nil),
		value: prometheus.NewDesc("baton_alert_value", "Largest value among active alarms of a kind (seconds, count or rate).", []string{"kind"}, nil),
	}
}

func (c *alertCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.count; ch <- c.value }

func (c *alertCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	if time.Since(c.at) > 5*time.Second {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if alerts, err := c.r.Alarms().Active(ctx); err == nil {
			c.alerts, c.at = alerts, time.Now()
		}
		cancel()
	}
	alerts := c.alerts
	c.mu.Unlock()
	counts, values := map[bt.AlertKind]float64{}, map[bt.AlertKind]float64{}
	for _, k := range []bt.AlertKind{bt.AlertHeartbeatMissed, bt.AlertCheckpointStalled, bt.AlertTargetRetried,
		bt.AlertDownstreamErrors, bt.AlertNoLedgerWrites, bt.AlertAmbiguousEffect, bt.AlertAutoResumeExhausted, bt.AlertDownstreamDegraded, bt.AlertScheduledFireBlocked} {
		counts[k], values[k] = 0, 0
	}
	for _, a := range alerts {
		counts[a.Kind]++
		values[a.Kind] = max(values[a.Kind], a.Value)
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, n, string(k))
		ch <- prometheus.MustNewConstMetric(c.value, prometheus.GaugeValue, values[k], string(k))
	}
}
