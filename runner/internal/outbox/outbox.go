// Package outbox works the notification outbox: it claims the deliveries that are due (as
// each channel's rate allows), sends them, and settles each one, retrying a failure with
// exponential backoff and jitter until it gives up after the last attempt. Every instance
// runs one; the store keeps two from taking the same delivery. Between polls it judges the
// alarms, so episodes open and resolve (and their deliveries are queued) while no one watches.
package outbox

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// Config configures a Worker. Store and SendFunc are required.
type Config struct {
	Store store.Notifications
	// SendFunc delivers one claimed delivery; an error is retried.
	SendFunc func(ctx context.Context, d store.ClaimedDelivery) error
	// JudgeFunc judges the alarms (recording episodes and queueing their deliveries); called
	// every Interval while any route exists. nil judges nothing.
	JudgeFunc func(ctx context.Context) error
	// ResultFunc counts a settled attempt: result "sent", "retry" or "failed". nil counts none.
	ResultFunc func(kind bt.ChannelKind, result string)
	// PendingFunc receives the count of pending deliveries after every claim. nil drops it.
	PendingFunc func(n int)
	Logger      *slog.Logger
	// Interval between polls of the outbox.
	Interval time.Duration
	// Timeout bounds one delivery; a claimed delivery is held for twice as long.
	Timeout time.Duration
	// RetryBase is the first retry's delay; each next one doubles, up to RetryMax, with jitter.
	RetryBase, RetryMax time.Duration
	// MaxAttempts bounds the attempts of a delivery: after the last, it is FAILED with its
	// error recorded.
	MaxAttempts int
	// Batch is how many deliveries one claim takes at most, sent in parallel.
	Batch int
}

// Worker delivers the outbox's notifications.
type Worker struct {
	cfg  Config
	wake chan struct{}
}

// New returns a Worker for cfg.
func New(cfg Config) *Worker {
	if cfg.Batch <= 0 {
		cfg.Batch = 10
	}
	return &Worker{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Wake makes the worker poll now rather than at its next interval.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Serve works the outbox until ctx is done.
func (w *Worker) Serve(ctx context.Context) {
	t := time.NewTicker(w.cfg.Interval)
	defer t.Stop()
	for {
		w.judge(ctx)
		for w.poll(ctx) {
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.wake:
		}
	}
}

// judge judges the alarms when a route wants them.
func (w *Worker) judge(ctx context.Context) {
	if w.cfg.JudgeFunc == nil {
		return
	}
	ok, err := w.cfg.Store.HasRoutes(ctx)
	if err == nil && ok {
		err = w.cfg.JudgeFunc(ctx)
	}
	if err != nil && ctx.Err() == nil {
		w.cfg.Logger.Warn("judge alarms for notifications", "err", err)
	}
}

// poll claims and sends one batch; it reports whether the batch was full, so more may be due.
func (w *Worker) poll(ctx context.Context) bool {
	claimed, pending, err := w.cfg.Store.ClaimDeliveries(ctx, w.cfg.Batch, 2*w.cfg.Timeout)
	if err != nil {
		if ctx.Err() == nil {
			w.cfg.Logger.Warn("claim notifications", "err", err)
		}
		return false
	}
	if w.cfg.PendingFunc != nil {
		w.cfg.PendingFunc(pending)
	}
	var wg sync.WaitGroup
	for _, d := range claimed {
		wg.Add(1)
		go func() { defer wg.Done(); w.deliver(ctx, d) }()
	}
	wg.Wait()
	return len(claimed) == w.cfg.Batch && ctx.Err() == nil
}

// deliver sends d and settles it.
func (w *Worker) deliver(ctx context.Context, d store.ClaimedDelivery) {
	sctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	err := w.cfg.SendFunc(sctx, d)
	cancel()
	result, errText, retry, giveUp := "sent", "", time.Duration(0), false
	if err != nil {
		errText = bt.Truncate(err.Error(), 1000)
		retry = Backoff(d.Attempts, w.cfg.RetryBase, w.cfg.RetryMax, rand.Float64())
		giveUp = d.Attempts >= w.cfg.MaxAttempts
		result = "retry"
		if giveUp {
			result = "failed"
		}
		w.cfg.Logger.Warn("deliver notification", "delivery", d.ID, "channel", d.Channel.Name, "kind", d.Kind,
			"attempt", d.Attempts, "gave_up", giveUp, "err", errText)
	}
	// Settled even while shutting down: a delivery sent is recorded as sent.
	if err := w.cfg.Store.FinishDelivery(context.WithoutCancel(ctx), d.ID, errText, retry, giveUp); err != nil {
		w.cfg.Logger.Error("settle notification", "delivery", d.ID, "err", err)
		return
	}
	if w.cfg.ResultFunc != nil {
		w.cfg.ResultFunc(d.Channel.Kind, result)
	}
}

// Backoff is the wait before the retry that follows attempt (1 for the first): base doubled
// for each attempt before, at most max, of which a random half (by jitter in [0, 1)) is taken
// away, so deliveries that failed together do not retry together.
func Backoff(attempt int, base, max time.Duration, jitter float64) time.Duration {
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	return d/2 + time.Duration(jitter*float64(d/2))
}
