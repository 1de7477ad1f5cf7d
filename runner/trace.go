package runner

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/pipeline"
)

// Tracing (docs/adr/0020-trace-propagation.md). A run's span starts with its start, as a
// child of the span in the caller's context (the GraphQL operation that started it, the
// instance that handed the start over), and its traceparent is written with the run
// (job_runs.trace_parent): every instance that works the run's shards makes each shard's span a
// child of it, and an AUTO_RESUME run continues it. A RESUME an operator asks for belongs to
// the operator's request and links to the run it resumes. Scheduled fires start traces of
// their own.

// tracerName is the instrumentation scope of the runner's spans.
const tracerName = "github.com/baton-run/baton/runner"

// startSpan starts the span of the run this start makes, child of the span in ctx; the
// context it returns holds it, and the traceparent the run row records is read from it. It
// returns ctx and nil when tracing is off.
func (a *startAttempt) startSpan(ctx context.Context) (context.Context, trace.Span) {
	if a.r.tracer == nil {
		return ctx, nil
	}
	ctx, span := a.r.tracer.Start(ctx, "run "+a.p.Job, trace.WithAttributes(pipeline.AttrJob.String(a.p.Job),
		pipeline.AttrTrigger.String(string(a.p.Trigger)), pipeline.AttrMode.String(string(a.p.Mode)),
		pipeline.AttrInstance.String(a.r.cfg.Instance)))
	return ctx, span
}

// endRefused ends the span of a start that made no run, with the reason when it was refused.
func endRefused(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(pipeline.AttrStatus.String("NOT_STARTED"))
	}
	span.End()
}

// runStarted completes the span of a start with the run it made, and links a RESUME run to
// the run it resumes, which belongs to the trace of its own start.
func (a *startAttempt) runStarted(ctx context.Context, span trace.Span, run *RunRecord) {
	r := a.r
	if span == nil || !span.IsRecording() {
		return
	}
	span.SetAttributes(pipeline.RunAttributes(run, r.cfg.Instance)...)
	if run.ResumedFrom == nil || run.Trigger == bt.TriggerAutoResume {
		return // an AUTO_RESUME run is a child of the run it resumes already
	}
	if prev, err := r.store.Run(ctx, *run.ResumedFrom); err == nil && prev.TraceParent != "" {
		if sc := trace.SpanContextFromContext(pipeline.WithTraceParent(context.Background(), prev.TraceParent)); sc.IsValid() {
			span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{pipeline.AttrRunID.Int64(prev.ID)}})
		}
	}
}

// span starts the span of a shard an instance claimed: a child of its run's span, which
// the shard's row carries, wherever that run started.
func (w *shardWork) span(rec *RunRecord) trace.Span {
	r := w.r
	if r.tracer == nil {
		return nil
	}
	ctx := pipeline.WithTraceParent(context.Background(), rec.TraceParent)
	_, span := r.tracer.Start(ctx, "shard "+rec.JobName, trace.WithAttributes(pipeline.RunAttributes(rec, r.cfg.Instance)...))
	return span
}

// traceIDOf returns the trace id a W3C traceparent names, "" for none: for the log lines of a
// run written outside its own logger.
func traceIDOf(tp string) string {
	sc := trace.SpanContextFromContext(pipeline.WithTraceParent(context.Background(), tp))
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
