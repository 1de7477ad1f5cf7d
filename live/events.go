package live

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// Topics of live events. A run's events go to its own topic, its job's and AllRunsTopic; a
// shard's (bt.RunRecord.Shard set) only to its run's topic, since a shard is part of its run and
// never a run of the job's lists; a reconcile request's to its own.

// RunTopic is the topic of run id's events.
func RunTopic(id int64) string { return "run:" + strconv.FormatInt(id, 10) }

// JobTopic is the topic of the events of job's runs.
func JobTopic(job string) string { return "job:" + job }

// AllRunsTopic is the topic of every run's events.
const AllRunsTopic = "runs"

// ReconcileTopic is the topic of reconcile request id's events.
func ReconcileTopic(id int64) string { return "reconcile:" + strconv.FormatInt(id, 10) }

// runMessage is the payload of a run event on the wire. V versions the format so that
// instances of different versions can tell each other's messages apart during a rollout.
type runMessage struct {
	V     int          `json:"v"`
	Run   bt.RunRecord `json:"run"`
	Final bool         `json:"final,omitempty"`
}

const runMessageVersion = 1

// reconcileMessage is the payload of a reconcile request event on the wire, versioned like
// runMessage.
type reconcileMessage struct {
	V       int                 `json:"v"`
	Request bt.ReconcileRequest `json:"reconcile"`
}

const reconcileMessageVersion = 1

// EventPublisher is the runner's sink of run and reconcile request changes (an EventSink and
// a ReconcileSink) that publishes them through a pubsub Publisher.
type EventPublisher struct{ p *pubsub.Publisher }

var (
	_ runner.EventSink     = EventPublisher{}
	_ runner.ReconcileSink = EventPublisher{}
)

// NewEventPublisher returns the sink that publishes every run change through p: to the topics
// run:<id>, job:<name> and runs, keyed run:<id> so that progress coalesces per run, with the
// run's last event marked final (never coalesced away); every change of a shard of a sharded
// run to its run's topic alone, run:<run>, keyed run:<shard id> so that each shard coalesces
// apart (RunProgress sums them into the run); and every reconcile request change to
// reconcile:<id>, its last state final. Set it as runner.Config.Events.
func NewEventPublisher(p *pubsub.Publisher) EventPublisher { return EventPublisher{p: p} }

// RunChanged publishes ev. It never blocks: the Publisher sends in the background.
func (e EventPublisher) RunChanged(ev runner.RunEvent) {
	payload, err := json.Marshal(runMessage{V: runMessageVersion, Run: ev.Run, Final: ev.Final})
	if err != nil {
		return // a bt.RunRecord always encodes
	}
	topics := []string{RunTopic(ev.Run.ID), JobTopic(ev.Run.JobName), AllRunsTopic}
	if ev.Run.Shard != nil {
		topics = []string{RunTopic(ev.Run.Shard.RunID)}
	}
	_ = e.p.Publish(context.Background(), topics, RunTopic(ev.Run.ID), payload, ev.Final)
}

// ReconcileChanged publishes a reconcile request's new state. It never blocks.
func (e EventPublisher) ReconcileChanged(req bt.ReconcileRequest) {
	payload, err := json.Marshal(reconcileMessage{V: reconcileMessageVersion, Request: req})
	if err != nil {
		return // a bt.ReconcileRequest always encodes
	}
	topic := ReconcileTopic(req.ID)
	_ = e.p.Publish(context.Background(), []string{topic}, topic, payload, !req.Status.Open())
}

// runDecoder decodes each event message once for all the subscriptions that receive it.
var runDecoder = pubsub.NewDecoder(func(payload json.RawMessage) (*bt.RunRecord, error) {
	var msg runMessage
	if err := json.Unmarshal(payload, &msg); err != nil {
		return nil, err
	}
	if msg.V != runMessageVersion || msg.Run.ID == 0 {
		return nil, errNotRunMessage
	}
	return &msg.Run, nil
})

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

var (
	errNotRunMessage       = errors.New("live: not a run event")
	errNotReconcileMessage = errors.New("live: not a reconcile event")
)

// decodeRun reads the run of an event message; ok is false for messages of another format.
// The run is shared by every subscriber of the message: it must not be changed.
func decodeRun(m pubsub.Message) (*bt.RunRecord, bool) {
	run, err := runDecoder.Decode(m)
	return run, err == nil
}

func decodeReconcile(m pubsub.Message) (*bt.ReconcileRequest, bool) {
	q, err := reconcileDecoder.Decode(m)
	return q, err == nil
}

// supersedes reports whether next is a newer state of a run than prev, the last state a
// subscriber was sent: finished states are final, and progress never goes backwards. A state
// that changes nothing a subscriber sees is not newer either.
func supersedes(next, prev *bt.RunRecord) bool {
	switch {
	case prev == nil:
		return true
	case !prev.Status.Active():
		return false
	case !next.Status.Active():
		return true
	case next.Processed < prev.Processed, !next.HeartbeatAt.IsZero() && next.HeartbeatAt.Before(prev.HeartbeatAt):
		return false
	}
	return !sameState(next, prev)
}

func sameState(a, b *bt.RunRecord) bool {
	sameTotal := (a.Total == nil) == (b.Total == nil) && (a.Total == nil || *a.Total == *b.Total)
	return a.Status == b.Status && a.Processed == b.Processed && a.Succeeded == b.Succeeded && a.Failed == b.Failed &&
		a.Skipped == b.Skipped && a.Ambiguous == b.Ambiguous && sameTotal && a.Checkpoint == b.Checkpoint &&
		a.CancelRequested == b.CancelRequested && a.PauseReason == b.PauseReason && a.Message == b.Message &&
		a.LeaseUntil.Equal(b.LeaseUntil) && a.HeartbeatAt.Equal(b.HeartbeatAt)
}

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
