package runner_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// recorded is a tracer provider whose ended spans a test reads.
type recorded struct {
	*sdktrace.TracerProvider
	rec *tracetest.SpanRecorder
}

func newRecorded(t *testing.T) recorded {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return recorded{tp, rec}
}

// spans returns the ended spans named name (every one when name is "").
func (r recorded) spans(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.rec.Ended() {
		if name == "" || s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// attr returns the value of attribute key of s, "" when it has none.
func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// logLines is a JSON log a test reads line by line.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines returns every line logged, decoded.
func (l *logLines) lines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is no JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// traceParentOf returns the trace_parent column of run id.
func (b *bundle) traceParentOf(id int64) string {
	b.T.Helper()
	var tp string
	if err := b.Pool.QueryRow(context.Background(), `SELECT COALESCE(trace_parent, '') FROM job_runs WHERE id = $1`, id).Scan(&tp); err != nil {
		b.T.Fatal(err)
	}
	return tp
}

// spanOf parses a W3C traceparent.
func spanOf(t *testing.T, tp string) trace.SpanContext {
	t.Helper()
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		t.Fatalf("traceparent %q names no span", tp)
	}
	return sc
}

// A run started under a caller's span is a span of its own in the caller's trace, and its
// work hangs under it: each Process and ProcessBatch call, their commits and item calls (with
// the idempotency key), and the lease renewals. The run's row records the run span's
// traceparent, and every line the run logs names its job, run and trace.
func TestRunSpans(t *testing.T) {
	b := setup(t)
	tp := newRecorded(t)
	var logs logLines
	// The application clock jumps ahead at the job's word, so the lease looks half spent and
	// the next safe point renews it.
	var skew atomic.Int64
	keys := make(chan string, 8)
	job := runner.NewJob(runner.JobInfo{Name: "traced", Version: "1", Lease: 10 * time.Second, StopConditions: []runner.StopCondition{}},
		func(ctx context.Context, run *runner.Run) error {
			err := run.Process(ctx, runner.Item{Target: "one", Step: "pay", External: true, Checkpoint: "1"},
				func(ctx context.Context, a *runner.Attempt) error {
					if !trace.SpanContextFromContext(ctx).IsValid() {
						return fmt.Errorf("the item's context holds no span")
					}
					keys <- a.IdempotencyKey
					return nil
				})
			if err != nil {
				return err
			}
			skew.Add(int64(6 * time.Second))
			items := []runner.Item{{Target: "two", Checkpoint: "2"}, {Target: "three", Checkpoint: "3"}}
			return run.ProcessBatch(ctx, items, 2, func(context.Context, runner.Item, *runner.Attempt) error { return nil })
		})
	r := b.runner(func(c *runner.Config) {
		c.TracerProvider = tp
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		c.NowFunc = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	}, job)

	ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	rec, err := r.Start(ctx, runner.StartParams{Job: "traced"})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	if got := b.waitStatus(rec.ID, bt.StatusSucceeded, bt.StatusFailed); got.Status != bt.StatusSucceeded {
		t.Fatalf("run %s: %s", got.Status, got.Message)
	}
	var runSpan sdktrace.ReadOnlySpan
	waitFor(t, "the run's span to end", func() bool {
		s := tp.spans("run traced")
		if len(s) == 1 {
			runSpan = s[0]
		}
		return runSpan != nil
	})

	if runSpan.Parent().SpanID() != caller.SpanContext().SpanID() || runSpan.SpanContext().TraceID() != caller.SpanContext().TraceID() {
		t.Fatalf("run span's parent %s, want the caller's span %s", runSpan.Parent().SpanID(), caller.SpanContext().SpanID())
	}
	if got := attr(runSpan, "baton.run.id"); got != fmt.Sprint(rec.ID) {
		t.Errorf("run span's baton.run.id %q, want %d", got, rec.ID)
	}
	if got := attr(runSpan, "baton.run.status"); got != "SUCCEEDED" {
		t.Errorf("run span's baton.run.status %q, want SUCCEEDED", got)
	}
	if stored := spanOf(t, b.traceParentOf(rec.ID)); stored.SpanID() != runSpan.SpanContext().SpanID() {
		t.Errorf("job_runs.trace_parent names span %s, want the run's %s", stored.SpanID(), runSpan.SpanContext().SpanID())
	}

	childrenOf := func(parent sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range tp.spans(name) {
			if s.Parent().SpanID() == parent.SpanContext().SpanID() && s.SpanContext().TraceID() == parent.SpanContext().TraceID() {
				out = append(out, s)
			}
		}
		return out
	}
	items, batches := childrenOf(runSpan, "item"), childrenOf(runSpan, "batch")
	if len(items) != 1 || len(batches) != 1 {
		t.Fatalf("run span has %d item and %d batch spans as children, want 1 and 1", len(items), len(batches))
	}
	item, batch := items[0], batches[0]
	if got := attr(item, "baton.item.target"); got != "one" {
		t.Errorf("item span's target %q, want one", got)
	}
	// The external item: its intent, its call, its result.
	if commits := childrenOf(item, "commit"); len(commits) != 2 || attr(commits[0], "baton.commit") != "intents" || attr(commits[1], "baton.commit") != "results" {
		t.Errorf("item span's commits %v, want its intents then its results", names(commits, "baton.commit"))
	}
	calls := childrenOf(item, "call")
	if len(calls) != 1 {
		t.Fatalf("item span has %d call spans, want 1", len(calls))
	}
	if got, want := attr(calls[0], "baton.idempotency_key"), <-keys; got != want || want == "" {
		t.Errorf("call span's idempotency key %q, want the attempt's %q", got, want)
	}
	if n := len(childrenOf(batch, "call")); n != 2 {
		t.Errorf("batch span has %d call spans, want 2", n)
	}
	if n := len(childrenOf(batch, "commit")); n != 1 {
		t.Errorf("batch span has %d commit spans, want 1 (its results)", n)
	}
	if n := len(childrenOf(batch, "lease.renew")); n != 1 {
		t.Errorf("batch span has %d lease.renew spans, want 1: the clock made the lease look half spent", n)
	}

	// Every line of the run's life names its job, its run and its trace.
	trace := runSpan.SpanContext().TraceID().String()
	var seen []string
	for _, l := range logs.lines(t) {
		if l["run_id"] != float64(rec.ID) {
			continue
		}
		seen = append(seen, fmt.Sprint(l["msg"]))
		if l["job"] != "traced" || l["trace_id"] != trace {
			t.Errorf("log line %v: want job traced and trace_id %s", l, trace)
		}
	}
	if !contains(seen, "run started") || !contains(seen, "run finished") {
		t.Errorf("the run's log lines %q lack its start or its end", seen)
	}
}

func names(spans []sdktrace.ReadOnlySpan, key string) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name()+"/"+attr(s, key))
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// Tracing off (no TracerProvider): no trace_parent is recorded and no line carries a trace.
func TestRunWithoutTracing(t *testing.T) {
	b := setup(t)
	var logs logLines
	job := newLedgerJob("untraced", "a", "b")
	r := b.runner(func(c *runner.Config) { c.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) }, job)
	id := mustStart(t, r, runner.StartParams{Job: "untraced"})
	b.waitStatus(id, bt.StatusSucceeded)
	if tp := b.traceParentOf(id); tp != "" {
		t.Errorf("trace_parent %q without tracing, want none", tp)
	}
	n := 0
	for _, l := range logs.lines(t) {
		if l["run_id"] == float64(id) {
			n++
			if _, ok := l["trace_id"]; ok || l["job"] != "untraced" {
				t.Errorf("log line %v: want job untraced and no trace_id", l)
			}
		}
	}
	if n < 2 {
		t.Errorf("%d log lines name run %d, want its start and end at least", n, id)
	}
}

