package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server/httpapi"
)

// gatedShards is a sharded job of shards × perShard items; every item waits for a release on
// gate, whichever shard it belongs to.
type gatedShards struct {
	name     string
	shards   int
	perShard int
	gate     chan struct{}
}

func (j *gatedShards) Info() runner.JobInfo {
	return runner.JobInfo{Name: j.name, Version: "1", Shards: &runner.Sharding{Count: j.shards},
		Retry: runner.RetryPolicy{MaxAttempts: 1}}
}

func (j *gatedShards) Run(ctx context.Context, run *runner.Run) error {
	shard, ok := run.Shard()
	if !ok {
		return fmt.Errorf("run %d is no shard", run.ID())
	}
	if err := run.SetTotal(ctx, int64(j.perShard)); err != nil {
		return err
	}
	start := 1
	if cp := run.Checkpoint(); cp != "" {
		n, _ := strconv.Atoi(cp)
		start = n + 1
	}
	for i := start; i <= j.perShard; i++ {
		item := runner.Item{Target: fmt.Sprintf("s%s-%d", shard.Key, i), Checkpoint: strconv.Itoa(i)}
		if err := run.Process(ctx, item, func(ctx context.Context, _ *runner.Attempt) error {
			select {
			case <-j.gate:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// shardsQueryCounter counts the statements that read shards (ShardsOfRuns, the store's sums).
type shardsQueryCounter struct{ n atomic.Int64 }

func (c *shardsQueryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "parent_run_id = ANY") {
		c.n.Add(1)
	}
	return ctx
}
func (c *shardsQueryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

const shardedProgressSubscription = `subscription($id: ID!) { runProgress(runId: $id) {
	id status shardTotal progress { processed total percent }
	shards { key index status instance processed total percent checkpoint leaseAgeSeconds attempt }
} }`

type shardFields struct {
	Key             string
	Index           int
	Status          string
	Instance        *string
	Processed       int
	Total           *int
	Percent         *float64
	Checkpoint      string
	LeaseAgeSeconds *float64
	Attempt         int
}

type shardedRunFields struct {
	ID         string
	Status     string
	ShardTotal *int
	Progress   struct {
		Processed int
		Total     *int
		Percent   *float64
	}
	Shards []shardFields
}

// TestShardedRunProgressSubscription follows a sharded run worked on one instance through the
// runProgress subscription of another: every event carries the shards as they move and the
// run's summed progress, read from the stream (no statement reads shards between the snapshot
// and the end), and the last one has every shard SUCCEEDED.
func TestShardedRunProgressSubscription(t *testing.T) {
	b := setup(t)
	job := &gatedShards{name: "crawl", shards: 3, perShard: 2, gate: make(chan struct{})}
	worker := b.instance(instanceOpts{jobs: []runner.Job{job}, hub: true})
	counter := &shardsQueryCounter{}
	api := b.instance(instanceOpts{jobs: []runner.Job{job}, poolSize: -1, noRun: true, hub: true, tracer: counter})
	operator, viewer := b.token(model.RoleOperator), b.token(model.RoleViewer)
	id := worker.startJob(t, operator, "crawl")
	testenv.Eventually(t, 20*time.Second, "every shard running", func() bool {
		var data struct{ Run shardedRunFields }
		api.post(t, viewer, `query($id: ID!) { run(id: $id) { shards { status } } }`, map[string]any{"id": id}).decode(t, &data)
		running := 0
		for _, s := range data.Run.Shards {
			if s.Status == "RUNNING" {
				running++
			}
		}
		return running == 3
	})

	w, _, err := api.dialWS(t, protoTransportWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.init(map[string]any{"authorization": "Bearer " + viewer}); err != nil {
		t.Fatal(err)
	}
	w.subscribe("1", shardedProgressSubscription, map[string]any{"id": id})
	next := func() (shardedRunFields, bool) {
		t.Helper()
		ev := w.next("1", 20*time.Second)
		if ev.done || len(ev.errors) > 0 {
			return shardedRunFields{}, false
		}
		var data struct{ RunProgress shardedRunFields }
		if err := json.Unmarshal(ev.data, &data); err != nil {
			t.Fatal(err)
		}
		return data.RunProgress, true
	}
	snap, ok := next()
	if !ok || snap.ShardTotal == nil || *snap.ShardTotal != 3 || len(snap.Shards) != 3 {
		t.Fatalf("snapshot %+v", snap)
	}
	for _, s := range snap.Shards {
		if s.Instance == nil || s.LeaseAgeSeconds == nil || *s.LeaseAgeSeconds < 0 || *s.LeaseAgeSeconds > 60 {
			t.Fatalf("running shard %+v: want its holder and a lease age", s)
		}
	}
	afterSnapshot := counter.n.Load()

	// Release the items one by one; each event's summed progress is its shards' sum.
	var last shardedRunFields
	for released := 1; released <= 6; released++ {
		release(t, job.gate)
		for {
			st, ok := next()
			if !ok {
				t.Fatalf("the subscription ended after %d items released", released)
			}
			sum := 0
			for _, s := range st.Shards {
				sum += s.Processed
			}
			if sum != st.Progress.Processed {
				t.Fatalf("run processed %d, its shards %d: %+v", st.Progress.Processed, sum, st)
			}
			last = st
			if st.Progress.Processed >= released || st.Status != "RUNNING" {
				break
			}
		}
		if released < 6 && counter.n.Load() != afterSnapshot {
			t.Fatalf("%d statements read shards while %d items were released: events must carry the stream's shards",
				counter.n.Load()-afterSnapshot, released)
		}
	}
	for last.Status == "RUNNING" {
		var ok bool
		if last, ok = next(); !ok {
			t.Fatal("the subscription ended before the run's final state")
		}
	}
	if last.Status != "SUCCEEDED" || last.Progress.Processed != 6 || last.Progress.Percent == nil || *last.Progress.Percent != 100 {
		t.Fatalf("final state %+v", last)
	}
	for _, s := range last.Shards {
		if s.Status != "SUCCEEDED" || s.Instance != nil || s.Checkpoint != "2" || s.LeaseAgeSeconds != nil {
			t.Fatalf("final shard %+v, want SUCCEEDED at checkpoint 2, no holder, no lease age", s)
		}
	}
	if ev := w.next("1", 20*time.Second); !ev.done {
		t.Fatalf("after the final state: %+v, want complete", ev)
	}
}

// TestShardedRunFields reads a sharded run and one of its shards through run(id:): the shards
// in plan order, the shard's link to its run, and the run's timeline with its shards' claims.
func TestShardedRunFields(t *testing.T) {
	b := setup(t)
	job := &gatedShards{name: "crawl", shards: 2, perShard: 1, gate: make(chan struct{})}
	close(job.gate)
	i := b.instance(instanceOpts{jobs: []runner.Job{job}})
	operator := b.token(model.RoleOperator)
	id := i.startJob(t, operator, "crawl")
	i.waitRunStatus(t, operator, id, "SUCCEEDED")

	var data struct {
		Run struct {
			ShardTotal *int
			ShardOf    *struct{ ID string }
			Progress   struct{ Percent *float64 }
			Shards     []struct {
				Key, Status, Checkpoint string
				Index                   int
			}
			Events []struct {
				Kind  string
				Shard *string
			}
		}
	}
	i.post(t, operator, `query($id: ID!) { run(id: $id) { shardTotal shardOf { id } progress { percent }
		shards { key index status checkpoint } events { kind shard } } }`, map[string]any{"id": id}).decode(t, &data)
	run := data.Run
	if run.ShardTotal == nil || *run.ShardTotal != 2 || run.ShardOf != nil || len(run.Shards) != 2 {
		t.Fatalf("run %+v", run)
	}
	for k, s := range run.Shards {
		if s.Key != strconv.Itoa(k) || s.Index != k || s.Status != "SUCCEEDED" || s.Checkpoint != "1" {
			t.Fatalf("shard %d: %+v", k, s)
		}
	}
	claims := map[string]bool{}
	for _, e := range run.Events {
		if e.Kind == "LEASE_RENEWED" && e.Shard != nil {
			t.Fatalf("a shard's lease renewal on its run's timeline: %+v", e)
		}
		if e.Kind == "SHARD_CLAIMED" && e.Shard != nil {
			claims[*e.Shard] = true
		}
	}
	if !claims["0"] || !claims["1"] {
		t.Fatalf("the run's events %+v: want each shard's claim, with its key", run.Events)
	}

	// A shard's own id: the shard, linked to its run.
	var shardID int64
	if err := b.Pool.QueryRow(context.Background(), `SELECT id FROM job_runs WHERE parent_run_id IS NOT NULL AND shard_key = '1'`).Scan(&shardID); err != nil {
		t.Fatal(err)
	}
	var sh struct {
		Run struct {
			ShardKey *string
			ShardOf  *struct{ ID string }
			Shards   []struct{ Key string }
		}
	}
	i.post(t, operator, `query($id: ID!) { run(id: $id) { shardKey shardOf { id } shards { key } } }`,
		map[string]any{"id": graph.RunID(shardID)}).decode(t, &sh)
	if sh.Run.ShardKey == nil || *sh.Run.ShardKey != "1" || sh.Run.ShardOf == nil || sh.Run.ShardOf.ID != id || len(sh.Run.Shards) != 0 {
		t.Fatalf("shard as a run: %+v, want shardKey 1, shardOf %s, no shards", sh.Run, id)
	}
}

// TestShardsOfARunsPageCostFixedStatements: a page of sharded runs with their shards costs the
// same statements for 5 runs as for 40.
func TestShardsOfARunsPageCostFixedStatements(t *testing.T) {
	b := setup(t)
	job := &gatedShards{name: "crawl", shards: 4, perShard: 1}
	counter := &queryCounter{}
	i := b.instance(instanceOpts{jobs: []runner.Job{job}, poolSize: -1, noRun: true, tracer: counter,
		graph: func(c *httpapi.Config) { c.GraphQL.MaxComplexity = 1 << 30 }})
	viewer := b.token(model.RoleViewer)
	for _, sql := range []string{
		`INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds, lease_until, generation, finished_at, shard_total)
			SELECT 'crawl', 'SUCCEEDED', 'MANUAL', 'RESUME', 'test', 'test', 'tok', 30, now(), 1, now(), 4 FROM generate_series(1, 40)`,
		`INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds, lease_until, generation, finished_at,
				parent_run_id, shard_key, shard_index, shard_spec, total, processed)
			SELECT 'crawl', 'SUCCEEDED', 'MANUAL', 'RESUME', 'test', 'test', 'tok', 30, now(), 1, now(), r.id, k::text, k, '', 5, 5
			FROM job_runs r, generate_series(0, 3) AS k WHERE r.parent_run_id IS NULL`,
	} {
		if _, err := b.Pool.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	i.post(t, viewer, `{ me { name } }`, nil)
	cost := func(n int) int64 {
		t.Helper()
		counter.n.Store(0)
		var data struct {
			Runs struct {
				Nodes []struct {
					Shards   []struct{ Key string }
					Progress struct{ Percent *float64 }
				}
			}
		}
		i.post(t, viewer, `query($n: Int!) { runs(first: $n) { nodes { shardTotal progress { percent } shards { key status processed } } } }`,
			map[string]any{"n": n}).decode(t, &data)
		if len(data.Runs.Nodes) != n {
			t.Fatalf("%d runs, want %d", len(data.Runs.Nodes), n)
		}
		for _, r := range data.Runs.Nodes {
			if len(r.Shards) != 4 || r.Progress.Percent == nil || *r.Progress.Percent != 100 {
				t.Fatalf("run %+v, want 4 shards at 100%%", r)
			}
		}
		return counter.n.Load()
	}
	few, many := cost(5), cost(40)
	if few != many {
		t.Fatalf("5 sharded runs cost %d statements, 40 cost %d: the cost grows with the page", few, many)
	}
}

// TestUpdateJobSharding sets a job's cap on concurrent shards, and refuses a value out of range
// and a viewer, writing nothing then.
func TestUpdateJobSharding(t *testing.T) {
	b := setup(t)
	job := &gatedShards{name: "crawl", shards: 2, perShard: 1}
	i := b.instance(instanceOpts{jobs: []runner.Job{job}, poolSize: -1, noRun: true})
	operator, viewer := b.token(model.RoleOperator), b.token(model.RoleViewer)
	const mutation = `mutation($job: String!, $n: Int!) { updateJobSharding(input: {job: $job, maxConcurrentShards: $n}) {
		job { name maxConcurrentShards } userErrors { code field message } } }`
	type payload struct {
		UpdateJobSharding struct {
			Job        *struct{ MaxConcurrentShards int }
			UserErrors []userError
		}
	}
	capOf := func() int {
		var data struct {
			Job struct{ MaxConcurrentShards int }
		}
		i.post(t, viewer, `{ job(name: "crawl") { maxConcurrentShards } }`, nil).decode(t, &data)
		return data.Job.MaxConcurrentShards
	}
	if got := capOf(); got != 0 {
		t.Fatalf("cap before %d, want 0", got)
	}
	var ok payload
	i.post(t, operator, mutation, map[string]any{"job": "crawl", "n": 3}).decode(t, &ok)
	if p := ok.UpdateJobSharding; len(p.UserErrors) > 0 || p.Job == nil || p.Job.MaxConcurrentShards != 3 || capOf() != 3 {
		t.Fatalf("set to 3: %+v", p)
	}
	audits := b.count(`SELECT count(*) FROM audit_log WHERE action = 'updateJobSharding'`)

	for _, tc := range []struct {
		job   string
		n     int
		code  string
		field string
	}{
		{"crawl", -1, "INVALID_INPUT", "maxConcurrentShards"},
		{"crawl", 10001, "INVALID_INPUT", "maxConcurrentShards"},
		{"nope", 2, "NOT_FOUND", "job"},
	} {
		var bad payload
		i.post(t, operator, mutation, map[string]any{"job": tc.job, "n": tc.n}).decode(t, &bad)
		ue := bad.UpdateJobSharding.UserErrors
		if len(ue) != 1 || ue[0].Code != tc.code || ue[0].Field == nil || *ue[0].Field != tc.field || bad.UpdateJobSharding.Job != nil {
			t.Fatalf("%s to %d: %+v, want %s on %s", tc.job, tc.n, bad.UpdateJobSharding, tc.code, tc.field)
		}
	}
	if got := capOf(); got != 3 {
		t.Fatalf("cap after refusals %d, want 3 still", got)
	}
	if n := b.count(`SELECT count(*) FROM audit_log WHERE action = 'updateJobSharding'`); n != audits+3 {
		t.Fatalf("%d audit rows after three refusals, want %d (each refusal audited)", n, audits+3)
	}

	resp := i.post(t, viewer, mutation, map[string]any{"job": "crawl", "n": 1})
	if code := resp.code(); code != graph.CodeForbidden {
		t.Fatalf("viewer: code %q, want %s", code, graph.CodeForbidden)
	}
	long := i.post(t, operator, mutation, map[string]any{"job": strings.Repeat("j", graph.MaxIDLength+1), "n": 1})
	if code := long.code(); code != graph.CodeInputTooLong {
		t.Fatalf("a job name over the limit: code %q, want %s", code, graph.CodeInputTooLong)
	}
	if got := capOf(); got != 3 {
		t.Fatalf("cap after a viewer's and an over-long refusal %d, want 3 still", got)
	}
}
