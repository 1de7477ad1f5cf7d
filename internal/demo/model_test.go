package demo

// The model-based safety test: random sequences of operator and failure operations run
// against demo-settlement, and after each sequence the ledger, the counters and the fake
// provider's own effects table must agree with Baton's promises. See TestModelSafety.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// Knobs of the model test. They are small on purpose: many short sequences find more than a
// few long ones, and `go test ./internal/demo/` runs 200 of them.
const (
	modelDefaultSequences = 200
	modelWorkers          = 4                       // sequences run in parallel, each worker on a schema of its own
	modelLease            = 3 * time.Second         // every instance's lease
	modelSettleWithin     = 30 * time.Second        // for every run to end after the last operation
	modelPromptly         = 1500 * time.Millisecond // for the recoverer to settle intents of ended runs
	modelKillShare        = 0.2                     // share of sequences with a SIGKILL of a child holder
)

// TestModelSafety runs random sequences of operations against demo-settlement — starts
// (RESUME and RESTART), cancel, pause and resume, maintenance on and off, replay requests,
// approvals and rejections by a second identity, reconcile, manual resolution, SIGKILL of a
// child process holding the run, a failing Attempt.Tx, an account the job fails by itself
// (Run.Fail), in-process instances restarted with a short shutdown timeout, and instances
// whose clocks are 10 minutes off either way — then lets every run end and checks, against
// the provider's effects table:
//
//   - no target has two effects within a generation (one idempotency key, one effect);
//   - every CONFIRMED target has exactly one effect;
//   - nothing is IN_FLIGHT without an active run (once the recoverer has had a pass);
//   - the counters equal the ledger: each generation's per-state counters equal a COUNT over
//     its rows, and each run's counters equal its per-run state counters.
//
// Then it drains the sequence as an operator would (modelDrain: reconcile what is in doubt,
// replay what is retryable) and checks again.
//
// Every API refusal with a code (ALREADY_RUNNING, APPROVAL_REQUIRED, REPLAY_BLOCKED, ...) is
// a valid outcome; an error without a code fails the sequence. BATON_MODEL_SEQUENCES sets how
// many sequences run (default 200; make soak runs 5000); BATON_MODEL_SEED=<seed> replays the
// one sequence a failure printed (the same operations, not the same interleaving with the
// runs they start); BATON_MODEL_TRACE=1 prints every sequence, passed or not, with its end
// state.
func TestModelSafety(t *testing.T) {
	t.Parallel()
	var seeds []uint64
	if v := os.Getenv("BATON_MODEL_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("BATON_MODEL_SEED=%q: %v", v, err)
		}
		seeds = []uint64{seed}
	} else {
		n := modelDefaultSequences
		if v := os.Getenv("BATON_MODEL_SEQUENCES"); v != "" {
			var err error
			if n, err = strconv.Atoi(v); err != nil || n < 1 {
				t.Fatalf("BATON_MODEL_SEQUENCES=%q: want a positive count", v)
			}
		}
		base := uint64(time.Now().UnixNano())
		t.Logf("%d sequences from base seed %d", n, base)
		for i := range n {
			seeds = append(seeds, mix(base, uint64(i)))
		}
	}

	// Each worker reuses one schema, emptied between its sequences: migrating a fresh schema
	// costs about half a second, emptying one a few milliseconds.
	workers := min(modelWorkers, len(seeds))
	envs := make([]*modelEnv, workers)
	for w := range envs {
		envs[w] = newModelEnv(t)
	}
	t0 := time.Now()
	var next atomic.Int64
	var mu sync.Mutex
	var failures []*modelFailure
	var wg sync.WaitGroup
	for _, env := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(seeds) {
					env.wait()
					return
				}
				if f := runModelSequence(env, i, seeds[i]); f != nil {
					mu.Lock()
					failures = append(failures, f)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d sequences in %s, %d failed", len(seeds), time.Since(t0).Round(time.Millisecond), len(failures))
	if len(failures) == 0 {
		return
	}
	// In full the first few and the first of each invariant, then a summary by invariant.
	sort.Slice(failures, func(a, b int) bool { return failures[a].index < failures[b].index })
	byInvariant := map[string][]uint64{}
	for i, f := range failures {
		shown := i < 5
		for _, inv := range f.invariants() {
			shown = shown || len(byInvariant[inv]) == 0
			byInvariant[inv] = append(byInvariant[inv], f.seed)
		}
		if shown {
			t.Error(f.String())
		}
	}
	var summary strings.Builder
	fmt.Fprintf(&summary, "%d of %d sequences failed; replay one with BATON_MODEL_SEED=<seed>:", len(failures), len(seeds))
	invs := make([]string, 0, len(byInvariant))
	for inv := range byInvariant {
		invs = append(invs, inv)
	}
	sort.Strings(invs)
	for _, inv := range invs {
		s := byInvariant[inv]
		fmt.Fprintf(&summary, "\n  %s: %d sequences, seeds %v", inv, len(s), s[:min(len(s), 8)])
	}
	summary.WriteString("\nfirst violation of each failed sequence:")
	for i, f := range failures {
		if i == 40 {
			fmt.Fprintf(&summary, "\n  … and %d more", len(failures)-i)
			break
		}
		v := f.violations[0]
		fmt.Fprintf(&summary, "\n  seed %d: %s: %.200s", f.seed, v.invariant, v.detail)
	}
	t.Error(summary.String())
}

// modelEnv is one worker's schema, connection pools and Redis prefix, reused across its
// sequences.
type modelEnv struct {
	url    string
	pools  [3]*pgxpool.Pool // one per in-process instance slot, and one for the harness
	redis  *redis.Client
	prefix string
	// stopping are instances of earlier sequences still shutting down: an idle instance takes
	// up to a second to notice (its wait for handed-over starts), so the next sequence does
	// not wait for it. See runModelSequence for why that is safe.
	stopping []chan struct{}
}

// wait waits for every instance of the env's earlier sequences to have stopped.
func (e *modelEnv) wait() {
	for _, done := range e.stopping {
		<-done
	}
	e.stopping = nil
}

func newModelEnv(t *testing.T) *modelEnv {
	t.Helper()
	url := demoSchema(t)
	rc, prefix := testenv.Redis(t)
	e := &modelEnv{url: url, redis: rc, prefix: prefix}
	for i := range e.pools {
		// Fewer connections than testenv.Pool's 8: four workers of three pools beside the
		// package's other tests must stay well under the server's 100.
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = 4
		if e.pools[i], err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.pools[i].Close)
	}
	return e
}

