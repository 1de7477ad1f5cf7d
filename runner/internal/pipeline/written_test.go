package pipeline

import (
	"fmt"
	"testing"

	"github.com/baton-run/baton/runner/store"
)

// A first run remembers the targets it wrote, so it reads the ledger only for a batch that
// offers one of them again — also long after 65,536 targets (where it used to stop trusting its
// memory and read before every batch) — and reads before every batch once past maxWritten.
func TestRunRemembersWrittenTargets(t *testing.T) {
	w := newWrittenKeys()
	w.startEmpty(true)
	const n = 200_000
	ls := make([]store.LedgerWrite, 0, 500)
	for i := range n {
		ls = append(ls, store.LedgerWrite{Target: fmt.Sprint("t", i), Step: "pay"})
		if len(ls) == cap(ls) {
			w.note(ls)
			ls = ls[:0]
		}
	}
	fresh := []store.TargetStep{{Target: fmt.Sprint("t", n), Step: "pay"}, {Target: "t7", Step: "refund"}}
	if w.mayHaveRows(fresh) {
		t.Fatalf("after %d targets written, a batch of new ones would read the ledger", n)
	}
	for _, again := range [][]store.TargetStep{{{Target: "t0", Step: "pay"}}, {fresh[0], {Target: fmt.Sprint("t", n-1), Step: "pay"}}} {
		if !w.mayHaveRows(again) {
			t.Fatalf("%v offered again without a ledger read", again)
		}
	}

	saved := maxWritten
	maxWritten = n
	t.Cleanup(func() { maxWritten = saved })
	w.note([]store.LedgerWrite{{Target: "one more", Step: "pay"}})
	if !w.mayHaveRows(fresh) || w.keys != nil {
		t.Fatalf("past maxWritten the run still skips ledger reads (or keeps %d keys)", len(w.keys))
	}
}
