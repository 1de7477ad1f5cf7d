package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/logthrottle"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/pipeline"
	"github.com/baton-run/baton/runner/redislock"
)

// An instance without worker slots (an API-only instance) hands its starts to an instance
// that has a free slot, through Redis: it pushes the request on baton:{env}:starts and waits a
// moment for a worker to take it. A worker takes requests only while it has a free slot, and
// answers on the request's own reply key. Nothing waits in line: a request no worker takes
// within RemoteStartWait is withdrawn and answered CAPACITY_EXCEEDED.

type remoteStart struct {
	ID     string    `json:"id"`
	Params startWire `json:"params"`
	Sent   time.Time `json:"sent"`
}

// startWire is a start on its way to a worker: every field of StartParams but the two the
// worker sets for itself (noAudit: the handing instance audits the start; local: the worker
// never hands it on). TestHandOffCarriesEveryStartField fails when a field of StartParams is
// neither carried nor named there as set by the worker. A worker of an older version ignores
// the fields it does not know: upgrade workers before API-only instances.
type startWire struct {
	Job             string         `json:"job"`
	Trigger         bt.Trigger     `json:"trigger"`
	Mode            bt.Mode        `json:"mode"`
	Actor           string         `json:"actor"`
	Due             time.Time      `json:"due"`
	Next            time.Time      `json:"next"`
	Generation      int64          `json:"generation,omitempty"`
	FromStart       bool           `json:"fromStart,omitempty"`
	ReplayRequestID *int64         `json:"replayRequestId,omitempty"`
	ReplayScope     bt.ReplayScope `json:"replayScope,omitempty"`
	// ReplayTargets is nil for a replay of every target of its scope; never empty otherwise.
	ReplayTargets   []string    `json:"replayTargets,omitempty"`
	Missed          []time.Time `json:"missed,omitempty"`
	AutoResumeOf    int64       `json:"autoResumeOf,omitempty"`
	ApprovedRestart bool        `json:"approvedRestart,omitempty"`
	RequestClaim    string      `json:"requestClaim,omitempty"`
	// TraceParent is the caller's trace context: the run's span is its child on the worker.
	TraceParent string `json:"traceParent,omitempty"`
}

// wireOf is the hand-off of p, with the caller's trace context.
func wireOf(p StartParams, traceParent string) startWire {
	return startWire{Job: p.Job, Trigger: p.Trigger, Mode: p.Mode, Actor: p.Actor, Due: p.Due, Next: p.Next,
		Generation: p.Generation, FromStart: p.FromStart, ReplayRequestID: p.ReplayRequestID, ReplayScope: p.ReplayScope,
		ReplayTargets: p.ReplayTargets, Missed: p.Missed, AutoResumeOf: p.autoResumeOf, ApprovedRestart: p.approvedRestart,
		RequestClaim: p.requestClaim, TraceParent: traceParent}
}

// params is the start a worker makes of a hand-off: on its own pool, audited by the instance
// that handed it over.
func (w startWire) params() StartParams {
	return StartParams{Job: w.Job, Trigger: w.Trigger, Mode: w.Mode, Actor: w.Actor, Due: w.Due, Next: w.Next,
		Generation: w.Generation, FromStart: w.FromStart, ReplayRequestID: w.ReplayRequestID, ReplayScope: w.ReplayScope,
		ReplayTargets: w.ReplayTargets, Missed: w.Missed, autoResumeOf: w.AutoResumeOf, approvedRestart: w.ApprovedRestart,
		requestClaim: w.RequestClaim, noAudit: true, local: true}
}

type remoteReply struct {
	RunID   int64   `json:"runId"`
	Code    bt.Code `json:"code,omitempty"`
	Message string  `json:"message,omitempty"`
}

// handover hands starts between instances through Redis.
type handover struct {
	r *Runner
	// warn holds back repeats of the warning an unreachable Redis makes every second or so.
	warn *logthrottle.Limiter
}