// reset empties every table but the migration bookkeeping and the cluster's one row, which
// goes back to no maintenance. (A migration that seeds another table needs it added here.)
// DELETE, not TRUNCATE: on a few rows it costs a millisecond where TRUNCATE costs tens; the
// foreign keys are not checked meanwhile, as every table is emptied in the one transaction.
func (e *modelEnv) reset(ctx context.Context) error {
	rows, err := e.pools[2].Query(ctx, `SELECT quote_ident(tablename) FROM pg_tables
		WHERE schemaname = current_schema() AND tablename NOT IN ('schema_migrations', $1, 'cluster_state')`,
		MigrationsTable)
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	b := &pgx.Batch{}
	b.Queue(`SET LOCAL session_replication_role = replica`)
	for _, t := range tables {
		b.Queue(`DELETE FROM ` + t)
	}
	b.Queue(`UPDATE cluster_state SET maintenance = false`)
	return pgx.BeginFunc(ctx, e.pools[2], func(tx pgx.Tx) error {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("empty the schema: %w", err)
		}
		return nil
	})
}

// modelConfig is a sequence's demo-settlement: the same in every instance and child process.
type modelConfig struct {
	Accounts     int
	Batch        int
	Latency      time.Duration // of every provider call
	ProviderSeed uint64
	// StopMinCalls, above 0, gives the job a stop condition (30% of calls failing downstream)
	// judged over that many calls; 0 disables stop conditions.
	StopMinCalls int
}

// demo returns the demo Config of c; failTx and failItem are the settlement job's test hooks.
func (c modelConfig) demo(failTx, failItem func(account string) bool) Config {
	stops := []runner.StopCondition{}
	if c.StopMinCalls > 0 {
		stops = []runner.StopCondition{{Name: "model error rate", Metric: runner.DownstreamErrorRate, Threshold: 0.3, MinCalls: c.StopMinCalls}}
	}
	return Config{
		Settlement: SettlementConfig{Accounts: c.Accounts, Batch: c.Batch, StopConditions: stops, failTx: failTx, failItem: failItem},
		Provider: ProviderConfig{Latency: c.Latency, ServerErrorRate: 0.05, ThrottleRate: 0.03,
			TimeoutAfterApplyRate: 0.15, RejectRate: 0.02, Seed: c.ProviderSeed},
	}
}

// modelInstance is one in-process Baton instance of a sequence.
type modelInstance struct {
	name   string
	r      *runner.Runner
	cancel context.CancelFunc // starts the instance's shutdown
	done   chan struct{}      // closed once it has shut down
}

// modelSeq is one sequence: its seed, configuration, instances and what happened.
type modelSeq struct {
	env      *modelEnv
	index    int
	seed     uint64
	rng      *rand.Rand
	cfg      modelConfig
	redisEnv string
	insts    []*modelInstance
	started  int // instances started so far, for their names
	kills    int // SIGKILLs this sequence may still do
	// failTarget is the account whose Attempt.Tx fails (nil for none), read by every
	// instance's job and handed to child processes.
	failTarget atomic.Pointer[string]
	// failItem is the account the job fails by itself (Run.Fail) the next time it reaches it
	// paying one by one, then forgets (nil for none). In process only.
	failItem atomic.Pointer[string]
	ctx      context.Context
	log      []string
}

// modelFailure is a failed sequence: what broke and the operations that led there.
type modelFailure struct {
	index      int
	seed       uint64
	cfg        modelConfig
	ops        []string
	violations []modelViolation
}

// modelViolation is one broken invariant (or an uncoded error, or a harness failure).
type modelViolation struct {
	invariant string
	detail    string
}

func (f *modelFailure) invariants() []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range f.violations {
		if !seen[v.invariant] {
			seen[v.invariant] = true
			out = append(out, v.invariant)
		}
	}
	return out
}

func (f *modelFailure) String() string {
	var b strings.Builder
	verdict := "failed"
	if len(f.violations) == 0 {
		verdict = "passed"
	}
	fmt.Fprintf(&b, "sequence %d %s: replay with BATON_MODEL_SEED=%d (config %+v)\n", f.index, verdict, f.seed, f.cfg)
	for _, v := range f.violations {
		fmt.Fprintf(&b, "  VIOLATED %s: %s\n", v.invariant, v.detail)
	}
	b.WriteString("  operations:\n")
	for i, op := range f.ops {
		fmt.Fprintf(&b, "    %2d. %s\n", i+1, op)
	}
	return b.String()
}

// Invariant names, as failures report them.
const (
	invTwoEffects      = "no target has two effects within a generation"
	invConfirmedOne    = "every CONFIRMED target has exactly one effect"
	invInFlight        = "nothing is IN_FLIGHT without an active run"
	invGenCounters     = "generation counters equal the ledger"
	invRunCounters     = "run counters equal the run's ledger counters"
	invUncoded         = "every API error carries a code"
	invRunsEnd         = "every run ends"
	invHarness         = "harness"
	modelKillOp        = "SIGKILL the holder"
	modelAccountFormat = "acct:%04d"
)

