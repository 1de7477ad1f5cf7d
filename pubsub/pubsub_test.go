package pubsub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pubsub"
	"github.com/baton-run/baton/pubsub/pubsubtest"
)

const wait = 10 * time.Second

type testBundle struct {
	ctx       context.Context
	env       string
	pubClient *redis.Client
	subClient *redis.Client
	pub       *pubsub.Publisher
	hub       *pubsub.Hub
}

// setup returns a publisher and a running hub on separate clients of the shared Redis, in
// an environment of their own.
func setup(t *testing.T, popts pubsub.PublisherOptions, hopts pubsub.HubOptions) *testBundle {
	t.Helper()
	pubClient, env := testenv.Redis(t)
	subClient, _ := testenv.Redis(t)
	return &testBundle{
		ctx:       context.Background(),
		env:       env,
		pubClient: pubClient,
		subClient: subClient,
		pub:       pubsubtest.Publisher(t, pubClient, env, popts),
		hub:       pubsubtest.Hub(t, subClient, env, hopts),
	}
}

func publish(t *testing.T, p *pubsub.Publisher, topics []string, key string, payload any, final bool) {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(context.Background(), topics, key, b, final); err != nil {
		t.Fatalf("Publish(%q): %v", key, err)
	}
}

// recv returns the next message of sub.
func recv(t *testing.T, sub *pubsub.Subscription) pubsub.Message {
	t.Helper()
	select {
	case m, ok := <-sub.C():
		if !ok {
			t.Fatal("subscription closed")
		}
		return m
	case <-time.After(wait):
		t.Fatalf("no message on %v within %s", sub.Topics(), wait)
	}
	panic("unreachable")
}

// recvUntil returns the messages of sub up to and including the first one for which stop
// is true.
func recvUntil(t *testing.T, sub *pubsub.Subscription, stop func(pubsub.Message) bool) []pubsub.Message {
	t.Helper()
	var got []pubsub.Message
	for {
		m := recv(t, sub)
		got = append(got, m)
		if stop(m) {
			return got
		}
	}
}

type progress struct {
	N int `json:"n"`
}

func n(t *testing.T, m pubsub.Message) int {
	t.Helper()
	var p progress
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		t.Fatalf("payload %q: %v", m.Payload, err)
	}
	return p.N
}

func isN(t *testing.T, want int) func(pubsub.Message) bool {
	return func(m pubsub.Message) bool { return !m.Resync && n(t, m) == want }
}

func TestChannel(t *testing.T) {
	t.Parallel()
	if got, want := pubsub.Channel("prod"), "baton:{prod}:events"; got != want {
		t.Fatalf("Channel = %q, want %q", got, want)
	}
}

func TestPublishReachesAnotherHub(t *testing.T) {
	t.Parallel()
	b := setup(t, pubsub.PublisherOptions{InstanceID: "worker-1"}, pubsub.HubOptions{})
	sub := b.hub.Subscribe("run:42")

	before := time.Now().UnixNano()
	publish(t, b.pub, []string{"run:42", "runs"}, "run:42", progress{N: 7}, false)

	m := recv(t, sub)
	if m.Resync || m.Final || m.Key != "run:42" || n(t, m) != 7 {
		t.Fatalf("got %+v, want run:42 progress n=7", m)
	}
	if fmt.Sprint(m.Topics) != "[run:42 runs]" {
		t.Errorf("Topics = %v, want [run:42 runs]", m.Topics)
	}
	if m.Seq.Instance != "worker-1" || m.Seq.N != 1 || m.Seq.Epoch == 0 || m.Seq.Epoch > before {
		t.Errorf("Seq = %+v, want instance worker-1, N 1, epoch before the publish", m.Seq)
	}

	// Payload-less publishes carry JSON null.
	if err := b.pub.Publish(b.ctx, []string{"run:42"}, "run:42", nil, true); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, sub); !m.Final || string(m.Payload) != "null" || m.Seq.N != 2 {
		t.Fatalf("got %+v (payload %s), want final null with seq 2", m, m.Payload)
	}
	// The consumer can have a message before the hub has counted it.
	testenv.Eventually(t, wait, "deliveries to be counted", func() bool { return b.hub.Stats().Delivered == 2 })
	if s := b.hub.Stats(); s.Received != 2 || s.Connects != 1 || s.Resyncs != 0 {
		t.Errorf("hub stats = %+v, want 2 received on one connection", s)
	}
}

