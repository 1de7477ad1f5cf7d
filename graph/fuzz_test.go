package graph

// Fuzz targets of the API's input handling: cursors, Relay global ids and the inputs of the
// mutations that change state. The id and cursor targets check the pure functions and then the
// same string through the real endpoint; the mutation targets drive the real endpoint (a
// runner on a schema of its own, an admin token) with fuzzed GraphQL variables and check what
// a client and the database see. `go test` runs the seeds (f.Add and testdata/fuzz/); `make
// fuzz` (scripts/fuzz.sh) fuzzes each target for FUZZTIME.
//
// Inputs that fuzzing found to break a property are kept in testdata/fuzz-found/, which no
// test reads, until the bug is fixed: see the README there.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/migrations"
	"github.com/baton-run/baton/runner"
)

// Jobs of the fuzz endpoint. Both return at once, so a run a fuzzed mutation starts is over
// before the next input.
const (
	fuzzJobLow  = "fuzz-low"
	fuzzJobHigh = "fuzz-high"
)

// What the fuzz endpoint's database holds from the start: finished runs 1 (fuzz-low, FAILED),
// 2 (fuzz-high, FAILED) and 3 (fuzz-low, SUCCEEDED), and ledger entries 1 (fuzz-low,
// AMBIGUOUS_EFFECT), 2 (fuzz-low, TRANSIENT), 3 (fuzz-high, AMBIGUOUS_EFFECT) and 4
// (fuzz-low, CONFIRMED). An entry resolved by a fuzzed input is put back, so every input
// meets the same ledger.
const fuzzSeedSQL = `
INSERT INTO job_runs (job_name, status, trigger, mode, requested_by, instance, lease_token, lease_seconds,
		lease_until, generation, finished_at, total, processed, succeeded, failed, ambiguous)
	VALUES ('fuzz-low', 'FAILED', 'MANUAL', 'RESUME', 'seed', 'seed', 'tok', 30, now(), 1, now(), 4, 4, 1, 1, 1),
	       ('fuzz-high', 'FAILED', 'MANUAL', 'RESUME', 'seed', 'seed', 'tok', 30, now(), 1, now(), 1, 1, 0, 0, 1),
	       ('fuzz-low', 'SUCCEEDED', 'MANUAL', 'RESUME', 'seed', 'seed', 'tok', 30, now(), 1, now(), 0, 0, 0, 0, 0);
INSERT INTO job_ledger (job_name, generation, target_key, step, state, attempt, idempotency_key, external, run_id, last_error)
	VALUES ('fuzz-low', 1, 't1', 'send', 'AMBIGUOUS_EFFECT', 1, 'k1', true, 1, 'timeout'),
	       ('fuzz-low', 1, 't2', 'send', 'TRANSIENT', 2, 'k2', true, 1, '503'),
	       ('fuzz-high', 1, 't1', 'send', 'AMBIGUOUS_EFFECT', 1, 'k3', true, 2, 'timeout'),
	       ('fuzz-low', 1, 't3', 'send', 'CONFIRMED', 1, 'k4', true, 1, NULL);
INSERT INTO job_run_errors (run_id, item_key, failure_class, message) VALUES (1, 't2', 'TRANSIENT', '503');
`

// fuzzServer is the GraphQL endpoint every fuzz input meets: a runner with the two fuzz jobs
// on a schema and Redis prefix of its own, an admin token, and the handler in-process (no
// network). One process builds it once, for its first fuzz target, and every target of the
// process shares it: `go test` runs all the targets' seeds against one endpoint, and a fuzz
// worker (a process of its own, fuzzing one target) builds one for itself. TestMain tears it
// down.
type fuzzServer struct {
	h     http.Handler
	r     *runner.Runner
	pool  *pgxpool.Pool
	token string
	logs  *errorLog
	close func()
}

var sharedFuzzServer struct {
	once sync.Once
	s    *fuzzServer
	err  error
}

// fuzzEndpoint returns the process's fuzz endpoint, building it on first use.
func fuzzEndpoint(f *testing.F) *fuzzServer {
	f.Helper()
	sharedFuzzServer.once.Do(func() {
		sharedFuzzServer.s, sharedFuzzServer.err = newFuzzServer()
	})
	if sharedFuzzServer.err != nil {
		f.Fatalf("fuzz endpoint: %v", sharedFuzzServer.err)
	}
	return sharedFuzzServer.s
}

func TestMain(m *testing.M) {
	code := m.Run()
	if s := sharedFuzzServer.s; s != nil {
		s.close()
	}
	os.Exit(code)
}