// runModelSequence runs sequence index with seed on env and returns its failure, if any.
func runModelSequence(env *modelEnv, index int, seed uint64) *modelFailure {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(seed, 0x6d6f64656c))
	m := &modelSeq{
		env: env, index: index, seed: seed, rng: rng, ctx: ctx,
		redisEnv: fmt.Sprintf("%s:%d", env.prefix, index),
		cfg: modelConfig{
			Accounts:     4 + rng.IntN(7),
			Batch:        []int{1, 1, 3}[rng.IntN(3)],
			Latency:      []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond}[rng.IntN(3)],
			ProviderSeed: rng.Uint64(),
		},
	}
	if rng.IntN(4) == 0 {
		m.cfg.StopMinCalls = 6 + rng.IntN(6)
	}
	if rng.Float64() < modelKillShare {
		m.kills = 1
	}
	fail := &modelFailure{index: index, seed: seed, cfg: m.cfg}
	violate := func(inv, format string, args ...any) {
		fail.violations = append(fail.violations, modelViolation{inv, fmt.Sprintf(format, args...)})
	}
	defer func() { fail.ops = m.log }()

	if err := env.reset(ctx); err != nil {
		violate(invHarness, "%v", err)
		return fail
	}
	for i := range 2 {
		in, err := m.newInstance(i, i == 0)
		if err != nil {
			violate(invHarness, "start instance: %v", err)
			m.stopAll()
			return fail
		}
		m.insts = append(m.insts, in)
	}
	defer m.stopAll()
	// Generations of this sequence are its own: idempotency keys hash the generation, and an
	// instance of the previous sequence still shutting down must not meet this one's keys.
	// (Nothing of it still runs: every run had ended before its check.)
	if _, err := m.db().Exec(ctx, `UPDATE job_settings SET current_generation = $2 WHERE name = $1`,
		SettlementJobName, int64(index+1)*1000); err != nil {
		violate(invHarness, "number the generations: %v", err)
		return fail
	}

	// do runs one operation and logs it; an error fails the sequence.
	do := func(name string, run func(*modelSeq) (string, error)) bool {
		t0 := time.Now()
		out, err := run(m)
		if err != nil {
			m.log = append(m.log, fmt.Sprintf("%s → %v", name, err), m.trace())
			if errors.As(err, new(*apiError)) {
				violate(invUncoded, "%s: %v", name, err)
			} else {
				violate(invHarness, "%s: %v", name, err)
			}
			return false
		}
		m.log = append(m.log, fmt.Sprintf("%s → %s [%s]", name, out, time.Since(t0).Round(time.Millisecond)))
		return true
	}
	// settleAndCheck lets every run end and checks the invariants; false if any is broken.
	settleAndCheck := func(when string) bool {
		if err := m.settle(); err != nil {
			violate(invRunsEnd, "%s: %v", when, err)
			m.log = append(m.log, m.trace())
			return false
		}
		for _, v := range m.check() {
			violate(v.invariant, "%s: %s", when, v.detail)
		}
		if len(fail.violations) > 0 {
			m.log = append(m.log, m.trace())
			return false
		}
		return true
	}

	// Every sequence begins with a run; the rest is random.
	for i := range 6 + rng.IntN(12) {
		op := modelOp{"start RESUME", 0, opStartResume}
		if i > 0 {
			op = m.pickOp()
		}
		if !do(op.name, op.run) {
			return fail
		}
	}
	if !settleAndCheck("after the operations") {
		return fail
	}
	// Then the work is finished as an operator would, so that an effect a wrong ledger state
	// hides (a target in doubt made retryable) is made again, where the checks see it.
	for _, step := range modelDrain {
		if !do("drain: "+step.name, step.run) {
			return fail
		}
	}
	if !settleAndCheck("after the drain") {
		return fail
	}
	if os.Getenv("BATON_MODEL_TRACE") != "" {
		fail.ops = append(m.log, m.trace())
		fmt.Fprint(os.Stderr, fail)
	}
	return nil
}

// modelDrain finishes a sequence's work: maintenance and pause lifted, every run ended, every
// target in doubt reconciled, and a replay of what is retryable approved by a second person.
var modelDrain = []modelOp{
	{"maintenance off", 0, opMaintenanceOff},
	{"resume", 0, opResume},
	{"reconcile everything in doubt", 0, opReconcileAll},
	{"replay what is retryable", 0, opReplayRetryable},
}

// newInstance starts in-process instance slot i (0 or 1) with a clock off by -10, 0 or +10
// minutes; scheduler also runs the scheduler and its lease recoverer on it.
func (m *modelSeq) newInstance(slot int, scheduler bool) (*modelInstance, error) {
	skew := []time.Duration{-10 * time.Minute, 0, 10 * time.Minute}[m.rng.IntN(3)]
	m.started++
	name := fmt.Sprintf("i%d(%+.0fm)", m.started, skew.Minutes())
	// Short, so that restarting an instance mid-run often abandons its run.
	shutdown := []time.Duration{time.Millisecond, 50 * time.Millisecond}[m.rng.IntN(2)]
	jobs, _ := Jobs(m.env.pools[slot], m.cfg.demo(m.failTx, m.failsItem))
	r, err := runner.New(runner.Config{
		DB: m.env.pools[slot], Redis: m.env.redis, Env: m.redisEnv, Instance: name, PoolSize: 1,
		Scheduler: scheduler, PollInterval: 200 * time.Millisecond, DefaultLease: modelLease,
		ShutdownTimeout: shutdown, MaintenanceCron: "-",
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		NowFunc: func() time.Time { return time.Now().Add(skew) },
	})
	if err != nil {
		return nil, err
	}
	if err := r.Register(m.ctx, jobs[2]); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	return &modelInstance{name: name, r: r, cancel: cancel, done: done}, nil
}

// stopAll starts the shutdown of every instance of the sequence; the env waits for them.
func (m *modelSeq) stopAll() {
	for _, in := range m.insts {
		in.cancel()
		m.env.stopping = append(m.env.stopping, in.done)
	}
	m.insts = nil
}

// failTx is the settlement job's failing-Tx hook for this sequence.
func (m *modelSeq) failTx(account string) bool {
	t := m.failTarget.Load()
	return t != nil && *t == account
}

// failsItem is the settlement job's failing-item hook for this sequence: true once for the
// armed account.
func (m *modelSeq) failsItem(account string) bool {
	t := m.failItem.Load()
	return t != nil && *t == account && m.failItem.CompareAndSwap(t, nil)
}

// inst picks the instance an operation goes through.
func (m *modelSeq) inst() *modelInstance { return m.insts[m.rng.IntN(len(m.insts))] }

// db is the harness's own pool.
func (m *modelSeq) db() *pgxpool.Pool { return m.env.pools[2] }

// modelOp is one kind of operation. Each is a small function so that one can be adapted
// alone when the API it calls changes. run returns the outcome to log, or an error that fails
// the sequence (an API error without a code, or a harness failure).
type modelOp struct {
	name   string
	weight int
	run    func(m *modelSeq) (string, error)
}

// modelOps is the table of operations, with their relative weights.
var modelOps = []modelOp{
	{"start RESUME", 4, opStartResume},
	{"start RESTART", 2, opStartRestart},
	{"cancel", 2, opCancel},
	{"pause", 1, opPause},
	{"resume", 2, opResume},
	{"maintenance on", 1, opMaintenanceOn},
	{"maintenance off", 2, opMaintenanceOff},
	{"request replay", 3, opRequestReplay},
	{"approve replay", 3, opApprove},
	{"reject replay", 1, opReject},
	{"execute approved replay", 1, opExecute},
	{"reconcile", 2, opReconcile},
	{"resolve by hand", 1, opResolve},
	{modelKillOp, 4, opKill},
	{"fail Attempt.Tx", 1, opFailTx},
	{"the job fails an account itself", 2, opFailItem},
	{"restart an instance", 2, opRestartInstance},
	{"let the run progress", 3, opProgress},
}

// pickOp draws an operation by weight; a SIGKILL only while the sequence may still do one.
func (m *modelSeq) pickOp() modelOp {
	for {
		total := 0
		for _, op := range modelOps {
			total += op.weight
		}
		n := m.rng.IntN(total)
		for _, op := range modelOps {
			if n >= op.weight {
				n -= op.weight
				continue
			}
			if op.name == modelKillOp && m.kills <= 0 {
				break
			}
			return op
		}
	}
}

