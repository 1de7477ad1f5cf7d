package graph

import (
	"context"
	"log/slog"
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// alertWatcher polls the active alarms for every alertRaised subscriber of the process at
// once, and hands each alarm that was not active at the previous poll to all of them. It polls
// only while someone is subscribed; the first poll after it starts records what is already
// active without announcing it.
type alertWatcher struct {
	interval time.Duration
	alerts   func(ctx context.Context) ([]bt.Alert, error)
	log      *slog.Logger

	mu   sync.Mutex
	subs map[chan bt.Alert]struct{}
	stop chan struct{} // nil while not polling
}

// alertBuffer is how many alarms a slow subscriber may have pending before new ones are
// dropped for it.
const alertBuffer = 32

func newAlertWatcher(interval time.Duration, alerts func(ctx context.Context) ([]bt.Alert, error), log *slog.Logger) *alertWatcher {
	return &alertWatcher{interval: interval, alerts: alerts, log: log, subs: map[chan bt.Alert]struct{}{}}
}

// subscribe returns a channel of raised alarms and the function that ends the subscription.
func (w *alertWatcher) subscribe() (<-chan bt.Alert, func()) {
	c := make(chan bt.Alert, alertBuffer)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs[c] = struct{}{}
	if w.stop == nil {
		w.stop = make(chan struct{})
		go w.poll(w.stop)
	}
	return c, sync.OnceFunc(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.subs, c)
		if len(w.subs) == 0 && w.stop != nil {
			close(w.stop)
			w.stop = nil
		}
	})
}

func (w *alertWatcher) poll(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-stop; cancel() }()
	var known map[string]bool // nil until the first successful poll
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		alerts, err := w.alerts(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.log.Warn("graph: poll alerts", "err", err)
		default:
			active := make(map[string]bool, len(alerts))
			for _, a := range alerts {
				active[a.ID] = true
				if known != nil && !known[a.ID] {
					w.broadcast(a)
				}
			}
			known = active
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func (w *alertWatcher) broadcast(a bt.Alert) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.subs {
		select {
		case c <- a:
		default:
			w.log.Warn("graph: alertRaised subscriber is not reading; alert dropped for it", "alert", a.ID)
		}
	}
}
