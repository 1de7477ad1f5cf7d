package runner_test

// Sharded-run benchmarks (docs/adr/0019-sharded-runs.md): what one sharded run gains from more
// instances when its items wait on an outside call, and where PostgreSQL stops it when they do
// not. Every instance is a Runner of its own in this process, with a pool of its own on one
// schema and one Redis prefix, as separate processes would have.
//
//	benchmark          sub-benchmarks                                    size
//	ShardedLatency     instances=1, 2, 3 (4 slots each), 24 shards       20 items per shard per instance, 20 ms a call
//	ShardedCPU         unsharded (one slot) against 12 shards on         60,000 no-op items, ProcessBatch of 500
//	                   3 instances × 4 slots

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// shardSlots is every benchmark instance's number of worker slots.
const shardSlots = 4

// BenchmarkShardedLatency runs one sharded job whose every item waits 20 ms on a call (a
// sleep standing for an outside system), through Process as an External item — an intent
// commit, the call, a result commit with the shard's checkpoint — on 1, 2 and 3 instances of
// 4 slots each. It reports items/s from Start to the run's final event, how many instances
// held shards, and what the run cost as BenchmarkShardedCPU does (the lock waits show how much
// the shards' item commits queue behind one another).
//
// 24 shards fill 4, 8 and 12 slots in whole waves (6, 3, 2), and each shard has 20 items per
// instance, so every sub-benchmark lasts about the same (~2.6 s) and the item count grows
// with the slots: items/s compares capacity, not how fast a fixed job ends. The goal (the
// report's "Sharded runs" row): 3 instances reach ≥ 2.7× the items/s of one.
func BenchmarkShardedLatency(b *testing.B) {
	const shards, perInstance, call = 24, 20, 20 * time.Millisecond
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("instances=%d/shards=%d", n, shards), func(b *testing.B) {
			perShard := perInstance * n
			job := runner.NewJob(runner.JobInfo{Name: "latency", Version: "1", Lease: time.Minute,
				Shards: &runner.Sharding{Count: shards}, Retry: runner.RetryPolicy{MaxAttempts: 1}},
				func(ctx context.Context, run *runner.Run) error { return latencyShard(ctx, run, perShard, call) })
			c := newShardCluster(b, n, job)
			var items int64
			var total time.Duration
			var cost pgCost
			used := 0
			for b.Loop() {
				w := c.watch(b)
				rec, took := c.run(b, "latency", int64(shards*perShard))
				cost.add(w.stop(b))
				items, total = items+rec.Processed, total+took
				used = c.instancesUsed(b, rec.ID)
			}
			b.ReportMetric(float64(items)/total.Seconds(), "items/s")
			b.ReportMetric(float64(used), "instances-used")
			cost.report(b, total)
		})
	}
}

