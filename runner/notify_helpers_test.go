package runner_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/notify"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// testSecretKey is the clusters' secret key in these tests (32 bytes).
var testSecretKey = []byte("0123456789abcdef0123456789abcdef")

// received is one request a receiver got.
type received struct {
	At     time.Time
	Path   string // the request's path and query
	Header http.Header
	Body   []byte
}

// decode reads the request's JSON body.
func (r received) decode(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
	return m
}

// receiver is a real HTTP receiver: it answers status (200 unless set) and records the
// requests it answered 2xx to, and counts the others.
type receiver struct {
	*httptest.Server
	status  atomic.Int32
	refused atomic.Int32
	mu      sync.Mutex
	got     []received
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.status.Store(http.StatusOK)
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		status := int(rc.status.Load())
		if status/100 != 2 {
			rc.refused.Add(1)
			http.Error(w, "not now", status)
			return
		}
		rc.mu.Lock()
		rc.got = append(rc.got, received{At: time.Now(), Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// requests returns what the receiver accepted so far.
func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// wait polls until the receiver accepted n requests, and returns them.
func (rc *receiver) wait(t *testing.T, n int, what string) []received {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, what, func() bool { return len(rc.requests()) >= n })
	return rc.requests()
}

// notifying sets a runner to deliver notifications fast: a 50ms poll, 100ms first retry.
func notifying(mod func(*runner.NotifyConfig)) func(*runner.Config) {
	return func(c *runner.Config) {
		c.Notify = runner.NotifyConfig{Sender: &notify.Sender{AllowPrivateNetworks: true}, SecretKey: testSecretKey,
			Interval: 50 * time.Millisecond, RetryBase: 100 * time.Millisecond, RetryMax: 400 * time.Millisecond, Timeout: 2 * time.Second}
		if mod != nil {
			mod(&c.Notify)
		}
	}
}

// channel creates a channel or fails the test.
func channel(t *testing.T, r *runner.Runner, in bt.ChannelInput) *bt.NotificationChannel {
	t.Helper()
	c, err := r.Alarms().Notifications().CreateChannel(context.Background(), "alice", in)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// route creates a route or fails the test.
func route(t *testing.T, r *runner.Runner, rt bt.NotificationRoute) *bt.NotificationRoute {
	t.Helper()
	out, err := r.Alarms().Notifications().CreateRoute(context.Background(), "alice", rt)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitSettled polls until the outbox has no pending delivery.
func (b *bundle) waitSettled() {
	b.T.Helper()
	testenv.Eventually(b.T, 20*time.Second, "every delivery to be settled", func() bool {
		return b.count(`SELECT count(*) FROM notification_outbox WHERE status = 'PENDING'`) == 0
	})
}
