package runner

import (
	"context"
	"sync"
	"time"
)

var passCaches sync.Map // *Runner → scheduleCache, kept across passes as the scheduler loop keeps it

// SchedulePass runs one scheduler pass now, as the scheduler loop does, and returns how long
// the loop would sleep after it.
func (r *Runner) SchedulePass(ctx context.Context) time.Duration {
	c, _ := passCaches.LoadOrStore(r, scheduleCache{})
	return r.schedulePass(ctx, c.(scheduleCache))
}