// A sharded run's shards, claimed by any instance, are spans in the run's trace, children of
// the run's span: its traceparent travels in the shards' rows.
func TestShardSpansAreChildrenOfTheRun(t *testing.T) {
	b := setup(t)
	tp := newRecorded(t)
	var logs logLines
	job := newShardedJob(b, "traced-shards", 3, 2)
	mod := func(name string) func(*runner.Config) {
		return func(c *runner.Config) {
			c.Instance, c.PoolSize, c.TracerProvider = name, 2, tp
			c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		}
	}
	a := b.runner(mod("a"), job)
	b.runner(mod("b"), job)
	id := mustStart(t, a, runner.StartParams{Job: "traced-shards"})
	b.waitStatus(id, bt.StatusSucceeded)
	var shards []sdktrace.ReadOnlySpan
	waitFor(t, "three shard spans", func() bool {
		shards = tp.spans("shard traced-shards")
		return len(shards) == 3 && len(tp.spans("run traced-shards")) == 1
	})
	run := tp.spans("run traced-shards")[0]
	keys := map[string]bool{}
	for _, s := range shards {
		if s.Parent().SpanID() != run.SpanContext().SpanID() || s.SpanContext().TraceID() != run.SpanContext().TraceID() {
			t.Errorf("shard span %s has parent %s, want the run's span %s", attr(s, "baton.shard.key"), s.Parent().SpanID(), run.SpanContext().SpanID())
		}
		if attr(s, "baton.run.id") != fmt.Sprint(id) {
			t.Errorf("shard span's baton.run.id %q, want %d", attr(s, "baton.run.id"), id)
		}
		keys[attr(s, "baton.shard.key")] = true
	}
	if len(keys) != 3 {
		t.Errorf("shard spans name shards %v, want three different ones", keys)
	}
	// A shard's lines name the run as operators know it, and the shard.
	shardLines := 0
	for _, l := range logs.lines(t) {
		if l["run_id"] == float64(id) && l["shard"] != nil {
			shardLines++
			if l["shard_run_id"] == nil || l["trace_id"] != run.SpanContext().TraceID().String() || l["job"] != "traced-shards" {
				t.Errorf("shard log line %v: want job, shard_run_id and the run's trace_id", l)
			}
		}
	}
	if shardLines == 0 {
		t.Error("no log line names a shard of the run")
	}
}