func (h handover) startsKey() string { return redislock.Namespace(h.r.cfg.Env) + "starts" }
func (h handover) replyKey(id string) string {
	return redislock.Namespace(h.r.cfg.Env) + "start-reply:" + id
}

// start hands p to a worker instance and waits for its answer: the run it made, read
// back from the database, or nil for a fire already taken.
func (h handover) start(ctx context.Context, p StartParams) (*RunRecord, error) {
	r := h.r
	req := remoteStart{ID: newToken(), Sent: time.Now(), Params: wireOf(p, pipeline.TraceParent(ctx))}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if err := r.cfg.Redis.LPush(ctx, h.startsKey(), body).Err(); err != nil {
		return nil, fmt.Errorf("hand start of %s to a worker instance: %w", p.Job, err)
	}
	wait := r.cfg.RemoteStartWait
	reply, err := r.cfg.Redis.BLPop(ctx, wait, h.replyKey(req.ID)).Result()
	if errors.Is(err, redis.Nil) {
		// Nobody answered in time. Withdraw the request; if it is gone, a worker has it and
		// its answer is on the way.
		removed, lerr := r.cfg.Redis.LRem(context.WithoutCancel(ctx), h.startsKey(), 1, body).Result()
		if lerr == nil && removed == 1 {
			return nil, bt.Errorf(bt.CodeCapacityExceeded, "instance %s runs no jobs and no worker instance had a free slot", r.cfg.Instance)
		}
		reply, err = r.cfg.Redis.BLPop(ctx, 30*time.Second, h.replyKey(req.ID)).Result()
	}
	if err != nil {
		return nil, fmt.Errorf("wait for a worker to start %s: %w", p.Job, err)
	}
	var rep remoteReply
	if err := json.Unmarshal([]byte(reply[1]), &rep); err != nil {
		return nil, fmt.Errorf("worker's answer to start %s: %w", p.Job, err)
	}
	if rep.Code != "" {
		return nil, &bt.Error{Code: rep.Code, Message: rep.Message}
	}
	if rep.RunID == 0 {
		return nil, nil
	}
	return r.store.Run(ctx, rep.RunID)
}

// takeStartsWarning is the warning of a failed wait for start requests, logged once and then
// at most once a minute while Redis stays unreachable.
const takeStartsWarning = "take start requests"

// serve takes start requests from instances without workers while this one has a free
// slot.
func (h handover) serve(ctx context.Context) {
	r := h.r
	for ctx.Err() == nil {
		if len(r.slots) == cap(r.slots) || r.draining.Load() {
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		res, err := r.cfg.Redis.BRPop(ctx, time.Second, h.startsKey()).Result()
		if errors.Is(err, redis.Nil) || ctx.Err() != nil {
			h.warn.Reset(takeStartsWarning)
			continue
		}
		if err != nil {
			if ok, n := h.warn.Allow(takeStartsWarning); ok {
				r.log.Warn(takeStartsWarning, "err", err, "repeats_not_logged", n)
			}
			t := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		h.warn.Reset(takeStartsWarning)
		var req remoteStart
		if err := json.Unmarshal([]byte(res[1]), &req); err != nil || req.ID == "" {
			r.log.Warn("malformed start request dropped", "err", err)
			continue
		}
		w := req.Params
		run, err := r.Start(pipeline.WithTraceParent(ctx, w.TraceParent), w.params())
		rep := remoteReply{RunID: runIDOf(run)}
		if err != nil {
			rep.Code, rep.Message = bt.CodeOf(err), err.Error()
			if rep.Code == "" {
				rep.Code, rep.Message = "INTERNAL", "the worker instance failed to start the run"
				r.log.Error("remote start", "job", w.Job, "err", err)
			}
		}
		body, _ := json.Marshal(rep)
		pipe := r.cfg.Redis.TxPipeline()
		pipe.LPush(ctx, h.replyKey(req.ID), body)
		pipe.Expire(ctx, h.replyKey(req.ID), time.Minute)
		if _, err := pipe.Exec(context.WithoutCancel(ctx)); err != nil {
			r.log.Error("answer start request", "job", w.Job, "err", err)
		}
	}
}
