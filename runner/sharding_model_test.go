package runner_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// The points at which TestShardCountersModel kills a shard's holder.
var shardFaults = []string{"claim", "mid-item", "backoff", "after-commit"}

// shardScenario is one scenario of the model: a sharded run in which the holder of one or two
// shards is killed (frozen, its lease run out) at a point, the shard requeued and finished
// elsewhere.
type shardScenario struct {
	seed     uint64
	shards   int
	perShard int
	batch    bool
	kills    []shardKill
}

type shardKill struct {
	shard int
	item  int // the item the fault is at (1..perShard)
	fault string
}

func (s shardScenario) String() string {
	var ks []string
	for _, k := range s.kills {
		ks = append(ks, fmt.Sprintf("shard %d %s at item %d", k.shard, k.fault, k.item))
	}
	return fmt.Sprintf("seed %d: %d shards × %d items, batch %v; %s", s.seed, s.shards, s.perShard, s.batch, strings.Join(ks, ", "))
}

func newShardScenario(seed uint64) shardScenario {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := shardScenario{seed: seed, shards: 2 + rng.IntN(3), perShard: 2 + rng.IntN(4), batch: rng.IntN(2) == 0}
	used := map[int]bool{}
	for range 1 + rng.IntN(2) {
		k := shardKill{shard: rng.IntN(s.shards), item: 1 + rng.IntN(s.perShard), fault: shardFaults[rng.IntN(len(shardFaults))]}
		if used[k.shard] {
			continue
		}
		used[k.shard] = true
		s.kills = append(s.kills, k)
	}
	return s
}

// TestShardCountersModel kills and requeues shards at random points — just claimed, in the
// middle of an item's call, while a batch waits out a retry's backoff, after an outcome is
// committed — and checks, after each scenario, that the run's and every shard's counters are
// their ledger's and that progress never exceeds its total. BATON_SHARD_MODEL_SEED sets the
// first seed (printed on failure), BATON_SHARD_MODEL_SCENARIOS how many scenarios (3; make
// soak runs many).
func TestShardCountersModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("BATON_SHARD_MODEL_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("BATON_SHARD_MODEL_SEED=%q: %v", v, err)
		}
		seed = n
	}
	scenarios := 3
	if v := os.Getenv("BATON_SHARD_MODEL_SCENARIOS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("BATON_SHARD_MODEL_SCENARIOS=%q: want a number from 1", v)
		}
		scenarios = n
	}
	for i := range scenarios {
		sc := newShardScenario(seed + uint64(i))
		t.Run(fmt.Sprintf("seed-%d", sc.seed), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("scenario %s (BATON_SHARD_MODEL_SEED=%d reruns it)", sc, sc.seed)
				}
			}()
			runShardScenario(t, sc)
		})
	}
}

func runShardScenario(t *testing.T, sc shardScenario) {
	b := setup(t)
	job := newShardedJob(b, "model", sc.shards, sc.perShard)
	job.batch = sc.batch
	job.retry = &runner.RetryPolicy{MaxAttempts: 2, InitialBackoff: 10 * time.Minute, MaxBackoff: 10 * time.Minute}
	job.policy = &runner.AutoResumePolicy{Enabled: true, MaxAttempts: 5, Backoff: 0, On: bt.ResumeCauses}
	release := make(chan struct{})
	defer close(release) // the frozen holders wake; their late writes are refused
	type point struct {
		shard int
		item  int
		at    string
	}
	reached := make(chan shardKill, len(sc.kills))
	var mu sync.Mutex
	fired := map[point]bool{}
	fire := func(p point) bool {
		mu.Lock()
		defer mu.Unlock()
		if fired[p] {
			return false
		}
		fired[p] = true
		return true
	}
	killAt := map[point]shardKill{}
	for _, k := range sc.kills {
		switch k.fault {
		case "claim":
			killAt[point{k.shard, 0, "start"}] = k
		case "after-commit":
			killAt[point{k.shard, 0, "end"}] = k
		case "mid-item":
			killAt[point{k.shard, k.item, "call"}] = k
		case "backoff":
			killAt[point{k.shard, k.item, "fail"}] = k
		}
	}
	key := func(s runner.ShardInfo) int { n, _ := strconv.Atoi(s.Key); return n }
	job.hold = func(s runner.ShardInfo, at string) <-chan struct{} {
		p := point{key(s), 0, at}
		if k, ok := killAt[p]; ok && fire(p) {
			reached <- k
			return release
		}
		return nil
	}
	job.gate = func(s runner.ShardInfo, item int) <-chan struct{} {
		p := point{key(s), item, "call"}
		if k, ok := killAt[p]; ok && fire(p) {
			reached <- k
			return release
		}
		return nil
	}
	job.itemErr = func(s runner.ShardInfo, item int) error {
		p := point{key(s), item, "fail"}
		if k, ok := killAt[p]; ok && fire(p) {
			reached <- k
			return runner.Transient(errors.New("try again"))
		}
		return nil
	}
	rs := b.instances(2, 2, job, func(c *runner.Config) { c.Scheduler = true })
	id := mustStart(t, rs[0], runner.StartParams{Job: job.name})
	ctx := context.Background()
	for range sc.kills {
		var k shardKill
		select {
		case k = <-reached:
		case <-time.After(30 * time.Second):
			t.Fatal("a fault point was never reached")
		}
		if k.fault == "backoff" {
			target := fmt.Sprintf("s%d-%d", k.shard, k.item)
			testenv.Eventually(t, 20*time.Second, "the failure to retry to be recorded", func() bool {
				return b.count(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND target_key = $2 AND state = 'TRANSIENT'`, job.name, target) == 1
			})
		}
		// The holder is frozen (or waits out its backoff): its lease runs out.
		if _, err := b.Pool.Exec(ctx, `UPDATE job_runs SET lease_until = now() - interval '1 second'
			WHERE parent_run_id = $1 AND shard_key = $2 AND status IN ('STARTING', 'RUNNING')`, id, strconv.Itoa(k.shard)); err != nil {
			t.Fatal(err)
		}
	}
	run := b.waitStatus(id, bt.StatusSucceeded, bt.StatusFailed, bt.StatusCancelled)
	if run.Status != bt.StatusSucceeded {
		t.Fatalf("run %s (%s)", run.Status, run.Message)
	}
	if bad := b.checkShardCounters(rs[1], job.name, id); len(bad) > 0 {
		t.Fatalf("counters off:\n%s", strings.Join(bad, "\n"))
	}
}
