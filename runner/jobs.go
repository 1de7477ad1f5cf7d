package runner

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// The read side of JobService: the stored settings of jobs, and the cluster-wide state that
// decides whether any of them may start.

// Get returns the settings of job name, or an error of code NOT_FOUND.
func (s *JobService) Get(ctx context.Context, name string) (*bt.JobSettings, error) {
	return s.r.store.Job(ctx, name)
}

// List returns the settings of the named jobs (of every job when names is nil), ordered by
// name. Names that are not jobs are absent.
func (s *JobService) List(ctx context.Context, names []string) ([]*bt.JobSettings, error) {
	return s.r.store.Jobs(ctx, names)
}

// Page returns up to limit jobs ordered by name, after the job named after ("" from the
// first).
func (s *JobService) Page(ctx context.Context, after string, limit int) ([]*bt.JobSettings, error) {
	return s.r.store.JobsPage(ctx, after, limit)
}

// InMaintenance reports whether the cluster-wide maintenance pause is on: while it is, no run
// starts (see Runner.SetMaintenance).
func (s *JobService) InMaintenance(ctx context.Context) (bool, error) {
	return s.r.store.Maintenance(ctx)
}

// Now returns the database's clock, from which schedules count their next fire times (so
// that every instance agrees on them).
func (s *JobService) Now(ctx context.Context) (time.Time, error) {
	return s.r.store.Now(ctx)
}
