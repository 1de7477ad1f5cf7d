package runner

// Wake wakes the scheduler loop at once (tests use it to make every instance pass now).
func (r *Runner) Wake() { r.signalWake() }
