package tracing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	"github.com/baton-run/baton/server"
	"github.com/baton-run/baton/tracing"
)

// The caller of startJob, as a client that traces would send it: its trace and its span.
const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

// A real instance, set up from the OTEL_* variables to export to a real OTLP receiver (over
// HTTP/protobuf, and over gRPC), serves a startJob mutation that carries a traceparent. The
// spans arrive linked as a trace UI shows them: the GraphQL operation is a child of the
// caller's span; the run is in the caller's trace, a child of the operation; the item, its
// commits and its call are below the run; the call names the idempotency key; and the request
// the job makes through tracing.Transport carries that call's trace to the server it calls.
func TestSpansReachAnOTLPReceiver(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(strings.ReplaceAll(protocol, "/", "-"), func(t *testing.T) {
			t.Parallel()
			rc := &receiver{}
			endpoint := ""
			if protocol == "grpc" {
				endpoint = grpcReceiver(t, rc)
			} else {
				endpoint = httpReceiver(t, rc)
			}
			env := map[string]string{
				"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
				"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
				"OTEL_SERVICE_NAME":           "baton-under-test",
			}
			checkTrace(t, rc, env)
		})
	}
}

// downstream is the outside system the test job calls: it keeps the headers of each request.
type downstream struct {
	mu      sync.Mutex
	headers []http.Header
}