// latencyShard works one shard of BenchmarkShardedLatency from its checkpoint.
func latencyShard(ctx context.Context, run *runner.Run, perShard int, call time.Duration) error {
	shard, ok := run.Shard()
	if !ok {
		return fmt.Errorf("run %d of a sharded job is no shard", run.ID())
	}
	start := 0
	if cp := run.Checkpoint(); cp != "" {
		n, err := strconv.Atoi(cp)
		if err != nil {
			return err
		}
		start = n + 1
	}
	if err := run.SetTotal(ctx, int64(perShard)); err != nil {
		return err
	}
	outside := func(ctx context.Context, _ *runner.Attempt) error {
		t := time.NewTimer(call)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i := start; i < perShard; i++ {
		item := runner.Item{Target: fmt.Sprintf("s%s-%d", shard.Key, i), Checkpoint: strconv.Itoa(i), External: true}
		if err := run.Process(ctx, item, outside); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkShardedCPU runs one CPU-bound job — 60,000 no-op items through ProcessBatch, 500
// per commit, 8 calls in flight, real ledger rows, counters and checkpoints — unsharded on one
// slot of one instance, and as 12 shards of 5,000 items on 3 instances × 4 slots. Nothing
// waits outside, so what bounds it is this machine's CPU and PostgreSQL. Each reports items/s
// and what it cost:
//   - baton-cpu-cores: CPU of this process (every instance) over the run's wall time;
//   - machine-cpu-cores: CPU the whole machine used meanwhile, whoever used it (the machine is
//     shared: what is left of its cores is what Baton and PostgreSQL could have had);
//   - pg-cpu-cores: CPU of the PostgreSQL backends serving the instances (read from /proc
//     when the server runs on this machine; absent otherwise);
//   - pg-active, pg-lock-waits, pg-io-waits: how many of those backends were, on average over
//     samples every 20 ms, working (a statement running), waiting on a lock (the run's row,
//     the generation's counters), or waiting on I/O or an internal lock (the WAL's flush).
//
// No goal: the report shows sharded ÷ unsharded items/s and says which of these limits it.
func BenchmarkShardedCPU(b *testing.B) {
	const items, shards, instances = 60_000, 12, 3
	cases := []struct {
		name      string
		shards    int // 0: unsharded
		instances int
	}{
		{"unsharded", 0, 1},
		{fmt.Sprintf("shards=%d/instances=%d", shards, instances), shards, instances},
	}
	for _, cs := range cases {
		b.Run(cs.name, func(b *testing.B) {
			info := runner.JobInfo{Name: "cpu", Version: "1", Lease: time.Minute}
			perShard := items
			if cs.shards > 0 {
				info.Shards, perShard = &runner.Sharding{Count: cs.shards}, items/cs.shards
			}
			job := runner.NewJob(info, func(ctx context.Context, run *runner.Run) error { return batchShard(ctx, run, perShard) })
			c := newShardCluster(b, cs.instances, job)
			var done int64
			var total time.Duration
			var cost pgCost
			for b.Loop() {
				w := c.watch(b)
				rec, took := c.run(b, "cpu", items)
				cost.add(w.stop(b))
				done, total = done+rec.Processed, total+took
			}
			b.ReportMetric(float64(done)/total.Seconds(), "items/s")
			cost.report(b, total)
		})
	}
}

// batchShard works n no-op items (one shard's, or the whole unsharded job's) in batches of 500.
func batchShard(ctx context.Context, run *runner.Run, n int) error {
	const batch, parallelism = 500, 8
	prefix := "all"
	if s, ok := run.Shard(); ok {
		prefix = "s" + s.Key
	}
	noop := func(context.Context, runner.Item, *runner.Attempt) error { return nil }
	items := make([]runner.Item, 0, batch)
	for i := range n {
		items = append(items, runner.Item{Target: prefix + "-" + strconv.Itoa(i), Checkpoint: strconv.Itoa(i)})
		if len(items) == batch || i == n-1 {
			if err := run.ProcessBatch(ctx, items, parallelism, noop); err != nil {
				return err
			}
			items = items[:0]
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------------------
// A cluster of instances in one process

// shardCluster is n instances of one cluster on one bundle: running Runners with shardSlots
// slots each, a pool of their own tagged with the cluster's application_name (so that
// pg_stat_activity tells their backends from anyone else's), and one sink of run ends.
type shardCluster struct {
	tb   *testbundle.Bundle
	app  string
	rs   []*runner.Runner
	ends *testbundle.Finals
}

func newShardCluster(b *testing.B, n int, jobs ...runner.Job) *shardCluster {
	b.Helper()
	c := &shardCluster{tb: testbundle.New(b, testenv.Schema), app: testenv.RandomName("baton_bench_"), ends: &testbundle.Finals{}}
	for i := range n {
		cfg := c.tb.BenchConfig()
		cfg.Instance, cfg.PoolSize, cfg.Events = fmt.Sprintf("node%d", i+1), shardSlots, c.ends
		cfg.DB = c.pool(b)
		c.rs = append(c.rs, c.tb.Runner(cfg, jobs...))
	}
	return c
}

// pool opens a pool on the cluster's schema whose connections carry the cluster's
// application_name.
func (c *shardCluster) pool(b *testing.B) *pgxpool.Pool {
	b.Helper()
	cfg, err := pgxpool.ParseConfig(c.tb.URL)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 8
	cfg.ConnConfig.RuntimeParams["application_name"] = c.app
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// run starts a new generation of job on the first instance, waits for its final event and
// the slots of its shards, and returns the run and the time from Start to its final event.
// It fails b unless the run succeeded with want items processed.
func (c *shardCluster) run(b *testing.B, job string, want int64) (bt.RunRecord, time.Duration) {
	b.Helper()
	ctx := context.Background()
	t0 := time.Now()
	started, err := c.rs[0].Start(ctx, runner.StartParams{Job: job, Mode: bt.ModeRestart})
	if err != nil {
		b.Fatal(err)
	}
	rec := c.ends.Wait(b, started.ID)
	took := time.Since(t0)
	b.StopTimer()
	defer b.StartTimer()
	if rec.Status != bt.StatusSucceeded || rec.Processed != want {
		b.Fatalf("run %d: %s with %d items processed (%s); want SUCCEEDED with %d", rec.ID, rec.Status, rec.Processed, rec.Message, want)
	}
	ids := []int64{rec.ID}
	shards, err := c.rs[0].Runs().Shards(ctx, rec.ID)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range shards {
		ids = append(ids, s.ID)
	}
	testenv.Eventually(b, 30*time.Second, "every slot of the run to be free", func() bool {
		for _, r := range c.rs {
			for _, id := range ids {
				if r.Active(id) {
					return false
				}
			}
		}
		return true
	})
	return rec, took
}

// instancesUsed counts the instances that held a shard of run id.
func (c *shardCluster) instancesUsed(b *testing.B, id int64) int {
	b.Helper()
	return testbundle.Count(b, c.tb.Pool, `SELECT count(DISTINCT instance) FROM job_runs WHERE parent_run_id = $1`, id)
}

// ---------------------------------------------------------------------------------------------
// What a run costs PostgreSQL

// pgCost is what the cluster's PostgreSQL backends, this process and the machine did over one
// or more runs.
type pgCost struct {
	baton, pg     time.Duration // CPU of this process, and of the backends (pgKnown: measured)
	pgKnown       bool
	busy, ticks   int64 // the machine's busy and total CPU ticks (every core; 0: unknown)
	samples       int
	active, locks int // backend-samples working, waiting on a lock
	io            int // backend-samples waiting on I/O or an internal lock
}

func (c *pgCost) add(o pgCost) {
	c.baton += o.baton
	c.pg += o.pg
	c.pgKnown = c.pgKnown || o.pgKnown
	c.busy += o.busy
	c.ticks += o.ticks
	c.samples += o.samples
	c.active += o.active
	c.locks += o.locks
	c.io += o.io
}

func (c *pgCost) report(b *testing.B, wall time.Duration) {
	b.ReportMetric(c.baton.Seconds()/wall.Seconds(), "baton-cpu-cores")
	if c.pgKnown {
		b.ReportMetric(c.pg.Seconds()/wall.Seconds(), "pg-cpu-cores")
	}
	if c.ticks > 0 {
		b.ReportMetric(float64(c.busy)/float64(c.ticks)*float64(runtime.NumCPU()), "machine-cpu-cores")
	}
	if c.samples > 0 {
		n := float64(c.samples)
		b.ReportMetric(float64(c.active)/n, "pg-active")
		b.ReportMetric(float64(c.locks)/n, "pg-lock-waits")
		b.ReportMetric(float64(c.io)/n, "pg-io-waits")
	}
}

// pgWatch samples the cluster's backends until stop.
type pgWatch struct {
	c        *shardCluster
	cpu0     time.Duration
	busy0    int64 // the machine's busy and total CPU ticks at the start (ok0: read)
	ticks0   int64
	ok0      bool
	backends map[int]time.Duration // pid → CPU at the start
	local    bool
	quit     chan struct{}
	done     chan pgCost
}

// watch starts measuring what the cluster's next run costs.
func (c *shardCluster) watch(b *testing.B) *pgWatch {
	b.Helper()
	w := &pgWatch{c: c, cpu0: processCPU(b), quit: make(chan struct{}), done: make(chan pgCost, 1)}
	w.busy0, w.ticks0, w.ok0 = machineCPU()
	w.backends, w.local = c.backendCPU(b)
	go w.sample()
	return w
}

// sample counts, every 20 ms, the cluster's backends by what they are doing.
func (w *pgWatch) sample() {
	var cost pgCost
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.quit:
			w.done <- cost
			return
		case <-tick.C:
		}
		var active, locks, io int
		err := w.c.tb.Pool.QueryRow(context.Background(), `
			SELECT count(*) FILTER (WHERE state = 'active'),
			       count(*) FILTER (WHERE state = 'active' AND wait_event_type = 'Lock'),
			       count(*) FILTER (WHERE state = 'active' AND wait_event_type IN ('IO', 'LWLock'))
			FROM pg_stat_activity WHERE application_name = $1`, w.c.app).Scan(&active, &locks, &io)
		if err == nil {
			cost.samples++
			cost.active += active
			cost.locks += locks
			cost.io += io
		}
	}
}

// stop ends the measurement and returns what the run cost.
func (w *pgWatch) stop(b *testing.B) pgCost {
	b.Helper()
	close(w.quit)
	cost := <-w.done
	cost.baton = processCPU(b) - w.cpu0
	if busy, ticks, ok := machineCPU(); ok && w.ok0 {
		cost.busy, cost.ticks = busy-w.busy0, ticks-w.ticks0
	}
	if !w.local {
		return cost
	}
	after, ok := w.c.backendCPU(b)
	if !ok {
		return cost
	}
	cost.pgKnown = true
	for pid, cpu := range after {
		cost.pg += cpu - w.backends[pid] // a backend opened during the run started from 0
	}
	return cost
}

// backendCPU reads the CPU time of each of the cluster's backends from /proc, and false when
// the server does not run on this machine (or /proc cannot be read).
func (c *shardCluster) backendCPU(b *testing.B) (map[int]time.Duration, bool) {
	b.Helper()
	rows, err := c.tb.Pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, c.app)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	out := map[int]time.Duration{}
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			b.Fatal(err)
		}
		cpu, ok := postgresCPU(pid)
		if !ok {
			return nil, false
		}
		out[pid] = cpu
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out, len(out) > 0
}

// postgresCPU reads the user and system time of process pid, if it is a PostgreSQL process
// of this machine.
func postgresCPU(pid int) (time.Duration, bool) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	comm, err := os.ReadFile(filepath.Join(dir, "comm"))
	if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
		return 0, false
	}
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0, false
	}
	// Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(user+sys) * tick, true
}

// machineCPU reads the machine's busy and total CPU ticks, all cores together, from /proc/stat.
func machineCPU() (busy, total int64, ok bool) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, false
	}
	// user nice system idle iowait irq softirq steal: idle and iowait are the idle ones.
	for i, v := range f[1:9] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return busy, total, true
}

// processCPU returns the CPU time this process has used (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