// apiError is an error of the API under test that fails the sequence: one without a code,
// or INVALID_INPUT (the harness sends only valid requests). Every other error an operation
// returns is the harness's own.
type apiError struct{ err error }

func (e *apiError) Error() string { return e.err.Error() }

// outcome turns an API call's error into an operation's outcome: "ok", or the refusal's code
// — or an *apiError.
func outcome(what string, err error) (string, error) {
	if err == nil {
		return "ok", nil
	}
	switch c := bt.CodeOf(err); c {
	case "":
		return "", &apiError{fmt.Errorf("%s: error without a code: %w", what, err)}
	case bt.CodeInvalidInput:
		return "", &apiError{fmt.Errorf("%s: refused as invalid: %w", what, err)}
	default:
		return string(c), nil
	}
}

func opStartResume(m *modelSeq) (string, error) {
	in := m.inst()
	started, err := in.r.Start(m.ctx, runner.StartParams{Job: SettlementJobName, Mode: bt.ModeResume, Actor: "alice"})
	if err != nil {
		return outcome("start RESUME", err)
	}
	id := started.ID
	return fmt.Sprintf("run %d on %s", id, in.name), nil
}

// opStartRestart starts a RESTART. demo-settlement is HIGH risk: where RESTART goes through
// the replay gate, Start refuses with APPROVAL_REQUIRED or REPLAY_BLOCKED, which is a valid
// outcome, and the operation then asks for it the gated way — a request, approved by a second
// identity. (Where the gate has an API of its own, such as a restart request, call it here.)
func opStartRestart(m *modelSeq) (string, error) {
	in := m.inst()
	run, err := in.r.Start(m.ctx, runner.StartParams{Job: SettlementJobName, Mode: bt.ModeRestart, Actor: "alice"})
	switch c := bt.CodeOf(err); {
	case err == nil:
		return fmt.Sprintf("run %d on %s", run.ID, in.name), nil
	case c == bt.CodeApprovalRequired || c == bt.CodeReplayBlocked:
		// A gated RESTART is a request: alice asks, bob approves (a BLOCKED one waits until
		// its targets in doubt are settled).
		req, err := in.r.Replays().RequestRestart(m.ctx, runner.RestartParams{Job: SettlementJobName, Reason: "model test",
			CompensationRef: "refund:model-test", Actor: "alice"})
		out, err := outcome("request restart", err)
		if req != nil {
			out = fmt.Sprintf("request %d: %s (%s)", req.ID, req.Status, out)
		}
		if err != nil || req == nil || req.Status != bt.ReplayPendingApproval {
			return fmt.Sprintf("%s; requested: %s", c, out), err
		}
		app, err := m.approve(req.ID)
		return fmt.Sprintf("%s; requested: %s; approved: %s", c, out, app), err
	default:
		return outcome("start RESTART", err)
	}
}

// activeRun returns the job's active run, 0 if none.
func (m *modelSeq) activeRun() (int64, error) {
	var id int64
	err := m.db().QueryRow(m.ctx, `SELECT id FROM job_runs WHERE job_name = $1 AND status IN ('STARTING', 'RUNNING')`,
		SettlementJobName).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// waitIdle waits, up to within, for the job to have no active run, and reports whether it has
// none.
func (m *modelSeq) waitIdle(within time.Duration) (bool, error) {
	return m.poll(within, func() (bool, error) {
		id, err := m.activeRun()
		return id == 0, err
	})
}

func opCancel(m *modelSeq) (string, error) {
	id, err := m.activeRun()
	if err != nil || id == 0 {
		return "no active run", err
	}
	_, err = m.inst().r.Runs().Cancel(m.ctx, id, "alice")
	out, err := outcome("cancel", err)
	return fmt.Sprintf("run %d: %s", id, out), err
}

func opPause(m *modelSeq) (string, error) {
	_, err := m.inst().r.Jobs().Pause(m.ctx, SettlementJobName, "alice")
	return outcome("pause", err)
}

func opResume(m *modelSeq) (string, error) {
	_, run, err := m.inst().r.Jobs().Resume(m.ctx, SettlementJobName, "alice")
	out, err := outcome("resume", err)
	var id int64
	if run != nil {
		id = run.ID
	}
	return fmt.Sprintf("%s, run %d", out, id), err
}

func opMaintenanceOn(m *modelSeq) (string, error) {
	_, err := m.inst().r.SetMaintenance(m.ctx, true, "alice")
	return outcome("maintenance on", err)
}

func opMaintenanceOff(m *modelSeq) (string, error) {
	res, err := m.inst().r.SetMaintenance(m.ctx, false, "alice")
	out, err := outcome("maintenance off", err)
	if err != nil || res == nil {
		return out, err
	}
	for job, ferr := range res.Failed {
		if _, err := outcome("maintenance off: resume "+job, ferr); err != nil {
			return "", err
		}
		out += fmt.Sprintf(", %s not resumed: %s", job, bt.CodeOf(ferr))
	}
	for job, id := range res.Resumed {
		out += fmt.Sprintf(", %s resumed as run %d", job, id)
	}
	return out, nil
}

// requestReplay asks, as alice, for a replay of the job's latest ended run.
func (m *modelSeq) requestReplay(scope bt.ReplayScope) (string, error) {
	_, out, err := m.replay(scope)
	return out, err
}

// replay asks, as alice, for a replay of the job's latest ended run, and returns the request
// (nil if none was recorded) and the outcome to log.
func (m *modelSeq) replay(scope bt.ReplayScope) (*bt.ReplayRequest, string, error) {
	var src int64
	err := m.db().QueryRow(m.ctx, `SELECT id FROM job_runs WHERE job_name = $1 AND status NOT IN ('STARTING', 'RUNNING')
		ORDER BY id DESC LIMIT 1`, SettlementJobName).Scan(&src)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "no ended run to replay", nil
	}
	if err != nil {
		return nil, "", err
	}
	req, err := m.inst().r.Replays().Request(m.ctx, runner.ReplayParams{RunID: src, Scope: scope, Reason: "model test",
		CompensationRef: "refund:model-test", Actor: "alice"})
	out, err := outcome("request replay", err)
	if req != nil {
		out = fmt.Sprintf("request %d of run %d, %s: %s (%s)", req.ID, src, scope, req.Status, out)
	}
	return req, out, err
}

// opRequestReplay lets the active run, if any, end first (for up to three seconds): a replay
// is of an ended run.
func opRequestReplay(m *modelSeq) (string, error) {
	if _, err := m.waitIdle(3 * time.Second); err != nil {
		return "", err
	}
	return m.requestReplay([]bt.ReplayScope{bt.ScopeTransient, bt.ScopeFailed, bt.ScopeFull}[m.rng.IntN(3)])
}

