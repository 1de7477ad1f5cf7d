package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/runner/internal/limiter"
)

// provider is a downstream with a true limit of its own: a token bucket that answers 429
// past it.
type provider struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
	begin  time.Time
	ok     []int // per second since begin
	thr    []int
}

func newProvider(rate, burst float64, seconds int) *provider {
	now := time.Now()
	return &provider{rate: rate, burst: burst, tokens: burst, last: now, begin: now,
		ok: make([]int, seconds+1), thr: make([]int, seconds+1)}
}

// call reports whether the provider accepts a call now.
func (p *provider) call() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.tokens = min(p.burst, p.tokens+now.Sub(p.last).Seconds()*p.rate)
	p.last = now
	sec := min(int(now.Sub(p.begin)/time.Second), len(p.ok)-1)
	if p.tokens >= 1 {
		p.tokens--
		p.ok[sec]++
		return true
	}
	p.thr[sec]++
	return false
}

// TestPushbackConverges: three instances configured for 60/s calling a provider whose true
// limit is 30/s slow down to it within 10 s on its 429s, and after that fewer than 5% of
// their calls are answered 429 while they use most of the true limit.
func TestPushbackConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 16s")
	}
	t.Parallel()
	const seconds = 16
	ls, _ := instances(t, 3, nil)
	lim := limiter.Limits{Rate: 60, Burst: 10}
	prov := newProvider(30, 5, seconds)
	stopAt := prov.begin.Add(seconds * time.Second)
	var wg sync.WaitGroup
	for _, l := range ls {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stopAt) {
					p, err := l.Acquire(context.Background(), "provider", lim, stopAt)
					if errors.Is(err, limiter.ErrNoTurn) {
						return
					}
					if err != nil {
						t.Errorf("Acquire: %v", err)
						return
					}
					if !prov.call() {
						l.Pushback(context.Background(), "provider", lim, 0)
					}
					p.Release()
				}
			}()
		}
	}
	wg.Wait()
	var okAfter, thrAfter int
	var line strings.Builder
	for s := range seconds {
		fmt.Fprintf(&line, " %d/%d", prov.ok[s], prov.thr[s])
		if s >= 10 {
			okAfter += prov.ok[s]
			thrAfter += prov.thr[s]
		}
	}
	t.Logf("ok/429 per second:%s", line.String())
	if frac := float64(thrAfter) / float64(okAfter+thrAfter); frac >= 0.05 {
		t.Errorf("%.1f%% of calls answered 429 after 10 s, want < 5%%", 100*frac)
	}
	if rate := float64(okAfter) / (seconds - 10); rate < 0.7*30 {
		t.Errorf("%.1f calls/s accepted after 10 s, want most of the true limit of 30/s", rate)
	}
}