// newFuzzServer builds the endpoint. It cannot use testenv's helpers, which tie what they
// make to one test's lifetime; it makes the same things and undoes them in close.
func newFuzzServer() (_ *fuzzServer, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var undo []func()
	closeAll := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()

	base, schema := testenv.DatabaseURL(), testenv.RandomName(fmt.Sprintf("t_fuzz_%d_", os.Getpid()))
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", base, err)
	}
	reapFuzzSchemas(ctx, admin)
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+schema)
	_ = admin.Close(ctx)
	if err != nil {
		return nil, fmt.Errorf("create schema: %w", err)
	}
	undo = append(undo, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			_ = c.Close(ctx)
		}
	})
	url := testenv.WithSearchPath(base, schema)
	if err := migrations.Up(ctx, url); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	undo = append(undo, pool.Close)

	ropt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		return nil, err
	}
	rc, env := redis.NewClient(ropt), testenv.RandomName("btfuzz")
	undo = append(undo, func() {
		ctx := context.Background()
		iter := rc.Scan(ctx, 0, "baton:{"+env+"}:*", 100).Iterator()
		for iter.Next(ctx) {
			rc.Del(ctx, iter.Val())
		}
		_ = rc.Close()
	})

	logs := &errorLog{}
	log := slog.New(logs)
	r, err := runner.New(runner.Config{
		DB: pool, Redis: rc, Env: env, PoolSize: 2, PollInterval: time.Second, DefaultLease: 10 * time.Second,
		ShutdownTimeout: 5 * time.Second, Logger: log, MaintenanceCron: "-",
	})
	if err != nil {
		return nil, err
	}
	noop := func(context.Context, *runner.Run) error { return nil }
	if err := r.Register(ctx,
		runner.NewJob(runner.JobInfo{Name: fuzzJobLow, Description: "fuzz job", Version: "1"}, noop),
		runner.NewJob(runner.JobInfo{Name: fuzzJobHigh, Description: "fuzz job", Version: "1", Risk: runner.RiskLevel("HIGH")}, noop),
	); err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(runCtx) }()
	undo = append(undo, func() { stop(); <-done })

	if _, err := pool.Exec(ctx, fuzzSeedSQL); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	token, err := MintToken(ctx, pool, "fuzz-admin", model.RoleAdmin)
	if err != nil {
		return nil, err
	}
	h := HTTPEndpoint(Config{Runner: r, Logger: log, MutationRatePerMinute: -1}, pool)
	return &fuzzServer{h: h, r: r, pool: pool, token: token, logs: logs, close: closeAll}, nil
}

