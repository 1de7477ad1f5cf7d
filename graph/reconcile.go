package graph

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// Live reconcile requests: the runner's ReconcileSink publishes each change of a request to
// the topic reconcile:<id> (keyed the same, its last state final), and the reconcileRequest
// subscription follows one request as runProgress follows a run.

// typeReconcileRequest is the global id type of reconcile requests.
const typeReconcileRequest = "ReconcileRequest"

func reconcileTopic(id int64) string { return "reconcile:" + strconv.FormatInt(id, 10) }

// reconcileMessage is the payload of a reconcile request event on the wire, versioned like
// runMessage.
type reconcileMessage struct {
	V       int                 `json:"v"`
	Request bt.ReconcileRequest `json:"reconcile"`
}

const reconcileMessageVersion = 1

var _ runner.ReconcileSink = eventPublisher{}

// ReconcileChanged publishes a reconcile request's new state. It never blocks.
func (e eventPublisher) ReconcileChanged(req bt.ReconcileRequest) {
	payload, err := json.Marshal(reconcileMessage{V: reconcileMessageVersion, Request: req})
	if err != nil {
		return // a bt.ReconcileRequest always encodes
	}
	topic := reconcileTopic(req.ID)
	_ = e.p.Publish(context.Background(), []string{topic}, topic, payload, !req.Status.Open())
}

var reconcileDecoder = pubsub.NewDecoder(func(payload json.RawMessage) (*bt.ReconcileRequest, error) {
	var msg reconcileMessage
	if err := json.Unmarshal(payload, &msg); err != nil {
		return nil, err
	}
	if msg.V != reconcileMessageVersion || msg.Request.ID == 0 {
		return nil, errNotReconcileMessage
	}
	return &msg.Request, nil
})

var errNotReconcileMessage = errors.New("graph: not a reconcile event")

// reconcileNewer reports whether next is a later state of a request than prev: a state never
// replaces a later one (PENDING again after RUNNING is a retry, ordered by its attempt).
func reconcileNewer(next, prev *bt.ReconcileRequest) bool {
	switch {
	case prev == nil:
		return true
	case !prev.Status.Open():
		return false
	case !next.Status.Open():
		return true
	case next.Attempt != prev.Attempt:
		return next.Attempt > prev.Attempt
	}
	return next.Status != prev.Status || next.Message != prev.Message
}

// reconcileProgress streams the states of reconcile request id until its final one: snapshot
// first, then events (re-reading the database on Resync and after a quiet spell), latest wins.
func (r *Resolver) reconcileProgress(ctx context.Context, id int64) (<-chan *bt.ReconcileRequest, error) {
	sub := r.feed.subscribe(reconcileTopic(id))
	snap, err := r.runner.Ledger().ReconcileRequest(ctx, id)
	if err != nil {
		sub.Close()
		return nil, err
	}
	reread := func() *bt.ReconcileRequest {
		q, err := r.runner.Ledger().ReconcileRequest(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				r.log.WarnContext(ctx, "graph: re-read reconcile request for subscription", "request", id, "err", err)
			}
			return nil
		}
		return q
	}
	ch := make(chan *bt.ReconcileRequest, 1)
	go func() {
		defer close(ch)
		defer sub.Close()
		var last *bt.ReconcileRequest
		pending := snap
		quiet := time.NewTimer(r.quiet)
		defer quiet.Stop()
		for {
			var out chan<- *bt.ReconcileRequest
			if pending != nil {
				out = ch
			}
			var next *bt.ReconcileRequest
			select {
			case <-ctx.Done():
				return
			case out <- pending:
				last, pending = pending, nil
				if !last.Status.Open() {
					return
				}
				continue
			case m, ok := <-sub.C():
				if !ok {
					return
				}
				if m.Resync {
					next = reread()
				} else if q, err := reconcileDecoder.Decode(m); err == nil && q.ID == id {
					next = q
				}
			case <-quiet.C:
				next = reread()
			}
			quiet.Reset(r.quiet)
			newest := last
			if pending != nil {
				newest = pending
			}
			if next != nil && reconcileNewer(next, newest) {
				pending = next
			}
		}
	}()
	return ch, nil
}
