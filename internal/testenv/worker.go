package testenv

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// The environment a worker process of a test reads: that it is one, and the database URL and
// Redis key prefix of the test that started it.
const (
	workerVar   = "BATON_TEST_CHILD"
	workerDBVar = "BATON_TEST_DB"
	workerEnv   = "BATON_TEST_ENV"
)

// WorkerMain is a TestMain for a test binary that doubles as a worker process: started by
// StartWorker, it runs worker and exits with its code; otherwise it runs the tests.
func WorkerMain(m *testing.M, worker func() int) {
	if os.Getenv(workerVar) == "1" {
		os.Exit(worker())
	}
	os.Exit(m.Run())
}

// WorkerDeps returns, in a worker process, a pool on the starting test's database, a client of
// the Redis server tests use, and the test's Redis key prefix.
func WorkerDeps() (*pgxpool.Pool, *redis.Client, string, error) {
	pool, err := pgxpool.New(context.Background(), os.Getenv(workerDBVar))
	if err != nil {
		return nil, nil, "", err
	}
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		pool.Close()
		return nil, nil, "", err
	}
	return pool, redis.NewClient(opt), os.Getenv(workerEnv), nil
}

// Worker is the test binary running as a worker process, and the run it said it started.
type Worker struct {
	Cmd    *exec.Cmd
	Run    int64
	stderr *strings.Builder
}

// StartWorker starts the test binary as a worker process on the database at dbURL and the
// Redis prefix env, with the variables extra ("NAME=value") added, and waits for the first line
// of its output, "run <id>". It fails t (name begins the message) when the worker says
// anything else. The worker is killed when the test ends, if it is still running.
func StartWorker(t testing.TB, name, dbURL, env string, extra ...string) *Worker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerVar+"=1", workerDBVar+"="+dbURL, workerEnv+"="+env)
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{Cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		w.Kill()
		t.Fatalf("%s said nothing: %v %s", name, err, w.Stderr())
	}
	if _, err := fmt.Sscanf(line, "run %d", &w.Run); err != nil {
		t.Fatalf("%s said %q", name, line)
	}
	return w
}

// Stderr returns what the worker has written to its standard error.
func (w *Worker) Stderr() string { return w.stderr.String() }

// Kill kills the worker and waits for it to exit.
func (w *Worker) Kill() {
	_ = w.Cmd.Process.Kill()
	_ = w.Cmd.Wait()
}