// reapFuzzSchemas drops the schemas of fuzz endpoints whose process is gone. The fuzzer
// stops its worker processes without letting TestMain run, so each worker leaves its schema
// behind; the next endpoint built on this machine removes them.
func reapFuzzSchemas(ctx context.Context, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 't\_fuzz\_%'`)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range names {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(name, "t_fuzz_"), "_")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	}
}

// processAlive reports whether process pid still runs on this machine.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	// Any answer but "no such process" (EPERM: another user's) means it runs.
	return !errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}

// knownBugs are bugs fuzzing found that are not fixed yet, each recognised by what the
// endpoint logged while it served the failing input. An input that fails while the log shows
// one of them is skipped, naming the bug, so that `go test` stays green and fuzzing goes on
// looking for other bugs; BATON_FUZZ_STRICT=1 turns the skipping off (to reproduce one with
// an input of testdata/fuzz-found/). Delete an entry once its bug is fixed.
var knownBugs = []struct{ bug, logged string }{}

// begin starts an input: what the endpoint logs from now on is this input's.
func (s *fuzzServer) begin() { s.logs.reset() }

// fail fails the test with msg and what the endpoint logged for this input, or skips it when
// the log shows a known bug (see knownBugs).
func (s *fuzzServer) fail(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	logged := s.logs.dump()
	for _, k := range knownBugs {
		if strings.Contains(logged, k.logged) {
			s.skipKnown(t, k.bug, msg)
		}
	}
	t.Fatalf("%s%s", msg, logged)
}

// skipKnown skips an input that fails (with msg) for a known bug, unless BATON_FUZZ_STRICT=1.
func (s *fuzzServer) skipKnown(t *testing.T, bug, msg string) {
	t.Helper()
	if os.Getenv("BATON_FUZZ_STRICT") != "1" {
		first, _, _ := strings.Cut(msg, "\n")
		t.Skipf("known bug: %s (BATON_FUZZ_STRICT=1 to fail): %.300s", bug, first)
	}
}

// fuzzResponse is a GraphQL answer as a client sees it.
type fuzzResponse struct {
	status int
	raw    []byte
	Data   map[string]json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func (r *fuzzResponse) codes() []string {
	out := make([]string, len(r.Errors))
	for i, e := range r.Errors {
		out[i], _ = e.Extensions["code"].(string)
	}
	return out
}

func (r *fuzzResponse) hasCode(code string) bool {
	for _, c := range r.codes() {
		if c == code {
			return true
		}
	}
	return false
}

// requestErrorCodes are the codes of errors that refuse a whole request before it runs,
// which the GraphQL-over-HTTP spec answers with a 4xx status.
var requestErrorCodes = map[string]bool{
	"GRAPHQL_VALIDATION_FAILED": true, "GRAPHQL_PARSE_FAILED": true, CodeBadUserInput: true, CodeBadRequest: true,
}

// post sends one request and checks what holds for every answer: a GraphQL response, HTTP
// 200 (or a 4xx for a request refused as a whole), every error coded, and never
// INTERNAL_SERVER_ERROR.
func (s *fuzzServer) post(t *testing.T, query string, vars map[string]any) *fuzzResponse {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		s.fail(t, "marshal variables: %v", err)
	}
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token)
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, req)
	res := &fuzzResponse{status: w.Code, raw: w.Body.Bytes()}
	if err := json.Unmarshal(res.raw, res); err != nil {
		s.fail(t, "HTTP %d: the body is not a GraphQL response: %v\n%.2000s", w.Code, err, res.raw)
	}
	switch {
	case w.Code == http.StatusOK:
	case w.Code == http.StatusRequestEntityTooLarge && res.hasCode(CodePayloadTooLarge):
	case w.Code >= 400 && w.Code < 500 && len(res.Errors) > 0 && allIn(res.codes(), requestErrorCodes):
	default:
		s.fail(t, "HTTP %d with codes %v: %.2000s", w.Code, res.codes(), res.raw)
	}
	for i, c := range res.codes() {
		if c == "" || c == CodeInternal {
			s.fail(t, "error %d is coded %q: %.2000s\nvariables: %.2000s", i, c, res.raw, body)
		}
	}
	if res.Data == nil && len(res.Errors) == 0 {
		s.fail(t, "neither data nor errors: %.2000s", res.raw)
	}
	return res
}

func allIn(codes []string, set map[string]bool) bool {
	for _, c := range codes {
		if !set[c] {
			return false
		}
	}
	return true
}

// checkHealthy fails the test unless the endpoint still answers a trivial query.
func (s *fuzzServer) checkHealthy(t *testing.T) {
	t.Helper()
	res := s.post(t, `{ me { name } }`, nil)
	var me struct{ Me struct{ Name string } }
	if len(res.Errors) > 0 || json.Unmarshal(res.raw, &struct{ Data any }{&me}) != nil || me.Me.Name != "fuzz-admin" {
		s.fail(t, "the endpoint no longer answers { me { name } }: HTTP %d %.2000s", res.status, res.raw)
	}
}

// state is what a refused mutation must leave alone.
type state struct {
	jobs     string // every job_settings row, version included
	runs     int64
	replays  string // id and status of every replay request
	ledger   string // every ledger entry's state and evidence
	maint    bool
	auditMax int64
}

func (s *fuzzServer) state(t *testing.T) state {
	t.Helper()
	var st state
	err := s.pool.QueryRow(context.Background(), `SELECT
		(SELECT coalesce(string_agg(format('%s|%s|%s|%s|%s|%s|%s|%s', name, version, cron, timezone, enabled, paused,
			lease_seconds, current_generation), ';' ORDER BY name), '') FROM job_settings),
		(SELECT count(*) FROM job_runs),
		(SELECT coalesce(string_agg(format('%s|%s', id, status), ';' ORDER BY id), '') FROM replay_requests),
		(SELECT coalesce(string_agg(format('%s|%s|%s|%s', id, state, evidence_ref, last_error), ';' ORDER BY id), '') FROM job_ledger),
		(SELECT maintenance FROM cluster_state),
		(SELECT coalesce(max(id), 0) FROM audit_log)`).Scan(&st.jobs, &st.runs, &st.replays, &st.ledger, &st.maint, &st.auditMax)
	if err != nil {
		s.fail(t, "read state: %v", err)
	}
	return st
}

// lastRun returns the highest run id: every run from 1 to it exists.
func (s *fuzzServer) lastRun(t *testing.T) int64 {
	t.Helper()
	var n int64
	if err := s.pool.QueryRow(context.Background(), `SELECT coalesce(max(id), 0) FROM job_runs`).Scan(&n); err != nil {
		t.Fatalf("read the last run: %v", err)
	}
	return n
}

// settle waits until no run is active: a run a mutation started finishes (its job returns
// at once) before the next input reads the state.
func (s *fuzzServer) settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var active []int64
		rows, err := s.pool.Query(context.Background(), `SELECT id FROM job_runs WHERE status IN ('STARTING', 'RUNNING')`)
		if err == nil {
			for rows.Next() {
				var id int64
				if err = rows.Scan(&id); err != nil {
					break
				}
				active = append(active, id)
			}
			rows.Close()
			if err == nil {
				err = rows.Err()
			}
		}
		if err != nil {
			s.fail(t, "list active runs: %v", err)
		}
		busy := len(active) > 0
		var last int64
		_ = s.pool.QueryRow(context.Background(), `SELECT coalesce(max(id), 0) FROM job_runs`).Scan(&last)
		for id := int64(1); id <= last && !busy; id++ {
			busy = s.r.Active(id)
		}
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			s.fail(t, "runs %v still active after 20s", active)
		}
		time.Sleep(wait)
	}
}

// errorLog is a slog handler that keeps the latest errors the endpoint logged (an internal
// error's real cause never reaches the client), for failure messages.
type errorLog struct {
	mu   sync.Mutex
	last []string
}

func (l *errorLog) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelWarn }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = append(l.last, b.String())
	if len(l.last) > 20 {
		l.last = l.last[len(l.last)-20:]
	}
	return nil
}
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLog) WithGroup(string) slog.Handler      { return l }

func (l *errorLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = nil
}

func (l *errorLog) dump() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.last) == 0 {
		return ""
	}
	return "\nserver log:\n  " + strings.Join(l.last, "\n  ")
}

// How a fuzzed input field is sent: two bits of a shape word per field.
const (
	sendValue     = 0 // the value
	sendNull      = 1 // null
	sendOmitted   = 2 // left out
	sendWrongType = 3 // a value of another type
)

// put sets field key of an input object the way bits says.
func put(m map[string]any, key string, v any, bits uint64) {
	switch bits & 3 {
	case sendValue:
		m[key] = v
	case sendNull:
		m[key] = nil
	case sendOmitted:
	case sendWrongType:
		switch v := v.(type) {
		case string:
			if len(v)%2 == 0 {
				m[key] = len(v)
			} else {
				m[key] = []any{v}
			}
		case int64:
			m[key] = strconv.FormatInt(v, 10)
		case bool:
			m[key] = map[string]any{"v": v}
		default:
			m[key] = true
		}
	}
}

// sent reports whether put sent the value itself.
func sent(bits uint64) bool { return bits&3 == sendValue }

// asGlobalID returns raw unchanged, or (when encode is set) raw as the key of a global id of
// type typ: the fuzzer then explores the keys of well-formed ids too.
func asGlobalID(raw, typ string, encode bool) string {
	if !encode {
		return raw
	}
	return base64.StdEncoding.EncodeToString([]byte(typ + ":" + raw))
}

// Seeds shared by the string fields.
var fuzzStrings = []string{
	"", " ", "fuzz-low", "fuzz-high", "FUZZ-LOW", " fuzz-low ", "no-such-job", "1", "-1", "0",
	"9223372036854775807", "9223372036854775808", "Jöb ✓ 名前 😀", "\u202e\u0301", "\u0000", "a\u0000b", "\t\n\r",
	"../../etc/passwd", "..%2f..%2f", "' OR 1=1 --", `"; DROP TABLE job_settings; --`, `\`, "%s%n%x", "<script>",
	"${jndi:ldap://x}", strings.Repeat("a", 2001), strings.Repeat("é", 5000), strings.Repeat("x", 100_000),
}