func TestTopicRouting(t *testing.T) {
	t.Parallel()
	b := setup(t, pubsub.PublisherOptions{}, pubsub.HubOptions{})
	run1 := b.hub.Subscribe("run:1")
	runs := b.hub.Subscribe("runs")
	both := b.hub.Subscribe("run:1", "runs")
	job := b.hub.Subscribe("job:demo")
	run2 := b.hub.Subscribe("run:2")

	publish(t, b.pub, []string{"run:1", "runs"}, "run:1", progress{N: 1}, false)
	publish(t, b.pub, []string{"run:2"}, "run:2", progress{N: 2}, false)
	publish(t, b.pub, []string{"runs", "job:other"}, "run:3", progress{N: 3}, false)
	publish(t, b.pub, []string{"job:demo"}, "job:demo", progress{N: 4}, false)

	// One publisher sends in order and the hub dispatches in order, so the first message
	// each subscription gets shows what it got before.
	for _, tc := range []struct {
		name string
		sub  *pubsub.Subscription
		want []string
	}{
		{"run:1", run1, []string{"run:1"}},
		{"runs", runs, []string{"run:1", "run:3"}},
		{"run:1+runs (once each)", both, []string{"run:1", "run:3"}},
		{"job:demo", job, []string{"job:demo"}},
		{"run:2", run2, []string{"run:2"}},
	} {
		for _, want := range tc.want {
			if m := recv(t, tc.sub); m.Key != want {
				t.Errorf("%s: got %q, want %q", tc.name, m.Key, want)
			}
		}
	}
	// Nothing more is queued: a last message to every topic comes next.
	publish(t, b.pub, []string{"run:1", "runs", "job:demo", "run:2"}, "end", progress{N: 9}, true)
	for _, sub := range []*pubsub.Subscription{run1, runs, both, job, run2} {
		if m := recv(t, sub); m.Key != "end" {
			t.Errorf("%v: got %q, want end", sub.Topics(), m.Key)
		}
	}
}

func TestPublisherCoalescesPerKey(t *testing.T) {
	t.Parallel()
	b := setup(t, pubsub.PublisherOptions{}, pubsub.HubOptions{})
	sub := b.hub.Subscribe("run:1")

	// 1000 updates spread over at least 200ms: the default 100ms interval lets a few out.
	const total = 1000
	tick := time.NewTicker(200 * time.Microsecond)
	defer tick.Stop()
	start := time.Now()
	for i := range total {
		<-tick.C
		publish(t, b.pub, []string{"run:1"}, "run:1", progress{N: i}, false)
	}
	elapsed := time.Since(start)

	got := recvUntil(t, sub, isN(t, total-1))
	publish(t, b.pub, []string{"run:1"}, "run:1", progress{N: total}, true)
	got = append(got, recvUntil(t, sub, func(m pubsub.Message) bool { return m.Final })...)

	deliveries := len(got) - 1 // the final
	if deliveries >= 50 {
		t.Fatalf("%d publishes in %s gave %d deliveries, want < 50", total, elapsed, deliveries)
	}
	if deliveries < 2 || n(t, got[0]) != 0 {
		t.Fatalf("deliveries = %d starting with n=%d; want the first publish at once and at least one more", deliveries, n(t, got[0]))
	}
	for i := 1; i < len(got); i++ {
		if n(t, got[i]) <= n(t, got[i-1]) || !got[i-1].Seq.Before(got[i].Seq) {
			t.Fatalf("delivery %d (n=%d, %+v) does not follow n=%d (%+v)", i, n(t, got[i]), got[i].Seq, n(t, got[i-1]), got[i-1].Seq)
		}
	}
	if last := got[len(got)-2]; n(t, last) != total-1 {
		t.Fatalf("last progress delivered n=%d, want %d", n(t, last), total-1)
	}
	// Redis delivers before the publisher has read PUBLISH's reply and counted it.
	testenv.Eventually(t, wait, "sends to be counted", func() bool { return b.pub.Stats().Published == uint64(len(got)) })
	if s := b.pub.Stats(); s.Coalesced != uint64(total+1-len(got)) {
		t.Errorf("publisher stats = %+v, want %d coalesced", s, total+1-len(got))
	}
}

