package pubsub

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// render shows a subscription's queue as "a1 b2! R": key, seq, "!" for final, R for Resync.
func render(s *Subscription) string {
	var parts []string
	for e := s.queue.Front(); e != nil; e = e.Next() {
		m := e.Value.(*Message)
		switch {
		case m.Resync:
			parts = append(parts, "R")
		case m.Final:
			parts = append(parts, fmt.Sprintf("%s%d!", m.Key, m.Seq.N))
		default:
			parts = append(parts, fmt.Sprintf("%s%d", m.Key, m.Seq.N))
		}
	}
	return strings.Join(parts, " ")
}

// parse turns "a1", "b2!" or "R" into a message.
func parse(t *testing.T, spec string) *Message {
	t.Helper()
	if spec == "R" {
		return &Message{Resync: true}
	}
	final := strings.HasSuffix(spec, "!")
	spec = strings.TrimSuffix(spec, "!")
	var n uint64
	if _, err := fmt.Sscanf(spec[1:], "%d", &n); err != nil {
		t.Fatalf("bad spec %q", spec)
	}
	return &Message{Key: spec[:1], Seq: Seq{N: n}, Final: final}
}

func TestSubscriptionBuffer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		capacity int
		add      string
		want     string
		dropped  uint64
	}{
		{"below capacity keeps everything", 3, "a1 a2 b1", "a1 a2 b1", 0},
		{"full: latest of the key replaced in place", 3, "a1 a2 b1 a3", "a1 a3 b1", 1},
		{"full: a final replaces the key's latest progress", 3, "a1 a2 b1 a3!", "a1 a3! b1", 1},
		{"full: new key evicts a superseded message", 3, "a1 a2 b1 c1", "a2 b1 c1", 1},
		{"full: new key evicts a latest state and asks to resync", 3, "a1 b1 c1 d1", "b1 c1 d1 R", 1},
		{"full: a final for a new key evicts progress", 3, "a1 b1 c1 d1!", "b1 c1 d1! R", 1},
		{"full of finals: a final still goes in", 3, "a1! b1! c1! d1!", "a1! b1! c1! d1!", 0},
		{"full of finals: progress is dropped with a resync", 3, "a1! b1! c1! d1", "a1! b1! c1! R", 1},
		{"full: finals are never the victim", 3, "a1! b1 c1! d1", "a1! c1! d1 R", 1},
		{"one resync, moved to the end", 3, "a1 R b1 R", "a1 b1 R", 0},
		{"resyncs do not count against capacity", 2, "R a1 b1", "R a1 b1", 0},
		{"hard cap of finals: replaced by one resync", 1, "a1! b1! c1! d1! e1! f1! g1! h1! i1!", "R", 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := NewHub(nil, "test", HubOptions{})
			s := newSubscription(h, nil, tt.capacity)
			for _, spec := range strings.Fields(tt.add) {
				s.add(parse(t, spec))
			}
			if got := render(s); got != tt.want {
				t.Errorf("queue = %q, want %q", got, tt.want)
			}
			if got := h.dropped.Load(); got != tt.dropped {
				t.Errorf("dropped = %d, want %d", got, tt.dropped)
			}
			// Draining through remove leaves consistent bookkeeping.
			for e := s.queue.Front(); e != nil; e = s.queue.Front() {
				s.remove(e)
			}
			if s.n != 0 || s.resync != nil || len(s.latest) != 0 {
				t.Errorf("after draining: n=%d resync=%v latest=%v", s.n, s.resync, s.latest)
			}
		})
	}
}

func TestSeqBefore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b Seq
		want bool
	}{
		{Seq{1, "a", 1}, Seq{1, "a", 2}, true},
		{Seq{1, "a", 2}, Seq{1, "a", 1}, false},
		{Seq{1, "a", 2}, Seq{1, "a", 2}, false},
		{Seq{1, "a", 9}, Seq{2, "a", 1}, true},
		{Seq{2, "a", 1}, Seq{1, "z", 9}, false},
		{Seq{1, "a", 9}, Seq{1, "b", 1}, true},
	}
	for _, tt := range tests {
		if got := tt.a.Before(tt.b); got != tt.want {
			t.Errorf("%+v.Before(%+v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// BenchmarkFanout dispatches one message to 1000 subscribers, each read by its own
// goroutine, and waits until all have it.
func BenchmarkFanout(b *testing.B) {
	const subscribers = 1000
	h := NewHub(nil, "bench", HubOptions{})
	var got atomic.Int64
	all := make(chan struct{}, 1)
	for range subscribers {
		s := h.Subscribe("runs")
		go func() {
			for range s.C() {
				if got.Add(1)%subscribers == 0 {
					all <- struct{}{}
				}
			}
		}()
	}
	b.Cleanup(h.stop)

	payload := json.RawMessage(`{"processed":12345,"total":100000,"status":"RUNNING"}`)
	var seq uint64
	for b.Loop() {
		seq++
		data, _ := json.Marshal(envelope{Topics: []string{"runs"}, Key: "run:1", Src: "bench", Epoch: 1, Seq: seq, Payload: payload})
		h.dispatch(data, time.Now())
		<-all
	}
	b.ReportMetric(float64(seq*subscribers)/b.Elapsed().Seconds(), "deliveries/s")
}