// Seeds of cron expressions and time zones.
var fuzzCrons = []string{
	"", "* * * * *", "* * * * * *", "0 0 4 * * *", "*/5 * * * *", "@daily", "@every 90s", "@every 0s", "@every -1s",
	"@every 1ns", "@reboot", "0 0 30 2 *", "0 0 29 2 *", "60 * * * * *", "*/0 * * * *", "1-5/0 * * * *",
	"0 0 * * MON-FRI", "0 0 L * *", "CRON_TZ=UTC 0 0 * * *", "TZ=Asia/Seoul 0 0 * * *", "* * * * * * *",
	"0 0 31 4 *", "0 0 1 13 *", "59 59 23 31 12 *", strings.Repeat("*/1 ", 50),
}

var fuzzZones = []string{
	"", "UTC", "Local", "Asia/Seoul", "America/New_York", "Etc/GMT+14", "Etc/GMT-14", "EST5EDT", "utc",
	"../etc/passwd", "/etc/localtime", "Europe/Berlin\u0000", "Mars/Olympus",
}

// FuzzCursor: decoding any string as a cursor of any list gives a valid position or refuses
// it with BAD_USER_INPUT — in parsePage and through the endpoint, which agree — and every
// position round-trips through encodeCursor.
func FuzzCursor(f *testing.F) {
	kinds := []string{cursorRuns, cursorRunErrors, cursorLedger, cursorReplays, cursorAudit}
	for i, kind := range kinds {
		for _, id := range []int64{1, 2, 1 << 40, 1<<63 - 1} {
			f.Add(encodeCursor(kind, id), uint8(i), id)
		}
	}
	for _, c := range []string{"", "YzE6cnVuczow", "YzE6cnVuczotMQ", "YzE6cnVuczorMQ", "YzE6cnVuczowMDE", "YzE6cnVuczox=",
		"YzE6cnVuczox\n", "YzE6YXVkaXQ6NQ", "not-a-cursor", "c1:runs:1", "////", "-_-_", "\u0000", strings.Repeat("A", 10_000)} {
		f.Add(c, uint8(0), int64(-1))
	}
	s := fuzzEndpoint(f)
	queries := map[string]string{
		cursorRuns:      `query($c: String) { runs(first: 2, after: $c) { edges { cursor } } }`,
		cursorRunErrors: `query($c: String) { run(id: "UnVuOjE=") { errors(first: 2, after: $c) { edges { cursor } } } }`,
		cursorLedger:    `query($c: String) { ledger(jobName: "fuzz-low", first: 2, after: $c) { edges { cursor } } }`,
		cursorReplays:   `query($c: String) { replayRequests(first: 2, after: $c) { edges { cursor } } }`,
		cursorAudit:     `query($c: String) { auditLog(first: 2, after: $c) { edges { cursor } } }`,
	}
	f.Fuzz(func(t *testing.T, c string, k uint8, id int64) {
		s.begin()
		kind := kinds[int(k)%len(kinds)]

		// Round trip: every position (id > 0) survives encoding, on its own list only.
		got, ok := decodeCursor(encodeCursor(kind, id), kind)
		if ok != (id > 0) || (ok && got != id) {
			s.fail(t, "decodeCursor(encodeCursor(%q, %d)) = %d, %v", kind, id, got, ok)
		}
		for _, other := range kinds {
			if other != kind {
				if _, ok := decodeCursor(encodeCursor(kind, id), other); ok {
					s.fail(t, "a %s cursor decodes as a %s cursor", kind, other)
				}
			}
		}

		// Any string: a position or BAD_USER_INPUT.
		pos, ok := decodeCursor(c, kind)
		if ok && pos <= 0 {
			s.fail(t, "decodeCursor(%q, %q) = %d, a position that is no id", c, kind, pos)
		}
		if ok {
			again, ok2 := decodeCursor(encodeCursor(kind, pos), kind)
			if !ok2 || again != pos {
				s.fail(t, "position %d of cursor %q does not round-trip", pos, c)
			}
		}
		p, err := parsePage(nil, &c, kind)
		switch {
		case c == "" && (err != nil || p.after != 0):
			s.fail(t, "parsePage with an empty cursor: %+v, %v", p, err)
		case c != "" && ok && (err != nil || p.after != pos):
			s.fail(t, "parsePage(%q) = %+v, %v; want after %d", c, p, err, pos)
		case c != "" && !ok:
			var api *apiError
			if !errors.As(err, &api) || api.code != CodeBadUserInput {
				s.fail(t, "parsePage(%q) = %+v, %v; want a BAD_USER_INPUT error", c, p, err)
			}
			if pe := presentError(slog.New(slog.DiscardHandler))(context.Background(), err); pe.Extensions["code"] != CodeBadUserInput {
				s.fail(t, "presented as %v", pe.Extensions)
			}
		}

		// The endpoint agrees.
		res := s.post(t, queries[kind], map[string]any{"c": c})
		switch {
		case ok || c == "":
			if len(res.Errors) > 0 {
				s.fail(t, "cursor %q of %s (position %d) refused: %.2000s", c, kind, pos, res.raw)
			}
		case len(res.Errors) != 1 || res.codes()[0] != CodeBadUserInput:
			s.fail(t, "cursor %q of %s: want one BAD_USER_INPUT error, got %.2000s", c, kind, res.raw)
		}
	})
}