// An AUTO_RESUME run continues the trace of the run it resumes: its span is a child of that
// run's, on whichever instance it starts.
func TestAutoResumeContinuesTheTrace(t *testing.T) {
	b := setup(t)
	tp := newRecorded(t)
	var logs logLines
	job, hold, gate := stallingJob("traced-heal", "t2", "t1", "t2", "t3")
	job.info.AutoResume = policy(3, 0)
	mod := func(name string) func(cfg *runner.Config) {
		return func(cfg *runner.Config) {
			cfg.Instance, cfg.Scheduler, cfg.PollInterval, cfg.PoolSize, cfg.TracerProvider = name, true, 100*time.Millisecond, 1, tp
			cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		}
	}
	a := b.runner(mod("a"), job)
	b.runner(mod("c"), job)
	ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	started, err := a.Start(ctx, runner.StartParams{Job: "traced-heal"})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	first := started.ID
	defer close(gate)
	waitFor(t, "the first run to end by its lease and a second to finish", func() bool {
		ch := b.chain("traced-heal")
		return len(ch) == 2 && ch[1].status == bt.StatusSucceeded
	})
	hold.Store(false)
	resumed := b.chain("traced-heal")[1]
	firstSpan := spanOf(t, b.traceParentOf(first))
	var span sdktrace.ReadOnlySpan
	waitFor(t, "the resume's span", func() bool {
		for _, s := range tp.spans("run traced-heal") {
			if attr(s, "baton.run.id") == fmt.Sprint(resumed.id) {
				span = s
			}
		}
		return span != nil
	})
	if span.Parent().SpanID() != firstSpan.SpanID() || span.SpanContext().TraceID() != firstSpan.TraceID() {
		t.Fatalf("the resume's span has parent %s in trace %s, want the resumed run's span %s in trace %s",
			span.Parent().SpanID(), span.SpanContext().TraceID(), firstSpan.SpanID(), firstSpan.TraceID())
	}
	if firstSpan.TraceID() != caller.SpanContext().TraceID() {
		t.Errorf("the first run is in trace %s, want its caller's %s", firstSpan.TraceID(), caller.SpanContext().TraceID())
	}
	if got := attr(span, "baton.run.trigger"); got != "AUTO_RESUME" {
		t.Errorf("the resume's span has trigger %q, want AUTO_RESUME", got)
	}
	if !strings.HasPrefix(b.traceParentOf(resumed.id), "00-"+firstSpan.TraceID().String()+"-") {
		t.Errorf("the resume's trace_parent %q is not in the resumed run's trace %s", b.traceParentOf(resumed.id), firstSpan.TraceID())
	}
	// The lines of both runs, the scheduler's note of the resume among them, name the trace.
	for _, id := range []int64{first, resumed.id} {
		n := 0
		for _, l := range logs.lines(t) {
			if l["run_id"] == float64(id) {
				n++
				if l["trace_id"] != firstSpan.TraceID().String() || l["job"] != "traced-heal" {
					t.Errorf("log line %v: want job traced-heal and trace_id %s", l, firstSpan.TraceID())
				}
			}
		}
		if n == 0 {
			t.Errorf("no log line names run %d", id)
		}
	}
}

