package graph

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// Topics of live events. A run's events go to all three.
func runTopic(id int64) string   { return "run:" + strconv.FormatInt(id, 10) }
func jobTopic(job string) string { return "job:" + job }

const allRunsTopic = "runs"

// runMessage is the payload of a run event on the wire. V versions the format so that
// instances of different versions can tell each other's messages apart during a rollout.
type runMessage struct {
	V     int          `json:"v"`
	Run   bt.RunRecord `json:"run"`
	Final bool         `json:"final,omitempty"`
}

const runMessageVersion = 1

// NewEventPublisher returns the runner's EventSink that publishes every run change through p:
// to the topics run:<id>, job:<name> and runs, keyed run:<id> so that progress coalesces per
// run, with the run's last event marked final (never coalesced away). Set it as
// runner.Config.Events.
func NewEventPublisher(p *pubsub.Publisher) runner.EventSink {
	return eventPublisher{p: p}
}

type eventPublisher struct{ p *pubsub.Publisher }

// RunChanged publishes ev. It never blocks: the Publisher sends in the background.
func (e eventPublisher) RunChanged(ev runner.RunEvent) {
	payload, err := json.Marshal(runMessage{V: runMessageVersion, Run: ev.Run, Final: ev.Final})
	if err != nil {
		return // a bt.RunRecord always encodes
	}
	topics := []string{runTopic(ev.Run.ID), jobTopic(ev.Run.JobName), allRunsTopic}
	_ = e.p.Publish(context.Background(), topics, runTopic(ev.Run.ID), payload, ev.Final)
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

var errNotRunMessage = errors.New("graph: not a run event")

// decodeRun reads the run of an event message; ok is false for messages of another format.
// The run is shared by every subscriber of the message: it must not be changed.
func decodeRun(m pubsub.Message) (*bt.RunRecord, bool) {
	run, err := runDecoder.Decode(m)
	return run, err == nil
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
	case next.Processed < prev.Processed:
		return false
	}
	return !sameState(next, prev)
}

func sameState(a, b *bt.RunRecord) bool {
	sameTotal := (a.Total == nil) == (b.Total == nil) && (a.Total == nil || *a.Total == *b.Total)
	return a.Status == b.Status && a.Processed == b.Processed && a.Succeeded == b.Succeeded && a.Failed == b.Failed &&
		a.Skipped == b.Skipped && a.Ambiguous == b.Ambiguous && sameTotal && a.Checkpoint == b.Checkpoint &&
		a.CancelRequested == b.CancelRequested && a.PauseReason == b.PauseReason && a.Message == b.Message
}
