package runner

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/store"
)

// The read side of RunService: one run, a list, and the batched reads the API's loaders make
// for a page of jobs or runs (one statement per field, however long the page).

// RunFilter selects runs, newest first, by keyset on id: of one job ("" for all), in any of
// Statuses (none: every status), before BeforeID (0: from the newest), at most Limit (0: 20).
type RunFilter = store.RunFilter

// Get returns one run, or an error of code NOT_FOUND.
func (s *RunService) Get(ctx context.Context, id int64) (*RunRecord, error) {
	return s.r.store.Run(ctx, id)
}

// List returns the runs f selects, newest first.
func (s *RunService) List(ctx context.Context, f RunFilter) ([]*RunRecord, error) {
	return s.r.store.Runs(ctx, f)
}

// ByIDs returns the runs with the given ids, keyed by id. Ids that do not exist are absent.
func (s *RunService) ByIDs(ctx context.Context, ids []int64) (map[int64]*RunRecord, error) {
	return s.r.store.RunsByIDs(ctx, ids)
}

// OfJobs returns, for each of jobs, its runs as List would return them with f (f.JobName
// aside), keyed by job name; a job without runs is absent.
func (s *RunService) OfJobs(ctx context.Context, jobs []string, f RunFilter) (map[string][]*RunRecord, error) {
	return s.r.store.RunsOfJobs(ctx, jobs, f)
}

// ActiveOfJobs returns the active (STARTING or RUNNING) run of each of jobs that has one,
// keyed by job name.
func (s *RunService) ActiveOfJobs(ctx context.Context, jobs []string) (map[string]*RunRecord, error) {
	return s.r.store.ActiveRunsByJobs(ctx, jobs)
}

// LastOfJobs returns the most recent run of each of jobs that has one, keyed by job name.
func (s *RunService) LastOfJobs(ctx context.Context, jobs []string) (map[string]*RunRecord, error) {
	return s.r.store.LastRunsByJobs(ctx, jobs)
}

// Errors returns up to limit error rows of run runID after the row afterID (0: from the
// first), in the order they were recorded.
func (s *RunService) Errors(ctx context.Context, runID, afterID int64, limit int) ([]bt.RunError, error) {
	return s.r.store.RunErrors(ctx, runID, afterID, limit)
}

// ErrorFilter selects a run's error rows: by failure class, and by a text the item key or the
// message contains (case-insensitive, literal). Empty fields select all.
type ErrorFilter = store.RunErrorFilter

// ErrorsMatching returns up to limit error rows of run runID that match f, after the row
// afterID, in the order they were recorded.
func (s *RunService) ErrorsMatching(ctx context.Context, runID int64, f ErrorFilter, afterID int64, limit int) ([]bt.RunError, error) {
	return s.r.store.RunErrorsMatching(ctx, runID, f, afterID, limit)
}

// CountErrors counts the error rows of run runID that match f.
func (s *RunService) CountErrors(ctx context.Context, runID int64, f ErrorFilter) (int64, error) {
	return s.r.store.CountRunErrors(ctx, runID, f)
}

// ErrorsOfRuns returns, for each of runIDs, its error rows as Errors would return them, keyed
// by run id; a run without errors is absent.
func (s *RunService) ErrorsOfRuns(ctx context.Context, runIDs []int64, afterID int64, limit int) (map[int64][]bt.RunError, error) {
	return s.r.store.RunErrorsOfRuns(ctx, runIDs, afterID, limit)
}

// TimelineEvent is one recorded event in a run's life between its start and its end: a lease
// renewal, a pause requested or lifted, a cancel request, a stop condition's trip. (RunEvent
// is a change of a run's state as the EventSink sees it.)
type TimelineEvent = store.RunEvent

// TimelineKind names a recorded run event.
type TimelineKind = store.RunEventKind

// Recorded run events.
const (
	EventLeaseRenewed    = store.EventLeaseRenewed
	EventPauseRequested  = store.EventPauseRequested
	EventPauseLifted     = store.EventPauseLifted
	EventCancelRequested = store.EventCancelRequested
	EventStopCondition   = store.EventStopCondition
)

// EventsOfRuns returns, for each of runIDs, its recorded events oldest first, keyed by run id:
// all of them but lease renewals, of which only the latest maxRenewals (a long run renews
// thousands of times).
func (s *RunService) EventsOfRuns(ctx context.Context, runIDs []int64, maxRenewals int) (map[int64][]TimelineEvent, error) {
	return s.r.store.RunEventsOfRuns(ctx, runIDs, maxRenewals)
}