// A start an API-only instance hands to a worker instance keeps its caller's trace: the run's
// span, on the worker, is a child of the caller's span. A refused start ends its span with
// the refusal.
func TestHandedOverStartKeepsTheTrace(t *testing.T) {
	b := setup(t)
	tp := newRecorded(t)
	job := newItemsJob("traced-handed", 2)
	api := b.runner(func(c *runner.Config) { c.PoolSize, c.Instance, c.TracerProvider = -1, "api-only", tp }, job)
	worker := b.runner(func(c *runner.Config) { c.PoolSize, c.Instance, c.TracerProvider = 2, "worker", tp }, job)
	ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	rec, err := api.Start(ctx, runner.StartParams{Job: "traced-handed"})
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	b.waitStatus(rec.ID, bt.StatusSucceeded)
	var span sdktrace.ReadOnlySpan
	waitFor(t, "the run's span", func() bool {
		if s := tp.spans("run traced-handed"); len(s) == 1 {
			span = s[0]
		}
		return span != nil
	})
	if span.Parent().SpanID() != caller.SpanContext().SpanID() || attr(span, "baton.instance") != "worker" {
		t.Fatalf("run span on %q has parent %s, want the caller's span %s, on the worker",
			attr(span, "baton.instance"), span.Parent().SpanID(), caller.SpanContext().SpanID())
	}

	gate := make(chan struct{})
	defer close(gate)
	job.gate = func(int) <-chan struct{} { return gate }
	held, err := worker.Start(context.Background(), runner.StartParams{Job: "traced-handed", Mode: bt.ModeRestart})
	if err != nil {
		t.Fatal(err)
	}
	b.waitStatus(held.ID, bt.StatusRunning)
	if _, err := worker.Start(context.Background(), runner.StartParams{Job: "traced-handed", Mode: bt.ModeRestart}); err == nil {
		t.Fatal("a second start of a running job was not refused")
	}
	var refused []sdktrace.ReadOnlySpan
	for _, s := range tp.spans("run traced-handed") {
		if s.Status().Code == codes.Error {
			refused = append(refused, s)
		}
	}
	if len(refused) != 1 || !strings.Contains(refused[0].Status().Description, "already running") {
		t.Fatalf("refused start spans %v, want one saying the job is already running", names(refused, "baton.run.status"))
	}
}

// BenchmarkProcessBatchTraced is BenchmarkProcessBatch with tracing on: every span sampled and
// recorded by the SDK (its batch processor, exporting nowhere), so the figure is the cost of
// the spans themselves. Compare items/s with BenchmarkProcessBatch run beside it.
func BenchmarkProcessBatchTraced(b *testing.B) {
	const n, batch = 20000, 500
	job := runner.NewJob(runner.JobInfo{Name: "items", Lease: time.Minute}, func(ctx context.Context, run *runner.Run) error {
		items := make([]runner.Item, 0, batch)
		for i := range n {
			items = append(items, runner.Item{Target: fmt.Sprint(i), Checkpoint: fmt.Sprint(i)})
			if len(items) == batch || i == n-1 {
				if err := run.ProcessBatch(ctx, items, 8, func(context.Context, runner.Item, *runner.Attempt) error { return nil }); err != nil {
					return err
				}
				items = items[:0]
			}
		}
		return nil
	})
	tb := testbundle.New(b, testenv.Schema)
	f := &testbundle.Finals{}
	cfg := tb.BenchConfig()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cfg.PoolSize, cfg.Events, cfg.DefaultLease, cfg.TracerProvider = 4, f, 30*time.Second, tp
	r := tb.NewRunner(cfg, job)
	var total time.Duration
	for b.Loop() {
		t0 := time.Now()
		started, err := r.Start(context.Background(), runner.StartParams{Job: "items", Mode: bt.ModeRestart})
		if err != nil {
			b.Fatal(err)
		}
		run := f.Wait(b, started.ID)
		total += time.Since(t0)
		for r.Active(started.ID) {
			runtime.Gosched()
		}
		if run.Status != bt.StatusSucceeded || run.Processed != n {
			b.Fatalf("run %s with %d items", run.Status, run.Processed)
		}
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "items/s")
}
