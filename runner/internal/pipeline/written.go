package pipeline

import (
	"hash/maphash"
	"sync"

	"github.com/baton-run/baton/runner/store"
)

// maxWritten bounds how many targets a run remembers writing to a generation that was empty
// when it started (about 12 bytes each: 2M targets, some 25 MB); past it the run reads the
// ledger before every batch instead, which also waits for the writes in flight.
var maxWritten = 1 << 21

// writtenKeys remembers the targets a run wrote while its generation's only ledger rows are
// its own, so that a batch of targets it never wrote needs no ledger read.
type writtenKeys struct {
	mu sync.Mutex
	// empty says the generation had no ledger rows when the run started, and the run still
	// remembers every target it wrote since.
	empty bool
	keys  map[uint64]struct{}
	seed  maphash.Seed
}

func newWrittenKeys() writtenKeys { return writtenKeys{seed: maphash.MakeSeed()} }

// key is how a run remembers a target's step it wrote: a 64-bit hash, seeded per run. Two
// keys sharing a hash cost a ledger read, never a wrong decision.
func (w *writtenKeys) key(target, step string) uint64 {
	var h maphash.Hash
	h.SetSeed(w.seed)
	h.WriteString(target)
	h.WriteByte(0)
	h.WriteString(step)
	return h.Sum64()
}

// startEmpty records whether the generation had no ledger rows when the run started.
func (w *writtenKeys) startEmpty(empty bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.empty = empty
}

// note remembers the targets of a ledger write while the generation's only rows are the
// run's own. Noted before the write: a key noted for a write that then fails costs only a
// read.
func (w *writtenKeys) note(ls []store.LedgerWrite) {
	if len(ls) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.empty {
		return
	}
	if w.keys == nil {
		w.keys = make(map[uint64]struct{}, len(ls))
	}
	for _, l := range ls {
		w.keys[w.key(l.Target, l.Step)] = struct{}{}
	}
	if len(w.keys) > maxWritten {
		w.empty, w.keys = false, nil
	}
}

// mayHaveRows reports whether the generation may hold rows for keys: always, unless the run
// found its generation empty and has not written any of them since (a job may process a
// target twice in one run, and the second time the ledger must decide).
func (w *writtenKeys) mayHaveRows(keys []store.TargetStep) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.empty {
		return true
	}
	for _, k := range keys {
		if _, mine := w.keys[w.key(k.Target, k.Step)]; mine {
			return true
		}
	}
	return false
}
