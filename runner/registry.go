package runner

import (
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/replay"
	"github.com/baton-run/baton/runner/store"
)

// registry holds the jobs registered on this instance, and answers the engine parts' questions
// about them.
type registry struct {
	// mu is held by Register from its checks to its last insert, so that a name is
	// registered once.
	mu           sync.RWMutex
	jobs         map[string]Job
	defaultLease time.Duration
}

func (g *registry) get(name string) (Job, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	j, ok := g.jobs[name]
	return j, ok
}

func (g *registry) names() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	names := make([]string, 0, len(g.jobs))
	for n := range g.jobs {
		names = append(names, n)
	}
	return names
}

// any reports whether any job is registered.
func (g *registry) any() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.jobs) > 0
}

// scheduledMode returns the mode of a scheduled fire of a registered job.
func (g *registry) scheduledMode(name string) (Mode, bool) {
	j, ok := g.get(name)
	if !ok {
		return "", false
	}
	if m := j.Info().ScheduledMode; m != "" {
		return m, true
	}
	return bt.ModeRestart, true
}

// replayJob is what the replay workflow knows of a job: for one not registered here, only the
// default downstream limits.
func (g *registry) replayJob(name string) (replay.Job, bool) {
	j, ok := g.get(name)
	conds := DefaultStopConditions()
	var v replay.Job
	if ok {
		info := j.Info()
		if info.StopConditions != nil {
			conds = info.StopConditions
		}
		v = replay.Job{Version: info.Version, SensitiveEvidence: info.SensitiveEvidence, Lease: leaseOf(j, g.defaultLease)}
		if hook, isRec := j.(Reconciler); isRec {
			v.Hook = hook
		}
	}
	for _, c := range conds {
		if c = c.WithDefaults(); c.Metric == DownstreamErrorRate {
			v.Downstream = append(v.Downstream, replay.DownstreamLimit{Name: c.Name, Threshold: c.Threshold, MinCalls: c.MinCalls})
		}
	}
	return v, ok
}

// reconcileLeases lists the registered jobs with a reconcile hook and each one's lease.
func (g *registry) reconcileLeases() []store.ReconcileLease {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []store.ReconcileLease
	for name, j := range g.jobs {
		if _, ok := j.(Reconciler); ok {
			out = append(out, store.ReconcileLease{Job: name, Lease: leaseOf(j, g.defaultLease)})
		}
	}
	return out
}

// leaseOf returns a job's lease, or def when it declares none.
func leaseOf(job Job, def time.Duration) time.Duration {
	if l := job.Info().Lease; l > 0 {
		return l
	}
	return def
}
