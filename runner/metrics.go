package runner

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/baton-run/baton/runner/postgres"
)

// metrics are the runner's Prometheus series. Labels never carry run ids or user strings
// other than registered job names' statuses.
type metrics struct {
	runsStarted      *prometheus.CounterVec
	runsFinished     *prometheus.CounterVec
	items            *prometheus.CounterVec
	leaseRenewals    prometheus.Counter
	leaseLost        prometheus.Counter
	lockContention   prometheus.Counter
	lockErrors       prometheus.Counter
	capacityExceeded prometheus.Counter
	firesSkipped     prometheus.Counter
	recovered        prometheus.Counter
	startLatency     prometheus.Histogram
	scheduleLateness prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, store *postgres.Store) (*metrics, error) {
	m := &metrics{
		runsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_runs_started_total", Help: "Runs started on this instance, by trigger.",
		}, []string{"trigger"}),
		runsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_runs_finished_total", Help: "Runs finished on this instance, by final status.",
		}, []string{"status"}),
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baton_items_total", Help: "Items committed, by result (ledger state or SKIPPED).",
		}, []string{"result"}),
		leaseRenewals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_lease_renewals_total", Help: "Successful lease renewals.",
		}),
		leaseLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_lease_lost_total", Help: "Fenced writes refused because the lease was lost.",
		}),
		lockContention: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_lock_contention_total", Help: "Starts refused because the job was already running.",
		}),
		lockErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_lock_errors_total", Help: "Redis lock operations that failed (the database guard still held).",
		}),
		capacityExceeded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_capacity_exceeded_total", Help: "Starts refused because every worker slot was busy.",
		}),
		firesSkipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_scheduled_fires_skipped_total", Help: "Scheduled fires recorded as skipped.",
		}),
		recovered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "baton_runs_recovered_total", Help: "Runs failed by the recoverer because their lease expired.",
		}),
		startLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "baton_start_latency_seconds", Help: "Start: lock, insert and hand-off.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		scheduleLateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "baton_scheduler_lateness_seconds", Help: "How late scheduled fires started, by the database clock.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
	}
	// A write that relied on the runner's knowledge of a ledger row (new, or in a known state)
	// and was redone as an upsert: harmless, but anything above 0 is a bug worth reporting.
	redone := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "baton_ledger_writes_redone_total",
		Help: "Item writes that relied on a ledger state that was not so and were redone as upserts (expected: 0).",
	}, func() float64 { return float64(store.RedoneWrites()) })
	if reg != nil {
		for _, c := range []prometheus.Collector{m.runsStarted, m.runsFinished, m.items, m.leaseRenewals, m.leaseLost,
			m.lockContention, m.lockErrors, m.capacityExceeded, m.firesSkipped, m.recovered, m.startLatency, m.scheduleLateness, redone} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
