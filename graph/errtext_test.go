package graph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/runner"
)

// syncBuffer is a log sink that tests read while the instance writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// failingJob processes one item and then fails the way fail says.
type failingJob struct {
	name string
	fail func(ctx context.Context, run *runner.Run) error
}

func (j *failingJob) Info() runner.JobInfo {
	return runner.JobInfo{Name: j.name, Description: "test job", Version: "1", Retry: runner.RetryPolicy{MaxAttempts: 1}}
}

func (j *failingJob) Run(ctx context.Context, run *runner.Run) error { return j.fail(ctx, run) }

var refPattern = regexp.MustCompile(`^internal error \(ref ([0-9a-f]{8})\)$`)

// A run whose result write fails in the database (its job's Attempt.Tx runs bad SQL) shows an
// internal error with a reference, never the database's text; the log holds that text under
// the reference. A job's own classified error still shows its message, and so does an item's.
func TestRunMessagesHideInternalErrors(t *testing.T) {
	b := setup(t)
	logs := &syncBuffer{}
	b.log = slog.New(slog.NewTextHandler(logs, nil))
	txFails := &failingJob{name: "tx-fails", fail: func(ctx context.Context, run *runner.Run) error {
		return run.Process(ctx, runner.Item{Target: "t1", Checkpoint: "1"}, func(ctx context.Context, a *runner.Attempt) error {
			a.Tx(func(ctx context.Context, tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO no_such_table_of_the_job VALUES (1)`)
				return err
			})
			return nil
		})
	}}
	rejected := &failingJob{name: "rejected", fail: func(ctx context.Context, run *runner.Run) error {
		err := run.Process(ctx, runner.Item{Target: "t1", Checkpoint: "1"}, func(ctx context.Context, a *runner.Attempt) error {
			return runner.Rejected(errors.New("card 4111 declined by the provider"))
		})
		if err != nil {
			return err
		}
		return runner.Rejected(errors.New("the provider refused the batch"))
	}}
	i := b.instance(instanceOpts{jobs: []runner.Job{txFails, rejected}})
	op := b.token(model.RoleOperator)

	type runData struct {
		Run struct {
			Status  string
			Message string
			Errors  struct{ Nodes []struct{ Message string } }
		}
	}
	read := func(id string) runData {
		var d runData
		i.post(t, op, `query($id: ID!) { run(id: $id) { status message errors { nodes { message } } } }`,
			map[string]any{"id": id}).decode(t, &d)
		return d
	}

	id := i.startJob(t, op, "tx-fails")
	i.waitRunStatus(t, op, id, "FAILED")
	d := read(id)
	m := refPattern.FindStringSubmatch(d.Run.Message)
	if m == nil {
		t.Fatalf("Run.message of a failed database write = %q; want %q", d.Run.Message, "internal error (ref …)")
	}
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "ref="+m[1]) {
			line = l
		}
	}
	if !strings.Contains(line, "no_such_table_of_the_job") {
		t.Fatalf("no log line holds the database's text under ref %s; log:\n%s", m[1], logs.String())
	}

	id = i.startJob(t, op, "rejected")
	i.waitRunStatus(t, op, id, "FAILED")
	d = read(id)
	if d.Run.Message != "the provider refused the batch" {
		t.Fatalf("Run.message of a classified job error = %q", d.Run.Message)
	}
	if len(d.Run.Errors.Nodes) != 1 || d.Run.Errors.Nodes[0].Message != "card 4111 declined by the provider" {
		t.Fatalf("the item's error rows: %+v", d.Run.Errors.Nodes)
	}
	var last string
	if err := b.Pool.QueryRow(context.Background(), `SELECT last_error FROM job_ledger WHERE job_name = 'rejected'`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	if last != "card 4111 declined by the provider" {
		t.Fatalf("last_error = %q", last)
	}
}

// An item whose function returns a database error (of the job's own queries) keeps the text
// out of the run's error rows and the ledger; a panicking item likewise.
func TestItemErrorsHideInternalErrors(t *testing.T) {
	b := setup(t)
	logs := &syncBuffer{}
	b.log = slog.New(slog.NewTextHandler(logs, nil))
	var pool = b.Pool
	job := &failingJob{name: "item-db", fail: func(ctx context.Context, run *runner.Run) error {
		err := run.Process(ctx, runner.Item{Target: "db", Checkpoint: "1"}, func(ctx context.Context, a *runner.Attempt) error {
			_, err := pool.Exec(ctx, `SELECT * FROM no_such_table_of_the_item`)
			return fmt.Errorf("load the payee: %w", err)
		})
		if err != nil {
			return err
		}
		return run.Process(ctx, runner.Item{Target: "panics", Checkpoint: "2"}, func(ctx context.Context, a *runner.Attempt) error {
			var m map[string]int
			m["x"] = 1 // assignment to a nil map: a panic with runtime detail
			return nil
		})
	}}
	i := b.instance(instanceOpts{jobs: []runner.Job{job}})
	op := b.token(model.RoleOperator)
	id := i.startJob(t, op, "item-db")
	i.waitRunStatus(t, op, id, "SUCCEEDED")
	var d struct {
		Run struct {
			Errors struct {
				Nodes []struct{ ItemKey, Message string }
			}
		}
	}
	i.post(t, op, `query($id: ID!) { run(id: $id) { errors { nodes { itemKey message } } } }`, map[string]any{"id": id}).decode(t, &d)
	if len(d.Run.Errors.Nodes) != 2 {
		t.Fatalf("error rows: %+v", d.Run.Errors.Nodes)
	}
	for _, e := range d.Run.Errors.Nodes {
		if !refPattern.MatchString(e.Message) {
			t.Errorf("error row of %s = %q; want an internal error with a ref", e.ItemKey, e.Message)
		}
	}
	rows, err := b.Pool.Query(context.Background(), `SELECT last_error FROM job_ledger WHERE job_name = 'item-db'`)
	if err != nil {
		t.Fatal(err)
	}
	lasts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lasts {
		if !refPattern.MatchString(l) {
			t.Errorf("last_error = %q; want an internal error with a ref", l)
		}
	}
	if !strings.Contains(logs.String(), "no_such_table_of_the_item") || !strings.Contains(logs.String(), "nil map") {
		t.Fatalf("the log lacks the internal texts:\n%s", logs.String())
	}
}
