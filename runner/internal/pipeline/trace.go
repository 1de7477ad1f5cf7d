package pipeline

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	bt "github.com/baton-run/baton/runner/batontype"
)

// A run's spans (docs/adr/0020-trace-propagation.md): the run's own, which the runner starts
// and Execute ends; under it, one per Process or ProcessBatch call ("item", "batch"), and
// under that the intent and result commits ("commit") and one per item function called
// ("call", with the idempotency key); and the lease renewals ("lease.renew"). Without a tracer
// (Deps.Tracer nil: tracing is off) none is made, and the item path allocates nothing for
// them.

// Span attribute keys.
const (
	AttrJob            = attribute.Key("baton.job")
	AttrRunID          = attribute.Key("baton.run.id")
	AttrGeneration     = attribute.Key("baton.run.generation")
	AttrTrigger        = attribute.Key("baton.run.trigger")
	AttrMode           = attribute.Key("baton.run.mode")
	AttrAttempt        = attribute.Key("baton.run.attempt")
	AttrInstance       = attribute.Key("baton.instance")
	AttrStatus         = attribute.Key("baton.run.status")
	AttrStopReason     = attribute.Key("baton.run.stop_reason")
	AttrProcessed      = attribute.Key("baton.run.processed")
	AttrShard          = attribute.Key("baton.shard.key")
	AttrShardRunID     = attribute.Key("baton.shard.run_id")
	AttrTarget         = attribute.Key("baton.item.target")
	AttrStep           = attribute.Key("baton.item.step")
	AttrItems          = attribute.Key("baton.items")
	AttrIdempotencyKey = attribute.Key("baton.idempotency_key")
	AttrItemAttempt    = attribute.Key("baton.item.attempt")
	AttrExternal       = attribute.Key("baton.item.external")
	AttrDownstream     = attribute.Key("baton.item.downstream")
	AttrOutcome        = attribute.Key("baton.item.outcome")
	AttrCommit         = attribute.Key("baton.commit")
	AttrLeaseSeconds   = attribute.Key("baton.lease.seconds")
)

// noSpan stands for a span when tracing is off: ending it, or anything else, does nothing.
var noSpan = trace.SpanFromContext(context.Background())

// TraceParent returns the W3C traceparent of the span in ctx, "" when it holds none.
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// WithTraceParent returns ctx holding the remote span a W3C traceparent names, so that spans
// started from it are its children; ctx itself when tp is empty or not a traceparent.
func WithTraceParent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
}

// RunAttributes are the attributes of a run's span that its record knows.
func RunAttributes(rec *bt.RunRecord, instance string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrJob.String(rec.JobName), AttrGeneration.Int64(rec.Generation),
		AttrTrigger.String(string(rec.Trigger)), AttrMode.String(string(rec.Mode)), AttrInstance.String(instance)}
	if s := rec.Shard; s != nil {
		return append(attrs, AttrRunID.Int64(s.RunID), AttrShard.String(s.Key), AttrShardRunID.Int64(rec.ID))
	}
	return append(attrs, AttrRunID.Int64(rec.ID), AttrAttempt.Int(rec.Attempt))
}

// startSpan starts a span of the run named name, child of the span in ctx, or of the run's
// when ctx holds none (a job that passes its own context rather than the run's). Without a
// tracer it returns ctx and noSpan, allocating nothing.
func (run *Run) startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	if run.d.Tracer == nil {
		return ctx, noSpan
	}
	if !trace.SpanContextFromContext(ctx).IsValid() && run.span != nil {
		ctx = trace.ContextWithSpan(ctx, run.span)
	}
	return run.d.Tracer.Start(ctx, name)
}

// endSpan ends span, marking it failed by err, if any.
func endSpan(span trace.Span, err error) {
	if err != nil {
		endSpanError(span, err)
	}
	span.End()
}

// endSpanError marks span failed by err, without ending it.
func endSpanError(span trace.Span, err error) {
	if span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// endRunSpan ends the run's span with its outcome as the record of its end says.
func (run *Run) endRunSpan() {
	if run.span == nil || run.spanFollowed {
		return
	}
	EndRunSpan(run.span, run.Snapshot())
}

// EndRunSpan ends a run's span with the run's outcome as rec, the record of its end, says.
func EndRunSpan(span trace.Span, rec bt.RunRecord) {
	if span.IsRecording() {
		span.SetAttributes(AttrStatus.String(string(rec.Status)), AttrProcessed.Int64(rec.Processed))
		if rec.StopReason != "" {
			span.SetAttributes(AttrStopReason.String(string(rec.StopReason)))
		}
		if rec.Status == bt.StatusFailed {
			span.SetStatus(codes.Error, rec.Message)
		}
	}
	span.End()
}

// callOutcome names how an item's call went, for its span.
func callOutcome(err error) string {
	switch {
	case err == nil:
		return string(bt.LedgerConfirmed)
	case isNotCalled(err):
		return "NOT_CALLED"
	case errors.As(err, new(panicError)):
		return string(bt.LedgerBugSuspected)
	default:
		return "FAILED"
	}
}