// FuzzGlobalID: any string given as an id is a valid id or a BAD_USER_INPUT error, through
// the id functions and through node(id:) and run(id:); ids round-trip.
func FuzzGlobalID(f *testing.F) {
	types := []string{typeJob, typeRun, typeLedgerEntry, typeReplayRequest, typeAuditEntry, "", "Nope", "Run:Run"}
	keys := []string{"1", "2", "3", "fuzz-low", "0", "-1", "+1", "01", " 1", "1 ", "9223372036854775807",
		"9223372036854775808", "", ":", "a:b", "\u0000", "fuzz-low\u0000", "😀", strings.Repeat("9", 400)}
	for i, typ := range types {
		for j, key := range keys {
			if (i+j)%3 == 0 || (typ == typeRun && j < 10) || (typ == typeJob && j < 4) {
				f.Add(globalID(typ, key), uint8(i), key)
			}
		}
	}
	for _, id := range []string{"", "UnVuOjQy", "UnVuOjQy!", "UnVuOjQ", "UnVuOjQy====", "UnVu\nOjQy", "Run:42", "=", "////",
		"LTE=", strings.Repeat("A", 10_000)} {
		f.Add(id, uint8(1), "42")
	}
	s := fuzzEndpoint(f)
	f.Fuzz(func(t *testing.T, id string, ti uint8, key string) {
		s.begin()
		typ := types[int(ti)%len(types)]

		// Round trips.
		// Keys with a NUL or broken UTF-8 are refused on the way in (nothing Baton stores can
		// hold them); every other key round-trips.
		if typ != "" && key != "" && !strings.Contains(typ, ":") && !strings.ContainsRune(key, 0) && utf8.ValidString(key) {
			gt, gk, ok := parseGlobalID(globalID(typ, key))
			if !ok || gt != typ || gk != key {
				s.fail(t, "parseGlobalID(globalID(%q, %q)) = %q, %q, %v", typ, key, gt, gk, ok)
			}
		}
		if n, err := strconv.ParseInt(key, 10, 64); err == nil {
			got, ok := decodeIntID(globalIntID(typ, n), typ)
			if want := n > 0 && typ != "" && !strings.Contains(typ, ":"); ok != want || (ok && got != n) {
				s.fail(t, "decodeIntID(globalIntID(%q, %d)) = %d, %v", typ, n, got, ok)
			}
			if n > 0 {
				if got, ok := RunNumber(RunID(n)); !ok || got != n {
					s.fail(t, "RunNumber(RunID(%d)) = %d, %v", n, got, ok)
				}
			}
		}

		// Any string.
		pt, pk, pok := parseGlobalID(id)
		if pok && (pt == "" || pk == "") {
			s.fail(t, "parseGlobalID(%q) = %q, %q: an empty part", id, pt, pk)
		}
		n, nok := decodeIntID(id, typeRun)
		if nok && (n <= 0 || !pok || pt != typeRun) {
			s.fail(t, "decodeIntID(%q, Run) = %d from %q, %q", id, n, pt, pk)
		}
		if _, err := mustIntID(id, typeRun, "id"); (err == nil) != nok {
			s.fail(t, "mustIntID and decodeIntID disagree on %q: %v", id, err)
		} else if err != nil {
			var api *apiError
			if !errors.As(err, &api) || api.code != CodeBadUserInput {
				s.fail(t, "mustIntID(%q): %v is not BAD_USER_INPUT", id, err)
			}
		}

		// run(id:) through the endpoint: a run (or null) exactly when the id is a Run id.
		res := s.post(t, `query($id: ID!) { run(id: $id) { id } }`, map[string]any{"id": id})
		var run struct{ Run *struct{ ID string } }
		_ = json.Unmarshal(res.raw, &struct{ Data any }{&run})
		switch {
		case nok && len(res.Errors) > 0:
			s.fail(t, "run(id: %q) (run %d) refused: %.2000s", id, n, res.raw)
		case nok && run.Run != nil && run.Run.ID != RunID(n):
			s.fail(t, "run(id: %q) answered run %s, not %s", id, run.Run.ID, RunID(n))
		case nok && (run.Run != nil) != (n <= s.lastRun(t)):
			s.fail(t, "run(id: %q): run %d of %d runs: got %.200s", id, n, s.lastRun(t), res.raw)
		case !nok && (len(res.Errors) != 1 || res.codes()[0] != CodeBadUserInput):
			s.fail(t, "run(id: %q): want one BAD_USER_INPUT error, got %.2000s", id, res.raw)
		}

		// node(id:): an object whose id has the same type and key, null, or BAD_USER_INPUT.
		res = s.post(t, `query($id: ID!) { node(id: $id) { id __typename } }`, map[string]any{"id": id})
		var node struct {
			Node *struct {
				ID       string
				Typename string `json:"__typename"`
			}
		}
		_ = json.Unmarshal(res.raw, &struct{ Data any }{&node})
		if len(res.Errors) > 0 {
			if len(res.Errors) != 1 || res.codes()[0] != CodeBadUserInput {
				s.fail(t, "node(id: %q): want one BAD_USER_INPUT error, got %.2000s", id, res.raw)
			}
			return
		}
		if !pok {
			s.fail(t, "node(id: %q) accepted an id that does not parse: %.2000s", id, res.raw)
		}
		if node.Node == nil {
			return
		}
		rt, rk, _ := parseGlobalID(node.Node.ID)
		if rt != pt || node.Node.Typename != pt {
			s.fail(t, "node(id: %q) (%q, %q) answered a %s with id %q", id, pt, pk, node.Node.Typename, node.Node.ID)
		}
		if pt == typeJob && rk != pk {
			s.fail(t, "node(id: %q) answered job %q", id, rk)
		}
		if pt != typeJob {
			a, _ := strconv.ParseInt(pk, 10, 64)
			b, _ := strconv.ParseInt(rk, 10, 64)
			if a != b {
				s.fail(t, "node(id: %q) (%s %d) answered %s %d", id, pt, a, rt, b)
			}
		}
	})
}

// mutation is one fuzzed mutation's answer: the payload and what it did.
type mutation struct {
	s          *fuzzServer
	res        *fuzzResponse
	payload    map[string]json.RawMessage // nil when the field is null or missing
	userErrors []struct {
		Code    string
		Message string
		Field   *string
	}
	before, after state
}