// requestIn returns a random replay request in status, 0 if none.
func (m *modelSeq) requestIn(status bt.ReplayStatus) (int64, error) {
	rows, err := m.db().Query(m.ctx, `SELECT id FROM replay_requests WHERE status = $1 ORDER BY id`, string(status))
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[m.rng.IntN(len(ids))], nil
}

// opApprove approves a pending request as bob, who did not request it.
func opApprove(m *modelSeq) (string, error) {
	id, err := m.requestIn(bt.ReplayPendingApproval)
	if err != nil || id == 0 {
		return "no pending request", err
	}
	return m.approve(id)
}

// approve approves request id as bob.
func (m *modelSeq) approve(id int64) (string, error) {
	req, err := m.inst().r.Replays().Approve(m.ctx, id, runner.Actor{Name: "bob"}, "checked the preflight")
	out, err := outcome("approve replay", err)
	if req != nil {
		out = fmt.Sprintf("request %d: %s (%s)", id, req.Status, out)
	}
	return out, err
}

func opReject(m *modelSeq) (string, error) {
	id, err := m.requestIn(bt.ReplayPendingApproval)
	if err != nil || id == 0 {
		return "no pending request", err
	}
	_, err = m.inst().r.Replays().Reject(m.ctx, id, runner.Actor{Name: "bob"}, "not now")
	out, err := outcome("reject replay", err)
	return fmt.Sprintf("request %d: %s", id, out), err
}

func opExecute(m *modelSeq) (string, error) {
	id, err := m.requestIn(bt.ReplayApproved)
	if err != nil || id == 0 {
		return "no approved request", err
	}
	req, err := m.inst().r.Replays().Execute(m.ctx, id, runner.Actor{Name: "bob"})
	out, err := outcome("execute replay", err)
	if req != nil {
		out = fmt.Sprintf("request %d: %s (%s)", id, req.Status, out)
	}
	return out, err
}

// ambiguousEntry returns a random AMBIGUOUS_EFFECT entry and its idempotency key, 0 if none.
func (m *modelSeq) ambiguousEntry() (int64, string, error) {
	rows, err := m.db().Query(m.ctx, `SELECT id, idempotency_key FROM job_ledger WHERE state = 'AMBIGUOUS_EFFECT' ORDER BY id`)
	if err != nil {
		return 0, "", err
	}
	type entry struct {
		id  int64
		key string
	}
	es, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (entry, error) {
		var e entry
		return e, r.Scan(&e.id, &e.key)
	})
	if err != nil || len(es) == 0 {
		return 0, "", err
	}
	e := es[m.rng.IntN(len(es))]
	return e.id, e.key, nil
}

// opReconcile reconciles an ambiguous entry through the job's hook, as carol.
func opReconcile(m *modelSeq) (string, error) {
	id, _, err := m.ambiguousEntry()
	if err != nil || id == 0 {
		return "nothing ambiguous", err
	}
	return m.reconcile(id)
}

// reconcile reconciles entry id. The hook may answer at once or on a worker: this polls the
// entry for its outcome either way, and an entry still in doubt after a few seconds is only
// logged (it stays quarantined).
func (m *modelSeq) reconcile(id int64) (string, error) {
	_, err := m.inst().r.Ledger().Reconcile(m.ctx, id, "carol")
	out, err := outcome("reconcile", err)
	if err != nil || out != "ok" {
		return fmt.Sprintf("entry %d: %s", id, out), err
	}
	state, err := m.pollEntry(id, 5*time.Second)
	return fmt.Sprintf("entry %d: %s", id, state), err
}

// opReconcileAll lets the runs end, then reconciles every ambiguous entry.
func opReconcileAll(m *modelSeq) (string, error) {
	if err := m.settle(); err != nil {
		return "", err
	}
	rows, err := m.db().Query(m.ctx, `SELECT id FROM job_ledger WHERE state = 'AMBIGUOUS_EFFECT' ORDER BY id`)
	if err != nil {
		return "", err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return "", err
	}
	var outs []string
	for _, id := range ids {
		out, err := m.reconcile(id)
		if err != nil {
			return "", err
		}
		outs = append(outs, out)
	}
	return fmt.Sprintf("%d entries %v", len(ids), outs), nil
}

// opReplayRetryable asks, as alice, for a TRANSIENT replay of the latest ended run and has bob
// approve it.
func opReplayRetryable(m *modelSeq) (string, error) {
	req, out, err := m.replay(bt.ScopeTransient)
	if err != nil || req == nil || req.Status != bt.ReplayPendingApproval {
		return out, err
	}
	app, err := m.approve(req.ID)
	return out + "; " + app, err
}

// pollEntry waits, up to within, for ledger entry id to leave AMBIGUOUS_EFFECT, and returns
// the state it has then.
func (m *modelSeq) pollEntry(id int64, within time.Duration) (bt.LedgerState, error) {
	var state bt.LedgerState
	_, err := m.poll(within, func() (bool, error) {
		e, err := m.insts[0].r.Ledger().Entry(m.ctx, id)
		if err != nil {
			return false, err
		}
		state = e.State
		return state != bt.LedgerAmbiguous, nil
	})
	return state, err
}

// opResolve resolves an ambiguous entry by hand, as dave, the way an operator does it: by
// looking the idempotency key up at the provider.
func opResolve(m *modelSeq) (string, error) {
	id, key, err := m.ambiguousEntry()
	if err != nil || id == 0 {
		return "nothing ambiguous", err
	}
	var effect int64
	err = m.db().QueryRow(m.ctx, `SELECT id FROM demo_provider_effects WHERE idempotency_key = $1 ORDER BY id LIMIT 1`, key).Scan(&effect)
	res, evidenceRef := runner.ResolveConfirmed, ""
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		res = runner.ResolveNotApplied
	case err != nil:
		return "", err
	default:
		evidenceRef = evidence(effect, key)
	}
	_, err = m.inst().r.Ledger().ResolveAmbiguous(m.ctx, id, res, evidenceRef, "checked the provider's records for the key", "dave")
	out, err := outcome("resolve", err)
	return fmt.Sprintf("entry %d as %s: %s", id, res, out), err
}

// opFailTx makes the job's own write fail for one account, from now on, in every instance
// (and in child processes started later).
func opFailTx(m *modelSeq) (string, error) {
	account := fmt.Sprintf(modelAccountFormat, 1+m.rng.IntN(m.cfg.Accounts))
	m.failTarget.Store(&account)
	return account, nil
}

