//go:build unix

package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	CleanupBuild()
	os.Exit(code)
}

// sizes are a scenario's dimensions: the short form runs in `go test`, the soak form behind
// the soak build tag.
type sizes struct {
	name string
	// Demo jobs: pages (and their latency) of demo-collect, accounts (and the provider's
	// latency) of demo-settlement. A run of either lasts about n × latency plus overhead.
	pages, accounts              int
	pageLatency, providerLatency time.Duration
	rounds                       int           // faults per scenario
	outage                       time.Duration // how long a service stays down or a partition lasts
	crashPostgres                bool          // crash PostgreSQL (SIGKILL) instead of a fast shutdown
	stormJobs                    int
	stormFor                     time.Duration
	burst                        int // concurrent startJob calls
	// How the Redis partition cuts the holder off (Cut or Blackhole), and with which lease
	// (0: the cluster's default).
	redisPartition      ProxyMode
	redisPartitionLease time.Duration
}

var short = sizes{
	name: "short", pages: 300, accounts: 200, pageLatency: 30 * time.Millisecond, providerLatency: 30 * time.Millisecond,
	rounds: 1, outage: 1 * time.Second, stormJobs: 10, stormFor: 20 * time.Second, burst: 300,
	redisPartition: Cut,
}

// demoCluster starts three `baton serve --demo` instances with the demo jobs sized by s
// and the default lease (4s).
func demoCluster(t *testing.T, s sizes, poolSize int) *Cluster {
	t.Helper()
	return demoClusterLease(t, s, poolSize, 0)
}

// demoClusterLease is demoCluster with another lease (0: the default).
func demoClusterLease(t *testing.T, s sizes, poolSize int, lease time.Duration) *Cluster {
	t.Helper()
	return New(t, Config{PoolSize: poolSize, Lease: lease, Env: map[string]string{
		"BATON_DEMO_PAGES":            strconv.Itoa(s.pages),
		"BATON_DEMO_PAGE_LATENCY":     s.pageLatency.String(),
		"BATON_DEMO_ACCOUNTS":         strconv.Itoa(s.accounts),
		"BATON_DEMO_PROVIDER_LATENCY": s.providerLatency.String(),
	}})
}

// runFor bounds how long a demo run of these sizes may take from start to end, with room
// for a loaded machine.
func (s sizes) runFor() time.Duration {
	d := time.Duration(max(s.pages, s.accounts)) * (max(s.pageLatency, s.providerLatency) + 20*time.Millisecond)
	return max(3*time.Minute, 2*d+time.Minute)
}

// lifeCtx lasts as long as the test (subscriptions may outlive ctxT's two minutes).
func lifeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

// ctxT is the context of one API call or short exchange: two minutes.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// start starts job on node n and returns the run id, failing on any refusal.
func start(t *testing.T, n *Node, job, mode string) int64 {
	t.Helper()
	res, err := n.API().StartJob(ctxT(t), job, mode)
	if err != nil {
		t.Fatalf("startJob %s %s on %s: %v", job, mode, n.Name, err)
	}
	if res.Run == nil {
		t.Fatalf("startJob %s %s on %s refused: %+v", job, mode, n.Name, res.UserErrors)
	}
	id := res.Run.DBID()
	n.c.Logf("%s: started %s %s as run %d", n.Name, job, mode, id)
	return id
}

// waitProcessed waits until run id has processed at least k items while still active.
func waitProcessed(t *testing.T, c *Cluster, id, k int64) *RunRow {
	t.Helper()
	r := c.WaitRun(id, 60*time.Second, fmt.Sprintf("processed >= %d", k), func(r *RunRow) bool {
		return r.Processed >= k || !r.Active()
	})
	if !r.Active() {
		t.Fatalf("run %d ended (%s) before processing %d items: make the run longer", id, describe(r), k)
	}
	return r
}

// expectRefused makes calls concurrent startJob calls of job across nodes and fails unless
// every one is refused with ALREADY_RUNNING (or CAPACITY_EXCEEDED).
func expectRefused(t *testing.T, c *Cluster, job string, calls int, nodes ...*Node) {
	t.Helper()
	type result struct {
		code string
		run  int64
		err  error
	}
	out := make(chan result, calls)
	for i := range calls {
		n := nodes[i%len(nodes)]
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := n.API().StartJob(ctx, job, "RESUME")
			switch {
			case err != nil:
				out <- result{err: fmt.Errorf("%s: %w", n.Name, err)}
			case res.Run != nil:
				out <- result{run: res.Run.DBID()}
			default:
				out <- result{code: res.Code()}
			}
		}()
	}
	counts := map[string]int{}
	for range calls {
		r := <-out
		switch {
		case r.err != nil:
			t.Errorf("startJob %s: %v", job, r.err)
		case r.run != 0:
			t.Errorf("invariant violated: startJob %s started a second run %d while one was active", job, r.run)
		case r.code != "ALREADY_RUNNING" && r.code != "CAPACITY_EXCEEDED":
			t.Errorf("startJob %s: refused with %s, want ALREADY_RUNNING", job, r.code)
		default:
			counts[r.code]++
		}
	}
	c.Logf("%d concurrent startJob %s while it runs: %v", calls, job, counts)
}

// withinBound fails unless d <= bound, logging the measure either way.
func withinBound(t *testing.T, c *Cluster, what string, d, bound time.Duration) {
	t.Helper()
	c.Logf("%s: %s (bound %s)", what, d.Round(time.Millisecond), bound)
	if d > bound {
		t.Errorf("%s took %s, more than %s", what, d.Round(time.Millisecond), bound)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