// mutate sends a mutation whose one variable is input, and checks the properties every
// mutation shares: the endpoint's answer is well formed and coded (post), the endpoint stays
// healthy, a refusal (a top-level error, or userErrors) leaves the state alone except where
// ok allows it, and the payload's object is null beside userErrors unless objectOK.
func (s *fuzzServer) mutate(t *testing.T, field, query string, input any) *mutation {
	t.Helper()
	m := &mutation{s: s, before: s.state(t)}
	m.res = s.post(t, query, map[string]any{"input": input})
	if raw := m.res.Data[field]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m.payload); err != nil {
			s.fail(t, "payload %s: %v", raw, err)
		}
		if ue := m.payload["userErrors"]; len(ue) > 0 {
			if err := json.Unmarshal(ue, &m.userErrors); err != nil {
				s.fail(t, "userErrors %s: %v", ue, err)
			}
		}
	}
	if len(m.res.Errors) == 0 && m.payload == nil {
		s.fail(t, "%s: no payload and no error: %.2000s", field, m.res.raw)
	}
	for _, ue := range m.userErrors {
		if ue.Code == "" || ue.Message == "" {
			s.fail(t, "%s: a user error without code or message: %.2000s", field, m.res.raw)
		}
	}
	s.settle(t)
	m.after = s.state(t)
	s.checkHealthy(t)
	return m
}

// refused reports whether the mutation was refused: a top-level error or userErrors.
func (m *mutation) refused() bool { return len(m.res.Errors) > 0 || len(m.userErrors) > 0 }

func (m *mutation) hasUserError(code string) bool {
	for _, ue := range m.userErrors {
		if ue.Code == code {
			return true
		}
	}
	return false
}

// object returns the payload's field key, or nil when it is null or missing.
func (m *mutation) object(key string) json.RawMessage {
	if raw := m.payload[key]; len(raw) > 0 && string(raw) != "null" {
		return raw
	}
	return nil
}

// unchanged fails the test if the state moved apart from the audit log.
func (m *mutation) unchanged(t *testing.T, what string) {
	t.Helper()
	b, a := m.before, m.after
	b.auditMax, a.auditMax = 0, 0
	if a != b {
		m.s.fail(t, "%s was refused (%v %s) but wrote:\nbefore %+v\nafter  %+v", what, m.res.codes(), m.userErrorsText(), m.before, m.after)
	}
}

// audited fails the test unless the mutation, having reached its resolver, left an audit row.
func (m *mutation) audited(t *testing.T, what string) {
	t.Helper()
	if m.payload != nil && m.after.auditMax <= m.before.auditMax {
		m.s.fail(t, "%s (%s) left no audit row", what, m.userErrorsText())
	}
}

func (m *mutation) userErrorsText() string {
	b, _ := json.Marshal(m.userErrors)
	return string(b)
}

// FuzzStartJob: startJob with any name and mode starts a run of a registered job or refuses
// with a code, writing nothing.
func FuzzStartJob(f *testing.F) {
	modes := []string{"RESUME", "RESTART", "", "resume", "PAUSE", "RESUME\u0000"}
	for i, name := range fuzzStrings {
		f.Add(name, modes[i%len(modes)], uint8(i%5*4)) // the mode sent, null, left out, of a wrong type; an unknown field
	}
	for _, mode := range modes {
		f.Add(fuzzJobLow, mode, uint8(0))
	}
	f.Add("fuzz-low", "RESUME", uint8(0xff))
	f.Add("fuzz-low", "RESTART", uint8(0x03))
	s := fuzzEndpoint(f)
	const q = `mutation($input: StartJobInput!) { startJob(input: $input) { run { id status mode } userErrors { code message field } } }`
	f.Fuzz(func(t *testing.T, name, mode string, shape uint8) {
		s.begin()
		in := map[string]any{}
		put(in, "name", name, uint64(shape))
		put(in, "mode", mode, uint64(shape>>2))
		if shape&0x10 != 0 {
			in["unknownField"] = name
		}
		m := s.mutate(t, "startJob", q, in)
		if m.refused() {
			m.unchanged(t, "startJob")
			if m.object("run") != nil {
				s.fail(t, "startJob refused, but with a run: %.2000s", m.res.raw)
			}
		} else {
			registered := name == fuzzJobLow || name == fuzzJobHigh
			modeOK := !sent(uint64(shape>>2)) || mode == "RESUME" || mode == "RESTART"
			if !sent(uint64(shape)) || !registered || !modeOK || shape&0x10 != 0 {
				s.fail(t, "startJob(%+v) started a run: %.2000s", in, m.res.raw)
			}
			if m.after.runs != m.before.runs+1 {
				s.fail(t, "startJob started a run, but there are %d runs, %d before", m.after.runs, m.before.runs)
			}
		}
		m.audited(t, "startJob")
	})
}