// opFailItem makes the job fail one account by itself (Run.Fail, TRANSIENT) the next time it
// reaches it — an account in doubt if there is one, as a job knows nothing of the ledger.
func opFailItem(m *modelSeq) (string, error) {
	if m.cfg.Batch > 1 {
		return "not while paying in batches", nil
	}
	rows, err := m.db().Query(m.ctx, `SELECT target_key FROM job_ledger WHERE state IN ('IN_FLIGHT', 'AMBIGUOUS_EFFECT') ORDER BY 1`)
	if err != nil {
		return "", err
	}
	doubt, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	account := fmt.Sprintf(modelAccountFormat, 1+m.rng.IntN(m.cfg.Accounts))
	if len(doubt) > 0 {
		account = doubt[m.rng.IntN(len(doubt))]
	}
	m.failItem.Store(&account)
	if len(doubt) == 0 {
		return account, nil
	}
	// A RESUME reaches it at once if the run that left it in doubt stopped there.
	out, err := opStartResume(m)
	return fmt.Sprintf("%s (in doubt), start RESUME: %s", account, out), err
}

// opRestartInstance shuts an in-process instance down — the one holding the active run, if
// one does — abandoning its run if it does not reach a boundary within the short shutdown
// timeout, and starts another in its place, with a clock of its own.
func opRestartInstance(m *modelSeq) (string, error) {
	slot := m.rng.IntN(len(m.insts))
	var holder string
	err := m.db().QueryRow(m.ctx, `SELECT instance FROM job_runs WHERE job_name = $1 AND status IN ('STARTING', 'RUNNING')`,
		SettlementJobName).Scan(&holder)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", err
	}
	for i, in := range m.insts {
		if in.name == holder {
			slot = i
		}
	}
	old := m.insts[slot]
	// Shutdown itself, at once (Run would get to it only after its idle waits), then the rest
	// of the instance goes while the sequence goes on.
	shut := "stopped"
	if err := old.r.Shutdown(m.ctx); err != nil {
		shut = err.Error() // runs abandoned: not an error of the test
	}
	old.cancel()
	m.env.stopping = append(m.env.stopping, old.done)
	in, err := m.newInstance(slot, slot == 0)
	if err != nil {
		m.insts = append(m.insts[:slot], m.insts[slot+1:]...)
		return "", fmt.Errorf("restart instance: %w", err)
	}
	m.insts[slot] = in
	return fmt.Sprintf("%s %s, replaced by %s", old.name, shut, in.name), nil
}

// opProgress lets the active run, if any, make progress: it returns once the run has processed
// more, or has ended, or after two seconds.
func opProgress(m *modelSeq) (string, error) {
	id, err := m.activeRun()
	if err != nil || id == 0 {
		return "no active run", err
	}
	processed := func() (int64, string, error) {
		var n int64
		var status string
		err := m.db().QueryRow(m.ctx, `SELECT processed, status FROM job_runs WHERE id = $1`, id).Scan(&n, &status)
		return n, status, err
	}
	before, _, err := processed()
	if err != nil {
		return "", err
	}
	var status string
	var now int64
	_, err = m.poll(2*time.Second, func() (bool, error) {
		var err error
		now, status, err = processed()
		return err == nil && (now > before || !bt.RunStatus(status).Active()), err
	})
	return fmt.Sprintf("run %d: processed %d → %d, %s", id, before, now, status), err
}

// opKill starts a child process that starts a run and holds it, and kills it with SIGKILL at a
// random point of its work — at most once per sequence, in a fifth of the sequences: it costs
// a process start. The run active before, if any, may end first (for up to five seconds), so
// that the child can start one. The dead holder's lease is then made to run out (as time
// would) and the recoverer takes the run.
func opKill(m *modelSeq) (string, error) {
	m.kills--
	if _, err := m.waitIdle(5 * time.Second); err != nil {
		return "", err
	}
	mode := bt.ModeResume
	if m.rng.IntN(4) == 0 {
		mode = bt.ModeRestart
	}
	cfg, err := json.Marshal(m.cfg)
	if err != nil {
		return "", err
	}
	failTarget := ""
	if t := m.failTarget.Load(); t != nil {
		failTarget = *t
	}
	skew := []time.Duration{-10 * time.Minute, 0, 10 * time.Minute}[m.rng.IntN(3)]
	killAfter := time.Duration(m.rng.IntN(60)) * time.Millisecond
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BATON_MODEL_CHILD=1", "BATON_MODEL_DB="+m.env.url, "BATON_MODEL_ENV="+m.redisEnv,
		"BATON_MODEL_CFG="+string(cfg), "BATON_MODEL_FAIL_TX="+failTarget, "BATON_MODEL_SKEW="+skew.String(),
		"BATON_MODEL_MODE="+string(mode))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start child: %w", err)
	}
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
	}
	var id int64
	if _, err := fmt.Sscanf(line, "run %d", &id); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if code, ok := strings.CutPrefix(line, "refused "); ok {
			return fmt.Sprintf("child %s could not start: %s", mode, code), nil
		}
		if msg, ok := strings.CutPrefix(line, "error start: "); ok {
			return "", &apiError{fmt.Errorf("child's start %s: %s", mode, msg)}
		}
		return "", fmt.Errorf("child said %q: %s", line, stderr.String())
	}
	time.Sleep(killAfter) // the crash point, not a wait for async work
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// The holder is dead: its lease ends now instead of in a few seconds. This waits for any
	// write the child sent before dying (it holds the run's row lock) and fences off the rest.
	if _, err := m.db().Exec(m.ctx, `UPDATE job_runs SET lease_until = now() - interval '1 hour'
		WHERE id = $1 AND status IN ('STARTING', 'RUNNING')`, id); err != nil {
		return "", err
	}
	ok, err := m.poll(10*time.Second, func() (bool, error) {
		for _, in := range m.insts {
			in.r.RecoverExpired(m.ctx)
		}
		var status string
		err := m.db().QueryRow(m.ctx, `SELECT status FROM job_runs WHERE id = $1`, id).Scan(&status)
		return err == nil && !bt.RunStatus(status).Active(), err
	})
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("run %d of the killed child not recovered within 10s", id)
	}
	return fmt.Sprintf("child (%+.0fm) run %d %s killed after %s", skew.Minutes(), id, mode, killAfter), nil
}

// init makes the test binary double as the model test's child holder (see opKill), before
// TestMain or any flag parsing.
func init() {
	if os.Getenv("BATON_MODEL_CHILD") == "1" {
		os.Exit(modelChild())
	}
}

