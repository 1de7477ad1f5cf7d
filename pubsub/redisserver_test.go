package pubsub_test

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/testenv"
)

// redisServer is a private redis-server for tests that break connections. Never point such
// tests at the shared server.
type redisServer struct {
	t      *testing.T
	bin    string
	dir    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
}

// startRedisServer starts a redis-server on a spare port in a temporary directory, without
// persistence, and kills it when the test ends.
func startRedisServer(t *testing.T) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not in PATH")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	s := &redisServer{t: t, bin: bin, dir: t.TempDir(), port: port}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// Addr returns the server's host:port.
func (s *redisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Client returns a client of the server, closed when the test ends.
func (s *redisServer) Client(opts *redis.Options) *redis.Client {
	if opts == nil {
		opts = &redis.Options{}
	}
	opts.Addr = s.Addr()
	c := redis.NewClient(opts)
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Restart kills the server (as a crash would: no goodbye to clients) and starts it again on
// the same port.
func (s *redisServer) Restart() {
	s.t.Helper()
	s.stop()
	s.start()
}

func (s *redisServer) start() {
	s.t.Helper()
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log"))
	cmd.Dir = s.dir
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited

	probe := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer probe.Close()
	testenv.Eventually(s.t, 10*time.Second, "redis-server on "+s.Addr()+" to answer", func() bool {
		select {
		case <-exited:
			s.t.Fatalf("redis-server on %s exited; see %s", s.Addr(), filepath.Join(s.dir, "redis.log"))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return probe.Ping(ctx).Err() == nil
	})
}

func (s *redisServer) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}