func TestFinalAlwaysDelivered(t *testing.T) {
	t.Parallel()
	// A long interval: nothing but the first publish of a key and its final can go out.
	b := setup(t, pubsub.PublisherOptions{MinInterval: time.Hour}, pubsub.HubOptions{})
	sub := b.hub.Subscribe("runs")

	const keys = 50
	for k := range keys {
		key := "run:" + strconv.Itoa(k)
		for i := range 5 {
			publish(t, b.pub, []string{"runs"}, key, progress{N: i}, false)
		}
		publish(t, b.pub, []string{"runs"}, key, progress{N: 100}, true)
	}

	finals := map[string]bool{}
	for len(finals) < keys {
		m := recv(t, sub)
		if finals[m.Key] {
			t.Fatalf("%s: message after its final: %+v", m.Key, m)
		}
		switch v := n(t, m); {
		case m.Final && v == 100:
			finals[m.Key] = true
		case !m.Final && v == 0:
		default:
			t.Fatalf("%s: got n=%d final=%v; want only the first progress and the final", m.Key, v, m.Final)
		}
	}

	// Each final superseded the progress held for its key: Close has no progress left to
	// send after a final (the hub would count it as stale).
	ctx, cancel := context.WithTimeout(b.ctx, wait)
	defer cancel()
	if err := b.pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Redis has every message of the closed publisher; one published now comes after them.
	marker := pubsubtest.Publisher(t, b.pubClient, b.env, pubsub.PublisherOptions{})
	publish(t, marker, []string{"runs"}, "end", progress{N: 100}, true)
	recvUntil(t, sub, func(m pubsub.Message) bool { return m.Key == "end" })
	if s := b.pub.Stats(); s.Published > 2*keys || s.Published+s.Coalesced != 6*keys {
		t.Errorf("publisher stats = %+v, want at most %d published and every publish accounted for", s, 2*keys)
	}
	if s := b.hub.Stats(); s.Stale != 0 {
		t.Errorf("hub stats = %+v, want nothing stale", s)
	}
}

func TestCloseFlushesHeldMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, pubsub.PublisherOptions{MinInterval: time.Hour}, pubsub.HubOptions{})
	sub := b.hub.Subscribe("run:1")

	publish(t, b.pub, []string{"run:1"}, "run:1", progress{N: 1}, false)
	publish(t, b.pub, []string{"run:1"}, "run:1", progress{N: 2}, false) // held for an hour
	publish(t, b.pub, []string{"run:1"}, "run:1", progress{N: 3}, false) // replaces it
	if m := recv(t, sub); n(t, m) != 1 {
		t.Fatalf("got n=%d, want 1", n(t, m))
	}
	ctx, cancel := context.WithTimeout(b.ctx, wait)
	defer cancel()
	if err := b.pub.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if m := recv(t, sub); n(t, m) != 3 {
		t.Fatalf("after Close got n=%d, want the held 3", n(t, m))
	}
	if err := b.pub.Publish(b.ctx, []string{"run:1"}, "run:1", []byte("{}"), true); !errors.Is(err, pubsub.ErrClosed) {
		t.Fatalf("Publish after Close = %v, want ErrClosed", err)
	}
}

func TestPublishRejectsBadInput(t *testing.T) {
	t.Parallel()
	client, env := testenv.Redis(t)
	p := pubsubtest.Publisher(t, client, env, pubsub.PublisherOptions{})
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	for _, tc := range []struct {
		name    string
		ctx     context.Context
		topics  []string
		key     string
		payload string
	}{
		{"empty key", ctx, []string{"runs"}, "", "{}"},
		{"no topics", ctx, nil, "run:1", "{}"},
		{"invalid JSON", ctx, []string{"runs"}, "run:1", "{"},
		{"cancelled context", cancelled, []string{"runs"}, "run:1", "{}"},
	} {
		if err := p.Publish(tc.ctx, tc.topics, tc.key, []byte(tc.payload), false); err == nil {
			t.Errorf("%s: nil error", tc.name)
		}
	}
	if s := p.Stats(); s != (pubsub.PublisherStats{}) {
		t.Errorf("rejected publishes changed stats: %+v", s)
	}
}

func TestSlowSubscriberDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	const buffer = 4
	b := setup(t, pubsub.PublisherOptions{MinInterval: -1}, pubsub.HubOptions{BufferSize: buffer})
	slow := b.hub.Subscribe("run:1")
	fast := b.hub.Subscribe("run:1")

	// Each update reaches the fast subscriber before the next is published, so the hub
	// dispatches every one of them, also to the slow subscriber that never reads.
	const total = 200
	for i := range total {
		publish(t, b.pub, []string{"run:1"}, "run:1", progress{N: i}, false)
		if m := recv(t, fast); n(t, m) != i {
			t.Fatalf("fast subscriber got n=%d, want %d", n(t, m), i)
		}
	}

	// The slow subscriber holds one message in its channel, one in hand and a full buffer
	// in which the latest progress replaced the rest. (The hub may hand message 199 to the
	// fast subscriber before the slow one: wait until it has reached both.)
	const held = buffer + 2
	dropped := uint64(total - held)
	testenv.Eventually(t, wait, "the slow subscriber's buffer to coalesce", func() bool { return b.hub.Stats().Dropped == dropped })

	// It reads only now: a bounded backlog ending with the latest state.
	backlog := recvUntil(t, slow, isN(t, total-1))
	if len(backlog) != held {
		t.Fatalf("slow subscriber got %d messages, want %d (buffer, one in hand, one in the channel)", len(backlog), held)
	}
	for _, m := range backlog {
		if m.Resync {
			t.Fatal("slow subscriber got a Resync; nothing was lost for a single key")
		}
	}

	// With the backlog drained the slow subscriber falls behind again; the final still
	// reaches it, as the last message.
	for i := total; i < 2*total; i++ {
		publish(t, b.pub, []string{"run:1"}, "run:1", progress{N: i}, false)
		recv(t, fast)
	}
	publish(t, b.pub, []string{"run:1"}, "run:1", progress{N: -1}, true)
	if m := recv(t, fast); !m.Final || n(t, m) != -1 {
		t.Fatalf("fast subscriber got %+v, want the final", m)
	}
	// The final took the place of the latest progress.
	dropped += total - held + 1
	testenv.Eventually(t, wait, "the slow subscriber's buffer to coalesce", func() bool { return b.hub.Stats().Dropped == dropped })
	backlog = recvUntil(t, slow, func(m pubsub.Message) bool { return m.Final })
	if len(backlog) != held || n(t, backlog[len(backlog)-1]) != -1 {
		t.Fatalf("slow subscriber got %d messages ending with n=%d; want %d ending with the final", len(backlog), n(t, backlog[len(backlog)-1]), held)
	}
	if s := b.hub.Stats(); s.Received != 2*total+1 {
		t.Errorf("hub stats = %+v, want %d received", s, 2*total+1)
	}
}

func TestEnvironmentsAreIsolated(t *testing.T) {
	t.Parallel()
	a := setup(t, pubsub.PublisherOptions{}, pubsub.HubOptions{})
	b := setup(t, pubsub.PublisherOptions{}, pubsub.HubOptions{})
	subA := a.hub.Subscribe("run:1")
	subB := b.hub.Subscribe("run:1")

	publish(t, a.pub, []string{"run:1"}, "run:1", progress{N: 1}, false)
	if m := recv(t, subA); n(t, m) != 1 {
		t.Fatalf("env a got n=%d, want 1", n(t, m))
	}
	// a's message reached Redis before b's: had b's hub received it, it would come first.
	publish(t, b.pub, []string{"run:1"}, "run:1", progress{N: 2}, false)
	if m := recv(t, subB); n(t, m) != 2 {
		t.Fatalf("env b got n=%d, want its own 2", n(t, m))
	}
	publish(t, a.pub, []string{"run:1"}, "run:1", progress{N: 3}, true)
	if m := recv(t, subA); n(t, m) != 3 {
		t.Fatalf("env a got n=%d, want its own 3", n(t, m))
	}
}

