package live

import (
	"context"
	"log/slog"
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// AlertWatcher polls the active alarms for every subscriber to raised alarms in the process
// at once, and hands each alarm that was not active at the previous poll to all of them. It polls
// only while someone is subscribed; the first poll after it starts records what is already
// active without announcing it.
type AlertWatcher struct {
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

// NewAlertWatcher returns the watcher that polls alerts every interval while someone is
// subscribed.
func NewAlertWatcher(interval time.Duration, alerts func(ctx context.Context) ([]bt.Alert, error), log *slog.Logger) *AlertWatcher {
	return &AlertWatcher{interval: interval, alerts: alerts, log: log, subs: map[chan bt.Alert]struct{}{}}
}

// Subscribe returns a channel of raised alarms and the function that ends the subscription.
func (w *AlertWatcher) Subscribe() (<-chan bt.Alert, func()) {
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

func (w *AlertWatcher) poll(stop <-chan struct{}) {
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
			w.log.Warn("live: poll alerts", "err", err)
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

func (w *AlertWatcher) broadcast(a bt.Alert) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.subs {
		select {
		case c <- a:
		default:
			w.log.Warn("live: alert subscriber is not reading; alert dropped for it", "alert", a.ID)
		}
	}
}

// Raised streams each alarm as it is raised, until ctx ends.
func (w *AlertWatcher) Raised(ctx context.Context) <-chan *bt.Alert {
	alerts, unsubscribe := w.Subscribe()
	ch := make(chan *bt.Alert, 1)
	go func() {
		defer close(ch)
		defer unsubscribe()
		for {
			select {
			case <-ctx.Done():
				return
			case a := <-alerts:
				select {
				case ch <- &a:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return ch
}
