package testbundle

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// BenchConfig returns the settings a benchmark's runner starts from: the bundle's Redis
// prefix, no maintenance job, and logs formatted but written nowhere; the rest is
// runner.Config's defaults, as in production. DB is left nil for NewRunner to open a pool of
// the runner's own.
func (b *Bundle) BenchConfig() runner.Config {
	return runner.Config{Redis: b.Redis, Env: b.Env, MaintenanceCron: "-",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// Finals is a runner.EventSink that signals each run's final event, so that a benchmark
// times to the moment a run ends rather than to the next poll. It passes every event on to
// Next first, when Next is set.
type Finals struct {
	Next runner.EventSink

	mu   sync.Mutex
	done map[int64]chan bt.RunRecord
}

func (f *Finals) ch(id int64) chan bt.RunRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done == nil {
		f.done = map[int64]chan bt.RunRecord{}
	}
	c, ok := f.done[id]
	if !ok {
		c = make(chan bt.RunRecord, 1)
		f.done[id] = c
	}
	return c
}

// RunChanged passes ev on to Next and signals it when it is a run's final event. Only the
// first final event of a run is kept: a later one (a run's final state published again) is
// dropped, never waited on.
func (f *Finals) RunChanged(ev runner.RunEvent) {
	if f.Next != nil {
		f.Next.RunChanged(ev)
	}
	if ev.Final {
		select {
		case f.ch(ev.Run.ID) <- ev.Run:
		default:
		}
	}
}

// Wait returns run id's final state, failing tb when the run has not ended in 5 minutes.
func (f *Finals) Wait(tb testing.TB, id int64) bt.RunRecord {
	tb.Helper()
	select {
	case run := <-f.ch(id):
		return run
	case <-time.After(5 * time.Minute):
		tb.Fatalf("run %d did not finish", id)
		return bt.RunRecord{}
	}
}

// ProcMemory returns process pid's resident and peak resident memory in MB (10^6 bytes),
// from /proc/pid/status. It fails tb when the file has no VmRSS.
func ProcMemory(tb testing.TB, pid int) (rss, hwm float64) {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(l, ":")
		f := strings.Fields(v)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		kb, _ := strconv.ParseFloat(f[0], 64)
		switch k {
		case "VmRSS":
			rss = kb * 1024 / 1e6
		case "VmHWM":
			hwm = kb * 1024 / 1e6
		}
	}
	if rss == 0 {
		tb.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	return rss, hwm
}