func (d *downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.headers = append(d.headers, r.Header.Clone())
	d.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func checkTrace(t *testing.T, rc *receiver, env map[string]string) {
	ds := &downstream{}
	dsrv := httptest.NewServer(ds)
	t.Cleanup(dsrv.Close)
	client := &http.Client{Transport: tracing.Transport(nil), Timeout: 10 * time.Second}
	job := runner.NewJob(runner.JobInfo{Name: "traced-e2e", Version: "1", StopConditions: []runner.StopCondition{}},
		func(ctx context.Context, run *runner.Run) error {
			item := runner.Item{Target: "account:1", Step: "charge", External: true, Checkpoint: "1"}
			return run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, dsrv.URL+"/charges", nil)
				if err != nil {
					return err
				}
				req.Header.Set("Idempotency-Key", a.IdempotencyKey)
				resp, err := client.Do(req)
				if err != nil {
					return runner.Transient(err)
				}
				return resp.Body.Close()
			})
		})

	tp, err := tracing.Setup(context.Background(), tracing.Config{Exporter: "otlp", Instance: "traced", Version: "test",
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil || tp == nil {
		t.Fatalf("tracing.Setup: %v, %v", tp, err)
	}
	databaseURL := testenv.Schema(t)
	_, prefix := testenv.Redis(t)
	type up struct{ base, token string }
	ready := make(chan up, 1)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, server.Config{DatabaseURL: databaseURL, RedisURL: testenv.RedisURL(), Env: prefix,
			Addr: "127.0.0.1:0", Instance: "traced", PoolSize: 1, Jobs: []runner.Job{job}, AdminTokenName: "admin",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TracerProvider: tp,
			Ready: func(base, token string) { ready <- up{base, token} }})
	}()
	var srv up
	select {
	case srv = <-ready:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the instance did not come up within a minute")
	}

	body := `{"query":"mutation StartJob { startJob(input: {name: \"traced-e2e\"}) { run { id } userErrors { code } } }","operationName":"StartJob"}`
	req, _ := http.NewRequest(http.MethodPost, srv.base+"/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+srv.token)
	req.Header.Set("traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Data struct {
			StartJob struct {
				Run        *struct{ ID string }
				UserErrors []struct{ Code string }
			}
		}
		Errors []json.RawMessage
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil || out.Data.StartJob.Run == nil || len(out.Errors) > 0 {
		t.Fatalf("startJob: %+v %v", out, err)
	}

	pool := testenv.Pool(t, databaseURL)
	var status string
	testenv.Eventually(t, 30*time.Second, "the run to end", func() bool {
		err := pool.QueryRow(context.Background(), `SELECT status FROM job_runs WHERE job_name = 'traced-e2e'`).Scan(&status)
		return err == nil && status != "STARTING" && status != "RUNNING"
	})
	if status != "SUCCEEDED" {
		t.Fatalf("run %s, want SUCCEEDED", status)
	}
	// Stopping the instance ends the run's worker; shutting the provider down sends what is
	// still buffered.
	stop()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.Shutdown(sctx); err != nil {
		t.Fatalf("shut the tracer provider down (the last export): %v", err)
	}

	spans := rc.all()
	one := func(name string, where func(span) bool) span {
		t.Helper()
		var found []span
		for _, s := range spans {
			if s.name == name && (where == nil || where(s)) {
				found = append(found, s)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%d spans named %q where wanted, want 1; the receiver got:\n%s", len(found), name, describe(spans))
		}
		return found[0]
	}
	childOf := func(p span) func(span) bool {
		return func(s span) bool { return s.parentID == p.spanID && s.traceID == p.traceID }
	}

	op := one("mutation StartJob", nil)
	if op.traceID != callerTrace || op.parentID != callerSpan {
		t.Errorf("GraphQL span in trace %s under %s, want the caller's trace %s under its span %s", op.traceID, op.parentID, callerTrace, callerSpan)
	}
	if op.kind != tracepb.Span_SPAN_KIND_SERVER || op.attrs["graphql.operation.type"] != "mutation" || op.service != "baton-under-test" {
		t.Errorf("GraphQL span: kind %s, attributes %v, service %q", op.kind, op.attrs, op.service)
	}
	run := one("run traced-e2e", childOf(op))
	if run.attrs["baton.job"] != "traced-e2e" || run.attrs["baton.run.status"] != "SUCCEEDED" || run.attrs["baton.instance"] != "traced" {
		t.Errorf("run span's attributes %v", run.attrs)
	}
	var runID int64
	if err := pool.QueryRow(context.Background(), `SELECT id FROM job_runs WHERE job_name = 'traced-e2e'`).Scan(&runID); err != nil {
		t.Fatal(err)
	}
	if run.attrs["baton.run.id"] != fmt.Sprint(runID) {
		t.Errorf("run span's baton.run.id %q, want %d", run.attrs["baton.run.id"], runID)
	}
	item := one("item", childOf(run))
	intents := one("commit", func(s span) bool { return childOf(item)(s) && s.attrs["baton.commit"] == "intents" })
	results := one("commit", func(s span) bool { return childOf(item)(s) && s.attrs["baton.commit"] == "results" })
	call := one("call", childOf(item))
	_, _ = intents, results

	ds.mu.Lock()
	defer ds.mu.Unlock()
	if len(ds.headers) != 1 {
		t.Fatalf("the downstream got %d requests, want 1", len(ds.headers))
	}
	h := ds.headers[0]
	if key := h.Get("Idempotency-Key"); key == "" || call.attrs["baton.idempotency_key"] != key {
		t.Errorf("call span's idempotency key %q, the request's %q", call.attrs["baton.idempotency_key"], key)
	}
	parts := strings.Split(h.Get("traceparent"), "-")
	if len(parts) != 4 || parts[1] != callerTrace {
		t.Fatalf("the downstream got traceparent %q, want one in trace %s", h.Get("traceparent"), callerTrace)
	}
	// The header names the request's client span, a child of the call's.
	sent := one("HTTP POST", func(s span) bool { return s.spanID == parts[2] })
	if sent.parentID != call.spanID || sent.kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("the request's span (kind %s) has parent %s, want the call span %s", sent.kind, sent.parentID, call.spanID)
	}
}

func describe(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s trace=%s span=%s parent=%s %v\n", s.name, s.traceID, s.spanID, s.parentID, s.attrs)
	}
	return b.String()
}