// FuzzUpdateJobSchedule: updateJobSchedule with any fields applies exactly them or refuses
// with a code and leaves the job's row (its version too) as it was.
func FuzzUpdateJobSchedule(f *testing.F) {
	leases := []int64{0, 1, 30, 86400, 86401, -1, 1 << 31, 1<<31 - 1, 1 << 53, -(1 << 53), 1<<63 - 1, -1 << 63}
	for i, cron := range fuzzCrons {
		f.Add("fuzz-low", cron, fuzzZones[i%len(fuzzZones)], i%2 == 0, leases[i%len(leases)], uint16(0))
	}
	for i, zone := range fuzzZones {
		f.Add("fuzz-high", "0 0 4 * * *", zone, true, int64(i), uint16(0))
	}
	for i, name := range fuzzStrings {
		f.Add(name, "* * * * *", "UTC", false, leases[i%len(leases)], uint16(i*37))
	}
	for i, lease := range leases {
		f.Add("fuzz-low", "", "", true, lease, uint16(0xa8|i<<10)) // cron, timezone and enabled left out
	}
	s := fuzzEndpoint(f)
	const q = `mutation($input: UpdateJobScheduleInput!) { updateJobSchedule(input: $input) {
		job { name cron timezone enabled leaseSeconds } scheduleRequest { id kind status } userErrors { code message field } } }`
	f.Fuzz(func(t *testing.T, name, cron, tz string, enabled bool, lease int64, shape uint16) {
		s.begin()
		in := map[string]any{}
		sh := uint64(shape)
		put(in, "name", name, sh)
		put(in, "cron", cron, sh>>2)
		put(in, "timezone", tz, sh>>4)
		put(in, "enabled", enabled, sh>>6)
		put(in, "leaseSeconds", lease, sh>>8)
		m := s.mutate(t, "updateJobSchedule", q, in)
		if m.hasUserError("APPROVAL_REQUIRED") {
			// A change that makes a HIGH-risk job fire: the job stays as it was, and the change
			// is recorded as one SCHEDULE request waiting for another token's approval.
			b, a := m.before, m.after
			if !strings.HasPrefix(a.replays, b.replays) || !strings.HasSuffix(a.replays, "|PENDING_APPROVAL") ||
				strings.Count(a.replays, ";") != strings.Count(b.replays, ";")+min(1, len(b.replays)) || m.object("scheduleRequest") == nil {
				s.fail(t, "updateJobSchedule asked for approval (%s) without recording one request:\nbefore %+v\nafter  %+v\n%.2000s", m.userErrorsText(), b, a, m.res.raw)
			}
			b.replays, a.replays, b.auditMax, a.auditMax = "", "", 0, 0
			if a != b {
				s.fail(t, "updateJobSchedule asked for approval (%s) but changed more:\nbefore %+v\nafter  %+v", m.userErrorsText(), m.before, m.after)
			}
			m.audited(t, "updateJobSchedule")
			return
		}
		if m.refused() {
			m.unchanged(t, "updateJobSchedule")
			if m.object("job") != nil {
				s.fail(t, "updateJobSchedule refused, but with a job: %.2000s", m.res.raw)
			}
			m.audited(t, "updateJobSchedule")
			return
		}
		m.audited(t, "updateJobSchedule")
		var job struct {
			Name         string
			Cron         *string
			Timezone     *string
			Enabled      bool
			LeaseSeconds *int64
		}
		if err := json.Unmarshal(m.object("job"), &job); err != nil {
			s.fail(t, "job: %v: %.2000s", err, m.res.raw)
		}
		if !sent(sh) || job.Name != name {
			s.fail(t, "updateJobSchedule(%+v) updated job %q", in, job.Name)
		}
		// What was accepted is what the job now says.
		if sent(sh>>2) && (job.Cron == nil || *job.Cron != cron) {
			s.fail(t, "updateJobSchedule accepted cron %q; the job says %v", cron, deref(job.Cron))
		}
		if sent(sh>>4) && (job.Timezone == nil || *job.Timezone != tz) {
			s.fail(t, "updateJobSchedule accepted timezone %q; the job says %v", tz, deref(job.Timezone))
		}
		if sent(sh>>6) && job.Enabled != enabled {
			s.fail(t, "updateJobSchedule accepted enabled %v; the job says %v", enabled, job.Enabled)
		}
		if sent(sh >> 8) {
			// The schema promises 1 to 86400 seconds, 0 clearing the override.
			if lease < 0 || lease > 86400 {
				s.fail(t, "updateJobSchedule accepted leaseSeconds %d (1 to 86400, or 0); the job now says %s", lease, intText(job.LeaseSeconds))
			}
			if (lease == 0) != (job.LeaseSeconds == nil) || (lease != 0 && *job.LeaseSeconds != lease) {
				s.fail(t, "updateJobSchedule accepted leaseSeconds %d; the job says %s", lease, intText(job.LeaseSeconds))
			}
		}
		// A cron the API accepted is one the scheduler can use.
		if job.Cron != nil && *job.Cron != "" && job.Timezone != nil {
			if _, err := runner.ParseSchedule(*job.Cron, *job.Timezone); err != nil {
				s.fail(t, "updateJobSchedule accepted cron %q in %q, which does not parse: %v", *job.Cron, *job.Timezone, err)
			}
		}
		// Put the job back, so every input meets the same schedule (and no cron fires).
		if _, err := s.pool.Exec(context.Background(), `UPDATE job_settings SET cron = '', timezone = 'UTC', enabled = true,
			lease_seconds = NULL WHERE name = $1`, name); err != nil {
			t.Fatal(err)
		}
	})
}

func intText(n *int64) string {
	if n == nil {
		return "null"
	}
	return strconv.FormatInt(*n, 10)
}

