package runner

// Wake wakes the scheduler loop at once (tests use it to make every instance pass now).
func (r *Runner) Wake() { r.sched.Wake() }

// SlotWanted reports whether the scheduler is waiting for a free slot for a due fire.
func (r *Runner) SlotWanted() bool { return r.sched.SlotWanted() }