// TestHubOrdersMessagesOfAKey publishes hand-made envelopes, as several publishers would.
func TestHubOrdersMessagesOfAKey(t *testing.T) {
	t.Parallel()
	client, env := testenv.Redis(t)
	hub := pubsubtest.Hub(t, client, env, pubsub.HubOptions{})
	sub := hub.Subscribe("runs")
	ctx := context.Background()

	raw := func(key, src string, epoch int64, seq uint64, final bool, n int) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{
			"topics": []string{"runs"}, "key": key, "src": src, "epoch": epoch, "seq": seq,
			"final": final, "payload": progress{N: n},
		})
		if err := client.Publish(ctx, pubsub.Channel(env), b).Err(); err != nil {
			t.Fatal(err)
		}
	}
	raw("run:1", "a", 100, 5, false, 1)
	raw("run:1", "a", 100, 3, false, 2)  // stale: same publisher, lower seq
	raw("run:1", "a", 100, 5, false, 3)  // stale: repeated seq
	raw("run:1", "a", 100, 6, false, 4)  // newer
	raw("run:1", "b", 200, 1, false, 5)  // newer: a publisher started later
	raw("run:1", "a", 100, 7, false, 6)  // stale: from the older publisher
	raw("run:1", "c", 50, 1, true, 7)    // final from an old publisher: delivered anyway
	raw("run:1", "b", 200, 2, false, 8)  // after the final: dropped
	raw("run:1", "c", 50, 1, true, 9)    // the same final again: dropped
	raw("run:2", "a", 100, 8, false, 10) // another key is unaffected
	raw("run:1", "b", 200, 3, true, 11)  // a newer final is delivered
	if err := client.Publish(ctx, pubsub.Channel(env), "not json").Err(); err != nil {
		t.Fatal(err)
	}
	raw("run:3", "a", 100, 9, true, 12)

	var got []int
	for _, m := range recvUntil(t, sub, isN(t, 12)) {
		got = append(got, n(t, m))
	}
	if want := "[1 4 5 7 10 11 12]"; fmt.Sprint(got) != want {
		t.Fatalf("delivered %v, want %s", got, want)
	}
	if s := hub.Stats(); s.Stale != 5 || s.Invalid != 1 || s.Received != 12 {
		t.Errorf("hub stats = %+v, want 5 stale, 1 invalid, 12 received", s)
	}
}

func TestSubscriptionClose(t *testing.T) {
	t.Parallel()
	b := setup(t, pubsub.PublisherOptions{}, pubsub.HubOptions{})
	closed := b.hub.Subscribe("run:1")
	open := b.hub.Subscribe("run:1")
	closed.Close()
	closed.Close() // idempotent
	if _, ok := <-closed.C(); ok {
		t.Fatal("C of a closed subscription delivered a message")
	}
	if s := b.hub.Stats(); s.Subscriptions != 1 {
		t.Fatalf("Subscriptions = %d, want 1", s.Subscriptions)
	}
	publish(t, b.pub, []string{"run:1"}, "run:1", progress{N: 1}, true)
	if m := recv(t, open); n(t, m) != 1 {
		t.Fatal("open subscription missed the message")
	}
}

func TestHubStopClosesSubscriptions(t *testing.T) {
	t.Parallel()
	client, env := testenv.Redis(t)
	hub := pubsub.NewHub(client, env, pubsub.HubOptions{})
	early := hub.Subscribe("runs") // before Run: told to resync once connected
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hub.Run(ctx) }()

	if m := recv(t, early); !m.Resync {
		t.Fatalf("subscription made before the hub connected got %+v, want Resync", m)
	}
	if err := hub.Run(ctx); err == nil {
		t.Fatal("second Run: nil error")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil after cancel", err)
		}
	case <-time.After(wait):
		t.Fatal("Run did not return after cancel")
	}
	if _, ok := <-early.C(); ok {
		t.Fatal("subscription still open after the hub stopped")
	}
	if _, ok := <-hub.Subscribe("runs").C(); ok {
		t.Fatal("subscription made after the hub stopped is open")
	}
}

// Reconnection tests use a private redis-server: they kill connections or the server.

func TestResyncAfterServerRestart(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	hub := pubsubtest.Hub(t, srv.Client(nil), "test", pubsub.HubOptions{MaxBackoff: 100 * time.Millisecond})
	pub := pubsubtest.Publisher(t, srv.Client(nil), "test", pubsub.PublisherOptions{MinInterval: -1, MaxBackoff: 100 * time.Millisecond})
	sub := hub.Subscribe("run:1")

	publish(t, pub, []string{"run:1"}, "run:1", progress{N: 1}, false)
	if m := recv(t, sub); m.Resync || n(t, m) != 1 {
		t.Fatalf("got %+v, want n=1", m)
	}

	srv.Restart()
	recvUntil(t, sub, func(m pubsub.Message) bool { return m.Resync })
	if s := hub.Stats(); s.Resyncs < 1 || s.Connects < 2 {
		t.Fatalf("hub stats = %+v, want a reconnection counted", s)
	}

	publish(t, pub, []string{"run:1"}, "run:1", progress{N: 2}, true)
	recvUntil(t, sub, isN(t, 2))
}

