package runner

import (
	"context"
	"time"
)

// SchedulePass runs one scheduler pass now, as the scheduler loop does, and returns how long
// the loop would sleep after it.
func (r *Runner) SchedulePass(ctx context.Context) time.Duration { return r.sched.Pass(ctx) }
