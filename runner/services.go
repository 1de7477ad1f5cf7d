package runner

// The operator services. Runner keeps the lifecycle of an instance (register, start, run, shut
// down) and hands out one service per concern, so that no type holds every operation:
//
//	r.Runs()     reads runs and their errors; cancels a run
//	r.Jobs()     reads job settings; pauses, resumes, reschedules a job
//	r.Ledger()   reads the ledger; resolves and reconciles targets in doubt
//	r.Replays()  preflights, requests, approves, executes and rejects replays and restarts
//	r.Audit()    records and reads the audit log
//
// Each is a thin layer over the engine parts in runner/internal and the store; the GraphQL API
// and the CLI reach the database through them only.

// RunService reads runs and acts on one run. Get it with Runner.Runs.
type RunService struct{ r *Runner }

// JobService reads and steers registered jobs. Get it with Runner.Jobs.
type JobService struct{ r *Runner }

// LedgerService reads the result ledger and settles targets in doubt. Get it with Runner.Ledger.
type LedgerService struct{ r *Runner }

// ReplayService runs the replay and restart workflow. Get it with Runner.Replays.
type ReplayService struct{ r *Runner }

// AuditService records and reads the audit log. Get it with Runner.Audit.
type AuditService struct{ r *Runner }

// Runs returns the run service.
func (r *Runner) Runs() *RunService { return &RunService{r} }

// Jobs returns the job service.
func (r *Runner) Jobs() *JobService { return &JobService{r} }

// Replays returns the replay service.
func (r *Runner) Replays() *ReplayService { return &ReplayService{r} }

// Ledger returns the ledger service.
func (r *Runner) Ledger() *LedgerService { return &LedgerService{r} }

// Audit returns the audit service.
func (r *Runner) Audit() *AuditService { return &AuditService{r} }