func TestResyncAfterConnectionKilled(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	admin := srv.Client(nil)
	hub := pubsubtest.Hub(t, srv.Client(nil), "test", pubsub.HubOptions{MaxBackoff: 100 * time.Millisecond})
	pub := pubsubtest.Publisher(t, srv.Client(nil), "test", pubsub.PublisherOptions{MinInterval: -1})
	sub := hub.Subscribe("run:1")
	ctx := context.Background()

	killed, err := admin.ClientKillByFilter(ctx, "TYPE", "pubsub").Result()
	if err != nil || killed != 1 {
		t.Fatalf("CLIENT KILL TYPE pubsub = %d, %v; want 1 connection killed", killed, err)
	}
	if m := recv(t, sub); !m.Resync {
		t.Fatalf("got %+v, want Resync", m)
	}
	publish(t, pub, []string{"run:1"}, "run:1", progress{N: 1}, true)
	if m := recv(t, sub); m.Resync || n(t, m) != 1 {
		t.Fatalf("got %+v, want n=1", m)
	}
	if s := hub.Stats(); s.Resyncs != 1 || s.Connects != 2 {
		t.Fatalf("hub stats = %+v, want exactly one reconnection", s)
	}
}

func TestHealthCheckReplacesSilentConnection(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	admin := srv.Client(nil)
	hub := pubsubtest.Hub(t, srv.Client(nil), "test", pubsub.HubOptions{
		HealthCheckInterval: 100 * time.Millisecond,
		MaxBackoff:          50 * time.Millisecond,
	})
	sub := hub.Subscribe("run:1")

	// A paused server accepts bytes but answers nothing, as a half-dead connection would.
	if err := admin.Do(context.Background(), "CLIENT", "PAUSE", "1000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, sub); !m.Resync {
		t.Fatalf("got %+v, want Resync", m)
	}
	if s := hub.Stats(); s.Resyncs < 1 {
		t.Fatalf("hub stats = %+v, want a reconnection", s)
	}
}

func TestPublisherRetriesUntilRedisAccepts(t *testing.T) {
	t.Parallel()
	srv := startRedisServer(t)
	admin := srv.Client(nil)
	ctx := context.Background()
	// A user that may not publish yet: every send fails until it is allowed.
	if err := admin.Do(ctx, "ACL", "SETUSER", "worker", "on", ">pw", "~*", "&*", "+@all", "-publish").Err(); err != nil {
		t.Fatal(err)
	}
	hub := pubsubtest.Hub(t, admin, "test", pubsub.HubOptions{})
	sub := hub.Subscribe("run:1")
	pub := pubsubtest.Publisher(t, srv.Client(&redis.Options{Username: "worker", Password: "pw"}), "test",
		pubsub.PublisherOptions{MaxBackoff: 50 * time.Millisecond})

	publish(t, pub, []string{"run:1"}, "run:1", progress{N: 1}, true)
	testenv.Eventually(t, wait, "a failed send", func() bool { return pub.Stats().Errors >= 2 })
	if err := admin.Do(ctx, "ACL", "SETUSER", "worker", "+publish").Err(); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, sub); !m.Final || n(t, m) != 1 {
		t.Fatalf("got %+v, want the final n=1", m)
	}
	testenv.Eventually(t, wait, "the send to be counted", func() bool { return pub.Stats().Published == 1 })
}

func BenchmarkPublishCoalesced(b *testing.B) {
	client, env := testenv.Redis(b)
	p := pubsub.NewPublisher(client, env, pubsub.PublisherOptions{})
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = "run:" + strconv.Itoa(i)
	}
	topics := []string{"runs"}
	payload := []byte(`{"processed":12345,"total":100000,"status":"RUNNING"}`)
	ctx := context.Background()

	calls := 0
	for b.Loop() {
		if err := p.Publish(ctx, topics, keys[calls%len(keys)], payload, false); err != nil {
			b.Fatal(err)
		}
		calls++
	}
	elapsed := b.Elapsed()
	closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Close(closeCtx); err != nil {
		b.Fatal(err)
	}
	s := p.Stats()
	b.ReportMetric(float64(calls)/elapsed.Seconds(), "publishes/s")
	b.ReportMetric(float64(s.Published)/float64(calls), "sent/publish")
}
