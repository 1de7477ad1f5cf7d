// Package metrics holds the runner's Prometheus series, shared by every engine part.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Metrics are the runner's Prometheus series. Labels never carry run ids or user strings
// other than registered job names' statuses.
type Metrics struct {
	RunsStarted      *prometheus.CounterVec
	RunsFinished     *prometheus.CounterVec
	Items            *prometheus.CounterVec
	LeaseRenewals    prometheus.Counter
	LeaseLost        prometheus.Counter
	LockContention   prometheus.Counter
	LockErrors       prometheus.Counter
	CapacityExceeded prometheus.Counter
	FiresSkipped     prometheus.Counter
	FiresBlocked     prometheus.Counter
	Recovered        prometheus.Counter
	AutoResumed      prometheus.Counter
	ShardsClaimed    prometheus.Counter
	StartLatency     prometheus.Histogram
	ScheduleLateness prometheus.Histogram
	// NotificationsSent counts delivery attempts of alarm notifications by channel kind and
	// result (sent, retry, failed); NotificationsPending is the outbox's pending deliveries,
	// cluster-wide, as this instance last claimed.
	NotificationsSent    *prometheus.CounterVec
	NotificationsPending prometheus.Gauge
}

// New makes the series and registers them on reg (nil registers none). redone reports the
// store's count of redone item writes.
func New(reg prometheus.Registerer, redone func() int64) (*Metrics, error) {
	m := &Metrics{
		RunsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_runs_started_total", Help: "Runs started on this instance, by trigger.",
		}, []string{"trigger"}),
		RunsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_runs_finished_total", Help: "Runs finished on this instance, by final status.",
		}, []string{"status"}),
		Items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_items_total", Help: "Items committed, by result (ledger state or SKIPPED).",
		}, []string{"result"}),
		LeaseRenewals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_lease_renewals_total", Help: "Successful lease renewals.",
		}),
		LeaseLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_lease_lost_total", Help: "Fenced writes refused because the lease was lost.",
		}),
		LockContention: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_lock_contention_total", Help: "Starts refused because the job was already running.",
		}),
		LockErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_lock_errors_total", Help: "Redis lock operations that failed (the database guard still held).",
		}),
		CapacityExceeded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_capacity_exceeded_total", Help: "Starts refused because every worker slot was busy.",
		}),
		FiresSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_scheduled_fires_skipped_total", Help: "Scheduled fires recorded as skipped.",
		}),
		FiresBlocked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_scheduled_fires_blocked_total", Help: "Scheduled RESTART fires refused because the job's current generation held targets in doubt.",
		}),
		Recovered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_runs_recovered_total", Help: "Runs failed by the recoverer because their lease expired.",
		}),
		AutoResumed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_runs_auto_resumed_total", Help: "RESUME runs started by auto-resume after a run ended by a lost holder, a shutdown or the database.",
		}),
		ShardsClaimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_shards_claimed_total", Help: "Shards of sharded runs this instance claimed for a free slot (a resumed shard again).",
		}),
		StartLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "baton_start_latency_seconds", Help: "Start: lock, insert and hand-off.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		NotificationsSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_notifications_sent_total", Help: "Attempts to deliver alarm notifications from this instance, by channel kind and result (sent, retry, failed: gave up).",
		}, []string{"channel_kind", "result"}),
		NotificationsPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "baton_notification_outbox_pending", Help: "Alarm notifications waiting in the outbox, cluster-wide, as this instance last saw.",
		}),
		ScheduleLateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "baton_scheduler_lateness_seconds", Help: "How late scheduled fires started, by the database clock.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
	}
	m.atZero()
	// A write that relied on the runner's knowledge of a ledger row (new, or in a known state)
	// and was redone as an upsert: harmless, but anything above 0 is a bug worth reporting.
	redoneWrites := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "baton_ledger_writes_redone_total",
		Help: "Item writes that relied on a ledger state that was not so and were redone as upserts (expected: 0).",
	}, func() float64 { return float64(redone()) })
	if reg != nil {
		for _, c := range []prometheus.Collector{m.RunsStarted, m.RunsFinished, m.Items, m.LeaseRenewals, m.LeaseLost,
			m.LockContention, m.LockErrors, m.CapacityExceeded, m.FiresSkipped, m.FiresBlocked, m.Recovered, m.AutoResumed, m.ShardsClaimed, m.StartLatency, m.ScheduleLateness,
			m.NotificationsSent, m.NotificationsPending, redoneWrites} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// atZero makes the labelled counters' series that rules and dashboards read exist at zero
// from the start: a series that appears only with its first increase is one a rate misses.
func (m *Metrics) atZero() {
	// The runs' and items', by the values a dashboard or a rule reads.
	for _, tr := range []bt.Trigger{bt.TriggerScheduled, bt.TriggerManual, bt.TriggerReplay, bt.TriggerReconcile, bt.TriggerAutoResume} {
		m.RunsStarted.WithLabelValues(string(tr))
	}
	for _, st := range []bt.RunStatus{bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled, bt.StatusPaused} {
		m.RunsFinished.WithLabelValues(string(st))
	}
	for _, st := range []bt.LedgerState{bt.LedgerConfirmed, bt.LedgerTransient, bt.LedgerValidationRejected, bt.LedgerConflict,
		bt.LedgerAmbiguous, bt.LedgerPolicyBlocked, bt.LedgerBugSuspected, bt.LedgerNotApplied, bt.LedgerSkipped} {
		m.Items.WithLabelValues(string(st))
	}
	// Every channel kind and result from the start, so a rule's rate or increase sees the
	// first failure.
	for _, k := range []bt.ChannelKind{bt.ChannelWebhook, bt.ChannelSlack, bt.ChannelPagerDuty} {
		for _, result := range []string{"sent", "retry", "failed"} {
			m.NotificationsSent.WithLabelValues(string(k), result)
		}
	}
}