// modelChild starts a run of demo-settlement and holds it until killed. It prints "run N",
// "refused CODE" (a coded refusal) or "error ..." on its first line.
func modelChild() int {
	ctx := context.Background()
	var cfg modelConfig
	if err := json.Unmarshal([]byte(os.Getenv("BATON_MODEL_CFG")), &cfg); err != nil {
		fmt.Printf("error config: %v\n", err)
		return 2
	}
	skew, _ := time.ParseDuration(os.Getenv("BATON_MODEL_SKEW"))
	failTarget := os.Getenv("BATON_MODEL_FAIL_TX")
	pool, err := pgxpool.New(ctx, os.Getenv("BATON_MODEL_DB"))
	if err != nil {
		fmt.Printf("error pool: %v\n", err)
		return 2
	}
	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		fmt.Printf("error redis: %v\n", err)
		return 2
	}
	jobs, _ := Jobs(pool, cfg.demo(func(account string) bool { return failTarget != "" && account == failTarget }, nil))
	r, err := runner.New(runner.Config{DB: pool, Redis: redis.NewClient(opt), Env: os.Getenv("BATON_MODEL_ENV"),
		Instance: "child", PoolSize: 1, DefaultLease: modelLease, MaintenanceCron: "-",
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		NowFunc: func() time.Time { return time.Now().Add(skew) }})
	if err == nil {
		err = r.Register(ctx, jobs[2])
	}
	if err != nil {
		fmt.Printf("error runner: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 2
	}
	run, err := r.Start(ctx, runner.StartParams{Job: SettlementJobName, Mode: bt.Mode(os.Getenv("BATON_MODEL_MODE")), Actor: "alice"})
	switch c := bt.CodeOf(err); {
	case err == nil:
		fmt.Printf("run %d\n", run.ID)
	case c != "" && c != bt.CodeInvalidInput:
		fmt.Printf("refused %s\n", c)
		return 0
	default:
		fmt.Printf("error start: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 0
	}
	select {} // until killed
}

// poll calls cond until it reports true, returns an error, or within passes; it reports
// whether cond came true.
func (m *modelSeq) poll(within time.Duration, cond func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(within)
	wait := 5 * time.Millisecond
	for {
		ok, err := cond()
		if ok || err != nil {
			return ok, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(wait)
		wait = min(wait*2, 50*time.Millisecond)
	}
}

// settle waits for every run to end, running the recoverer on each poll.
func (m *modelSeq) settle() error {
	var active []int64
	ok, err := m.poll(modelSettleWithin, func() (bool, error) {
		for _, in := range m.insts {
			in.r.RecoverExpired(m.ctx)
		}
		rows, err := m.db().Query(m.ctx, `SELECT id FROM job_runs WHERE status IN ('STARTING', 'RUNNING')`)
		if err != nil {
			return false, err
		}
		active, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err == nil && len(active) == 0, err
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("runs %v still active %s after the last operation", active, modelSettleWithin)
	}
	return nil
}

// check checks the invariants once every run has ended.
func (m *modelSeq) check() []modelViolation {
	var out []modelViolation
	add := func(inv, format string, args ...any) {
		out = append(out, modelViolation{inv, fmt.Sprintf(format, args...)})
	}
	query := func(inv, sql string, args ...any) [][]any {
		rows, err := m.db().Query(m.ctx, sql, args...)
		if err != nil {
			add(invHarness, "%s: %v", inv, err)
			return nil
		}
		vals, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		if err != nil {
			add(invHarness, "%s: %v", inv, err)
		}
		return vals
	}

	// One idempotency key is one (job, generation, target, step): two effects of a key are a
	// target paid twice within a generation.
	for _, r := range query(invTwoEffects, `
		SELECT e.target_key, count(DISTINCT e.id), string_agg(DISTINCT e.id::text, ','), COALESCE(max(l.generation), -1),
			COALESCE(max(l.state), 'no ledger row')
		FROM demo_provider_effects e LEFT JOIN job_ledger l ON l.idempotency_key = e.idempotency_key
		GROUP BY e.idempotency_key, e.target_key HAVING count(DISTINCT e.id) > 1 ORDER BY 1`) {
		add(invTwoEffects, "%v has %v effects (ids %v) in generation %v, ledger state %v", r[0], r[1], r[2], r[3], r[4])
	}
	for _, r := range query(invConfirmedOne, `
		SELECT l.target_key, l.generation, l.run_id, (SELECT count(*) FROM demo_provider_effects e WHERE e.idempotency_key = l.idempotency_key) n
		FROM job_ledger l WHERE l.state = 'CONFIRMED'
			AND (SELECT count(*) FROM demo_provider_effects e WHERE e.idempotency_key = l.idempotency_key) <> 1 ORDER BY 2, 1`) {
		add(invConfirmedOne, "%v (generation %v, run %v) is CONFIRMED with %v effects", r[0], r[1], r[2], r[3])
	}

	// Intents of ended runs must be settled by the run's end or promptly by the recoverer:
	// it gets a few passes.
	inFlight := `SELECT l.target_key, l.generation, l.run_id, COALESCE(r.status, 'no run'), COALESCE(r.stop_reason, ''), COALESCE(r.message, '')
		FROM job_ledger l LEFT JOIN job_runs r ON r.id = l.run_id
		WHERE l.state = 'IN_FLIGHT' AND (r.id IS NULL OR r.status NOT IN ('STARTING', 'RUNNING')) ORDER BY 2, 1`
	var stuck [][]any
	_, err := m.poll(modelPromptly, func() (bool, error) {
		for _, in := range m.insts {
			in.r.RecoverExpired(m.ctx)
		}
		stuck = query(invInFlight, inFlight)
		return len(stuck) == 0, nil
	})
	if err != nil {
		add(invHarness, "%v", err)
	}
	for _, r := range stuck {
		add(invInFlight, "%v (generation %v) IN_FLIGHT, its run %v ended %v %v: %.120v", r[0], r[1], r[2], r[3], r[4], r[5])
	}

	for _, r := range query(invGenCounters, `
		SELECT generation, state, COALESCE(l.n, 0), COALESCE(c.n, 0) FROM
			(SELECT generation, state, count(*) AS n FROM job_ledger WHERE job_name = $1 GROUP BY 1, 2) l
			FULL JOIN (SELECT generation, state, sum(n) AS n FROM job_ledger_counts WHERE job_name = $1 AND run_id = 0 GROUP BY 1, 2 HAVING sum(n) <> 0) c
			USING (generation, state)
		WHERE l.n IS DISTINCT FROM c.n ORDER BY 1, 2`, SettlementJobName) {
		add(invGenCounters, "generation %v: %v rows %v, counter %v", r[0], r[1], r[2], r[3])
	}
	// A run's counters against the per-run state counters its writes keep with them, and those
	// against the ledger: a run counts as AMBIGUOUS also the quarantined targets it met (no row
	// written), and a target it confirmed stays its CONFIRMED row (nothing rewrites one; a
	// reconcile may add others).
	for _, r := range query(invRunCounters, `
		SELECT r.id, r.status, r.succeeded::bigint, r.failed::bigint, r.ambiguous::bigint, r.skipped::bigint,
			COALESCE(sum(c.n) FILTER (WHERE c.state = 'CONFIRMED'), 0)::bigint,
			COALESCE(sum(c.n) FILTER (WHERE c.state IN ('TRANSIENT', 'VALIDATION_REJECTED', 'CONFLICT', 'POLICY_BLOCKED', 'BUG_SUSPECTED')), 0)::bigint,
			COALESCE(sum(c.n) FILTER (WHERE c.state = 'AMBIGUOUS_EFFECT'), 0)::bigint,
			COALESCE(sum(c.n) FILTER (WHERE c.state = 'SKIPPED'), 0)::bigint,
			(SELECT count(*) FROM job_ledger l WHERE l.run_id = r.id AND l.state = 'CONFIRMED')
		FROM job_runs r LEFT JOIN job_ledger_counts c ON c.job_name = r.job_name AND c.generation = r.generation AND c.run_id = r.id
		GROUP BY r.id ORDER BY r.id`) {
		id, status := r[0], r[1]
		succeeded, failed, ambiguous, skipped := toInt(r[2]), toInt(r[3]), toInt(r[4]), toInt(r[5])
		cConfirmed, cFailed, cAmbiguous, cSkipped, rowsConfirmed := toInt(r[6]), toInt(r[7]), toInt(r[8]), toInt(r[9]), toInt(r[10])
		switch {
		case succeeded != cConfirmed || failed != cFailed:
			add(invRunCounters, "run %v (%v): succeeded %d / failed %d, its state counters %d CONFIRMED / %d failed",
				id, status, succeeded, failed, cConfirmed, cFailed)
		case ambiguous < cAmbiguous || skipped < cSkipped:
			add(invRunCounters, "run %v (%v): ambiguous %d / skipped %d, under its state counters %d / %d",
				id, status, ambiguous, skipped, cAmbiguous, cSkipped)
		case cConfirmed > rowsConfirmed:
			add(invRunCounters, "run %v (%v) confirmed %d targets, the ledger holds %d CONFIRMED rows of it",
				id, status, cConfirmed, rowsConfirmed)
		}
	}
	return out
}

// trace describes the runs and the ledger at the end of a sequence (BATON_MODEL_TRACE=1).
func (m *modelSeq) trace() string {
	var b strings.Builder
	b.WriteString("at the end:")
	rows, err := m.db().Query(m.ctx, `SELECT id, generation, trigger, mode, status, COALESCE(stop_reason, ''), processed, succeeded, failed, ambiguous, left(message, 80)
		FROM job_runs ORDER BY id`)
	if err == nil {
		vals, _ := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		for _, v := range vals {
			fmt.Fprintf(&b, "\n      run %v gen %v %v %v %v %v p%v s%v f%v a%v %q", v...)
		}
	}
	rows, err = m.db().Query(m.ctx, `SELECT generation, state, count(*) FROM job_ledger GROUP BY 1, 2 ORDER BY 1, 2`)
	if err == nil {
		vals, _ := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
		for _, v := range vals {
			fmt.Fprintf(&b, "\n      ledger gen %v %v: %v", v...)
		}
	}
	var effects int
	_ = m.db().QueryRow(m.ctx, `SELECT count(*) FROM demo_provider_effects`).Scan(&effects)
	fmt.Fprintf(&b, "\n      %d provider effects", effects)
	return b.String()
}

// toInt reads a count the checks' SQL returns (cast to bigint there).
func toInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

// TestModelChecksCatchViolations shows the model test's checks are right both ways: silent on
// a run that keeps every promise, and reporting each invariant once the ledger, the counters
// or the provider's table are made to break it.
func TestModelChecksCatchViolations(t *testing.T) {
	t.Parallel()
	env := newModelEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env.reset(ctx); err != nil {
		t.Fatal(err)
	}
	// One instance, and a healthy provider: the one run confirms every account.
	cfg := modelConfig{Accounts: 6, Batch: 1}.demo(nil, nil)
	cfg.Provider = ProviderConfig{Latency: Off, ServerErrorRate: Off, ThrottleRate: Off, TimeoutAfterApplyRate: Off, RejectRate: Off}
	jobs, _ := Jobs(env.pools[0], cfg)
	m := &modelSeq{env: env, ctx: ctx, redisEnv: env.prefix + ":checks"}
	r, err := runner.New(runner.Config{DB: env.pools[0], Redis: env.redis, Env: m.redisEnv, PoolSize: 1, MaintenanceCron: "-",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ctx, jobs[2]); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(runCtx) }()
	m.insts = []*modelInstance{{name: "checks", r: r, cancel: stop, done: done}}
	t.Cleanup(func() { m.stopAll(); env.wait() })
	if _, err := r.Start(ctx, runner.StartParams{Job: SettlementJobName}); err != nil {
		t.Fatal(err)
	}
	if err := m.settle(); err != nil {
		t.Fatal(err)
	}
	var confirmed int
	if err := env.pools[2].QueryRow(ctx, `SELECT count(*) FROM job_ledger WHERE state = 'CONFIRMED'`).Scan(&confirmed); err != nil || confirmed != 6 {
		t.Fatalf("%d CONFIRMED targets (%v), want 6", confirmed, err)
	}
	if v := m.check(); len(v) != 0 {
		t.Fatalf("the checks of a healthy run report %+v", v)
	}

	// Now break each invariant: a second effect of a confirmed key, an intent left behind
	// (which also puts the generation's counters off), and a run counter off by one.
	for _, sql := range []string{
		`INSERT INTO demo_provider_effects (idempotency_key, target_key, amount)
			SELECT idempotency_key, target_key, 1 FROM job_ledger WHERE target_key = 'acct:0001'`,
		`UPDATE job_ledger SET state = 'IN_FLIGHT' WHERE target_key = 'acct:0002'`,
		`UPDATE job_runs SET succeeded = succeeded + 1`,
	} {
		if _, err := env.pools[2].Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for _, v := range m.check() {
		got[v.invariant] = true
	}
	for _, inv := range []string{invTwoEffects, invConfirmedOne, invInFlight, invGenCounters, invRunCounters} {
		if !got[inv] {
			t.Errorf("no violation of %q reported; got %v", inv, got)
		}
	}
	if got[invHarness] {
		t.Errorf("the checks failed to run: %v", got)
	}
}