// FuzzRequestReplay: requestReplay with any run id, scope, reason and compensation reference
// records a request (started, pending approval, or BLOCKED with its reasons) or refuses with a
// code and records nothing.
func FuzzRequestReplay(f *testing.F) {
	scopes := []string{"TRANSIENT", "FAILED", "FULL", "", "transient", "ALL"}
	for i, key := range []string{"1", "2", "3", "4", "0", "-1", "+1", "01", "9223372036854775807", "9223372036854775808", "x", ""} {
		for j, scope := range scopes {
			if (i+j)%2 == 0 {
				f.Add(key, scope, fuzzStrings[(i+j)%len(fuzzStrings)], fuzzStrings[(i*j)%len(fuzzStrings)], uint16(0x100))
			}
		}
	}
	for _, id := range []string{"", "UnVuOjE=", "UnVuOjE", "TGVkZ2VyRW50cnk6MQ==", "not-an-id"} {
		f.Add(id, "TRANSIENT", "why", "", uint16(0))
	}
	f.Add("1", "TRANSIENT", "because", "", uint16(0x1ff))
	s := fuzzEndpoint(f)
	const q = `mutation($input: RequestReplayInput!) { requestReplay(input: $input) {
		replayRequest { id status scope reason compensationRef } userErrors { code message field } } }`
	f.Fuzz(func(t *testing.T, runKey, scope, reason, comp string, shape uint16) {
		s.begin()
		sh := uint64(shape)
		in := map[string]any{}
		put(in, "runId", asGlobalID(runKey, typeRun, sh&0x100 != 0), sh)
		put(in, "scope", scope, sh>>2)
		put(in, "reason", reason, sh>>4)
		put(in, "compensationRef", comp, sh>>6)
		m := s.mutate(t, "requestReplay", q, in)
		m.audited(t, "requestReplay")
		req := m.object("replayRequest")
		if m.refused() {
			if m.hasUserError("REPLAY_BLOCKED") {
				// A request its preflight blocks is recorded, BLOCKED, and comes back.
				var r struct{ Status string }
				if req == nil || json.Unmarshal(req, &r) != nil || r.Status != "BLOCKED" {
					s.fail(t, "REPLAY_BLOCKED without a BLOCKED request: %.2000s", m.res.raw)
				}
				if m.after.runs != m.before.runs || m.after.jobs != m.before.jobs || m.after.ledger != m.before.ledger {
					s.fail(t, "a BLOCKED replay wrote more than its request:\nbefore %+v\nafter  %+v", m.before, m.after)
				}
				return
			}
			m.unchanged(t, "requestReplay")
			if req != nil {
				s.fail(t, "requestReplay refused, but with a request: %.2000s", m.res.raw)
			}
			return
		}
		var r struct {
			Status, Scope, Reason string
			CompensationRef       *string
		}
		if err := json.Unmarshal(req, &r); err != nil {
			s.fail(t, "replayRequest: %v: %.2000s", err, m.res.raw)
		}
		if strings.TrimSpace(reason) == "" || len(strings.TrimSpace(reason)) > 2000 || r.Reason != strings.TrimSpace(reason) {
			s.fail(t, "requestReplay accepted reason %q and recorded %q", reason, r.Reason)
		}
		if m.after.replays == m.before.replays {
			s.fail(t, "requestReplay answered request %+v but recorded none", r)
		}
	})
}

// FuzzResolveAmbiguous: resolveAmbiguous with any entry id, resolution, evidence and note
// resolves an AMBIGUOUS_EFFECT entry as asked or refuses with a code, leaving the ledger as
// it was.
func FuzzResolveAmbiguous(f *testing.F) {
	resolutions := []string{"CONFIRMED", "NOT_APPLIED", "", "confirmed", "AMBIGUOUS_EFFECT"}
	for i, key := range []string{"1", "2", "3", "4", "5", "0", "-1", "01", "9223372036854775807", "x", ""} {
		for j, res := range resolutions {
			f.Add(key, res, fuzzStrings[(i+j)%len(fuzzStrings)], fuzzStrings[(i+2*j)%len(fuzzStrings)], uint16(0x100))
		}
	}
	f.Add("1", "CONFIRMED", "receipt-42", "checked with the provider", uint16(0x100))
	f.Add("1", "NOT_APPLIED", "", "provider says no", uint16(0x1b0))
	f.Add("3", "CONFIRMED", " ", "x", uint16(0x100))
	s := fuzzEndpoint(f)
	const q = `mutation($input: ResolveAmbiguousInput!) { resolveAmbiguous(input: $input) {
		ledgerEntry { id state evidenceRef } userErrors { code message field } } }`
	f.Fuzz(func(t *testing.T, entryKey, resolution, evidence, note string, shape uint16) {
		s.begin()
		sh := uint64(shape)
		in := map[string]any{}
		put(in, "entryId", asGlobalID(entryKey, typeLedgerEntry, sh&0x100 != 0), sh)
		put(in, "resolution", resolution, sh>>2)
		put(in, "evidenceRef", evidence, sh>>4)
		put(in, "note", note, sh>>6)
		m := s.mutate(t, "resolveAmbiguous", q, in)
		m.audited(t, "resolveAmbiguous")
		if m.refused() {
			m.unchanged(t, "resolveAmbiguous")
			if m.object("ledgerEntry") != nil {
				s.fail(t, "resolveAmbiguous refused, but with an entry: %.2000s", m.res.raw)
			}
			return
		}
		var e struct {
			ID, State   string
			EvidenceRef *string
		}
		if err := json.Unmarshal(m.object("ledgerEntry"), &e); err != nil {
			s.fail(t, "ledgerEntry: %v: %.2000s", err, m.res.raw)
		}
		n, _ := decodeIntID(e.ID, typeLedgerEntry)
		if e.State != resolution || (n != 1 && n != 3) {
			s.fail(t, "resolveAmbiguous(%+v) left entry %d %s (only entries 1 and 3 are ambiguous)", in, n, e.State)
		}
		if !sent(sh>>6) || strings.TrimSpace(note) == "" {
			s.fail(t, "resolveAmbiguous accepted note %q (a note is required)", note)
		}
		if resolution == "CONFIRMED" && (!sent(sh>>4) || strings.TrimSpace(evidence) == "") {
			s.fail(t, "resolveAmbiguous confirmed without evidence (%q)", evidence)
		}
		// Put the entry back, so every input meets the same ledger.
		if _, err := s.pool.Exec(context.Background(), `UPDATE job_ledger SET state = 'AMBIGUOUS_EFFECT', evidence_ref = NULL,
			last_error = 'timeout' WHERE id = $1`, n); err != nil {
			t.Fatal(err)
		}
	})
}
