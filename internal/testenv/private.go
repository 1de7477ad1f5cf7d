//go:build unix

package testenv

// Private servers: a PostgreSQL or Redis of a test's own, on a spare port, that the test may
// stop, crash and restart without disturbing the shared servers every other test uses.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/migrations"
)

const (
	// startTimeout bounds how long a private server may take to accept connections. It is
	// generous because CI machines have 2 cores and many tests start servers at once.
	startTimeout = 90 * time.Second
	// stopTimeout bounds a graceful shutdown; past it the server is killed.
	stopTimeout = time.Minute
	// Spare ports are drawn below Linux's default ephemeral range (32768-60999), so an outgoing
	// connection cannot take a stopped server's port before the test restarts it.
	minPort, maxPort = 15000, 32000
)

// PostgresServer is a private PostgreSQL cluster owned by one test.
type PostgresServer struct {
	Port      int    // TCP port on 127.0.0.1
	Dir       string // temporary directory holding the data directory, the socket and the logs
	DataDir   string // the cluster's data directory (Dir/data)
	SocketDir string // unix socket directory (Dir/sock, or a shorter path if that is too long)
	LogFile   string // the server's stdout and stderr, appended across restarts

	srv *managedServer
}

// PrivatePostgres starts a PostgreSQL cluster of the test's own in t.TempDir(), made by initdb
// with superuser postgres and trust authentication (initdb runs once per machine and server
// version; each test gets a copy, see postgresTemplate), the newest server found in
// /usr/lib/postgresql/*/bin (else on PATH), listening on a spare port on 127.0.0.1. It returns
// once the server accepts connections and stops it when the test ends.
//
// The server runs with fsync=off: a test may crash it with Kill and committed data survives,
// because only an operating-system crash loses what fsync would have flushed. When the test
// runs as root the server runs as the postgres user (PostgreSQL refuses to run as root).
func PrivatePostgres(t testing.TB) *PostgresServer {
	t.Helper()
	return privatePostgres(t, func(*PostgresServer) []string { return nil })
}

// privatePostgres starts a private PostgreSQL as PrivatePostgres does. prepare runs once the data directory is in place, before the directory is handed to the server
// user; it may put files in s.Dir and returns more arguments for the postgres command.
func privatePostgres(t testing.TB, prepare func(s *PostgresServer) []string) *PostgresServer {
	t.Helper()
	bin, err := postgresBinDir()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	cred := mustServerCredential(t)
	dir, port := serverPlace(t)
	s := &PostgresServer{
		Port:    port,
		Dir:     dir,
		DataDir: filepath.Join(dir, "data"),
		LogFile: filepath.Join(dir, "postgres.log"),
	}
	s.SocketDir = socketDir(t, dir)

	initLog := filepath.Join(dir, "initdb.log")
	template, err := postgresTemplate(bin, cred, initLog)
	if err != nil {
		t.Fatalf("testenv: initdb: %v\n%s", err, logTail(initLog))
	}
	if err := copyTree(template, s.DataDir); err != nil {
		t.Fatalf("testenv: copy the initdb template: %v", err)
	}

	extra := prepare(s)
	if cred != nil {
		if err := handOver(cred, dir, s.SocketDir); err != nil {
			t.Fatalf("testenv: prepare %s for the server user: %v", dir, err)
		}
	}

	s.srv = &managedServer{
		name:    "postgres",
		logPath: s.LogFile,
		dir:     dir,
		cred:    cred,
		command: func() *exec.Cmd {
			return exec.Command(filepath.Join(bin, "postgres"), append([]string{
				"-D", s.DataDir,
				"-p", strconv.Itoa(s.Port),
				"-k", s.SocketDir,
				"-c", "listen_addresses=127.0.0.1",
				// Only fsync is relaxed: synchronous_commit=off would let Kill lose
				// acknowledged commits, which fault-injection tests must be able to trust.
				"-c", "fsync=off",
				"-c", "shared_buffers=32MB",
			}, extra...)...)
		},
		ping: func(ctx context.Context) error {
			conn, err := pgx.Connect(ctx, s.URL("postgres"))
			if err != nil {
				return err
			}
			return conn.Close(ctx)
		},
		stopSignal: syscall.SIGINT, // what `pg_ctl stop -m fast` sends: abort sessions, checkpoint, exit
		kill:       killPostmaster,
		retryable:  []string{"is still in use"}, // shared memory of a killed cluster not yet released
		portInUse:  "could not bind",
		movePort:   func(p int) { s.Port = p },
	}
	s.srv.startFor(t, func() int { return s.Port })
	return s
}

// URL returns a URL for database db on the server as superuser postgres.
func (s *PostgresServer) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// Start starts the server again on the same port and data directory, after Stop or Kill, and
// waits until it accepts connections (after a Kill, once crash recovery is done).
func (s *PostgresServer) Start(t testing.TB) {
	t.Helper()
	if err := s.srv.start(false); err != nil {
		t.Fatalf("testenv: restart private postgres on port %d: %v\n%s", s.Port, err, logTail(s.LogFile))
	}
}

// Stop shuts the server down the way `pg_ctl stop -m fast` does: open sessions are aborted, a
// shutdown checkpoint is written. It returns once the server has exited. Stopping a stopped
// server does nothing.
func (s *PostgresServer) Stop(t testing.TB) {
	t.Helper()
	if err := s.srv.stop(); err != nil {
		t.Fatalf("testenv: stop private postgres on port %d: %v\n%s", s.Port, err, logTail(s.LogFile))
	}
}

// Kill crashes the server: SIGKILL to the postmaster and to every backend it had forked, so
// no session outlives the call and the next Start runs crash recovery. Killing a stopped server
// does nothing.
func (s *PostgresServer) Kill(t testing.TB) {
	t.Helper()
	s.srv.killNow()
}

// RedisServer is a private Redis owned by one test. It keeps nothing on disk, so a restart
// starts empty.
type RedisServer struct {
	Port    int    // TCP port on 127.0.0.1
	Dir     string // temporary working directory
	LogFile string // the server's log, appended across restarts

	srv *managedServer
}

// PrivateRedis starts a redis-server of the test's own (from PATH) on a spare port on
// 127.0.0.1, with persistence off, and stops it when the test ends.
func PrivateRedis(t testing.TB) *RedisServer {
	t.Helper()
	return privateRedis(t, "redis", nil)
}

// privateRedis starts a private redis-server as PrivateRedis does, with the arguments extra
// returns added to its command line (extra is called at every start, after the port is
// known).
func privateRedis(t testing.TB, name string, extra func(s *RedisServer) []string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("testenv: redis-server not found on PATH (apt-get install redis-server): %v", err)
	}
	dir, port := serverPlace(t)
	s := &RedisServer{Port: port, Dir: dir, LogFile: filepath.Join(dir, "redis.log")}
	s.srv = &managedServer{
		name:    name,
		logPath: s.LogFile,
		dir:     dir,
		command: func() *exec.Cmd {
			var head []string
			if extra != nil {
				head = extra(s)
			}
			return exec.Command(bin, append(head,
				"--port", strconv.Itoa(s.Port),
				"--bind", "127.0.0.1",
				"--save", "",
				"--appendonly", "no",
				"--dir", dir,
				"--daemonize", "no",
			)...)
		},
		ping: func(ctx context.Context) error {
			c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
			defer c.Close()
			return c.Ping(ctx).Err()
		},
		stopSignal: syscall.SIGTERM, // Redis shuts down cleanly on SIGTERM
		kill:       func(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) },
		portInUse:  "Address already in use",
		movePort:   func(p int) { s.Port = p },
	}
	s.srv.startFor(t, func() int { return s.Port })
	return s
}

func (s *RedisServer) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// URL returns the server's URL, database 0.
func (s *RedisServer) URL() string { return "redis://" + s.addr() + "/0" }

// Start starts the server again on the same port, after Stop or Kill, and waits until it
// answers PING. It starts empty.
func (s *RedisServer) Start(t testing.TB) {
	t.Helper()
	if err := s.srv.start(false); err != nil {
		t.Fatalf("testenv: restart private redis on port %d: %v\n%s", s.Port, err, logTail(s.LogFile))
	}
}

// Stop shuts the server down (SIGTERM) and waits until it has exited. Stopping a stopped
// server does nothing.
func (s *RedisServer) Stop(t testing.TB) {
	t.Helper()
	if err := s.srv.stop(); err != nil {
		t.Fatalf("testenv: stop private redis on port %d: %v\n%s", s.Port, err, logTail(s.LogFile))
	}
}

// Kill crashes the server with SIGKILL. Killing a stopped server does nothing.
func (s *RedisServer) Kill(t testing.TB) {
	t.Helper()
	s.srv.killNow()
}

// FlushAll deletes every key in every database of the server.
func (s *RedisServer) FlushAll(t testing.TB) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.addr()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatalf("testenv: FLUSHALL on private redis port %d: %v", s.Port, err)
	}
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on, below the ephemeral range
// and not handed out before by this process.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return p
}

var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 200 {
		p := minPort + rand.IntN(maxPort-minPort)
		if handedOut.ports[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		_ = l.Close()
		handedOut.ports[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free TCP port found in %d-%d on 127.0.0.1", minPort, maxPort)
}

// managedServer runs one server process at a time: it starts it, waits until it answers,
// stops it gracefully or kills it.
type managedServer struct {
	name       string
	logPath    string
	dir        string              // working directory of the process
	cred       *syscall.Credential // nil: run as the test process' user
	command    func() *exec.Cmd
	ping       func(context.Context) error
	stopSignal syscall.Signal
	kill       func(pid int)
	retryable  []string  // log text of a start failure that goes away by itself
	portInUse  string    // log text saying the port is taken
	movePort   func(int) // switch to another port (first start only, so the port stays stable)

	mu   sync.Mutex
	proc *serverProcess
}

// startFor starts the server for t's length: t fails if it does not start, and the server is
// stopped when t ends (a failed stop fails t). port reads the port it ended up on.
func (m *managedServer) startFor(t testing.TB, port func() int) {
	t.Helper()
	if err := m.start(true); err != nil {
		t.Fatalf("testenv: start private %s on port %d: %v\n%s", m.name, port(), err, logTail(m.logPath))
	}
	t.Cleanup(func() {
		if err := m.stop(); err != nil {
			t.Errorf("testenv: stop private %s on port %d: %v\n%s", m.name, port(), err, logTail(m.logPath))
		}
	})
}

var errExited = errors.New("exited before accepting connections")

func (m *managedServer) start(first bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil && !m.proc.exited() {
		return errors.New("already running")
	}
	deadline := time.Now().Add(startTimeout)
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		offset := fileSize(m.logPath)
		p, err := spawn(m.command(), m.cred, m.dir, m.logPath)
		if err != nil {
			return err
		}
		err = waitReady(deadline, p, m.ping)
		if err == nil {
			m.proc = p
			return nil
		}
		p.terminate(m.kill)
		if !errors.Is(err, errExited) || attempt >= 10 || time.Now().After(deadline) {
			return err
		}
		out := readFrom(m.logPath, offset)
		switch {
		case first && m.portInUse != "" && strings.Contains(out, m.portInUse):
			// Another process took the port between freePort and bind; pick a new one.
			port, perr := freePort()
			if perr != nil {
				return errors.Join(err, perr)
			}
			m.movePort(port)
		case containsAny(out, m.retryable):
			time.Sleep(backoff)
			backoff *= 2
		default:
			return err
		}
	}
}

func (m *managedServer) stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.proc
	m.proc = nil
	if p == nil || p.exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(m.stopSignal)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
		p.terminate(m.kill)
		return fmt.Errorf("%s did not shut down within %s; killed it", m.name, stopTimeout)
	}
}

func (m *managedServer) killNow() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		m.proc.terminate(m.kill)
		m.proc = nil
	}
}

// serverProcess is one run of a server.
type serverProcess struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // how it exited; read only after done
}

func (p *serverProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// terminate kills the process (if still running) and waits until it has been reaped.
func (p *serverProcess) terminate(kill func(pid int)) {
	if !p.exited() {
		kill(p.cmd.Process.Pid)
	}
	<-p.done
}

func spawn(cmd *exec.Cmd, cred *syscall.Credential, dir, logPath string) (*serverProcess, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	prepare(cmd, cred, dir, logf)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p := &serverProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// runLogged runs a short-lived command to completion with its output in logPath.
func runLogged(cmd *exec.Cmd, cred *syscall.Credential, dir, logPath string) error {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	prepare(cmd, cred, dir, logf)
	return cmd.Run()
}

func prepare(cmd *exec.Cmd, cred *syscall.Credential, dir string, logf *os.File) {
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = serverEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	setParentDeathSignal(cmd.SysProcAttr)
}

// setParentDeathSignal asks the kernel to SIGKILL a server when the test binary dies without
// running its cleanups (a -timeout panic, say), so no orphan outlives the test. The field exists
// only on Linux; reflection keeps this file building on other Unix systems.
func setParentDeathSignal(a *syscall.SysProcAttr) {
	if f := reflect.ValueOf(a).Elem().FieldByName("Pdeathsig"); f.IsValid() && f.CanSet() {
		f.Set(reflect.ValueOf(syscall.SIGKILL))
	}
}

// serverEnv is the test's environment without libpq variables (PGDATA, PGPORT... would
// override the command line) and with the C locale, so servers behave the same everywhere.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}

func waitReady(deadline time.Time, p *serverProcess, ping func(context.Context) error) error {
	wait := 10 * time.Millisecond
	for {
		if p.exited() {
			return fmt.Errorf("%w (%v)", errExited, p.err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := ping(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting connections after %s: %v", startTimeout, err)
		}
		select {
		case <-p.done:
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// killPostmaster crashes a PostgreSQL cluster. Backends are their own process-group leaders,
// so a group kill would miss them: the postmaster is frozen (so it forks nothing new), its
// children are listed from /proc, then all of them get SIGKILL.
func killPostmaster(pid int) {
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	children := childPIDs(pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
}

// childPIDs lists the processes whose parent is pid (Linux /proc; none elsewhere).
func childPIDs(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// postgresBinDir finds the newest PostgreSQL server binaries.
var postgresBinDir = sync.OnceValues(func() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	best, bestVersion := "", -1.0
	for _, m := range matches {
		bin := filepath.Dir(m)
		v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(bin)), 64)
		if err == nil && v > bestVersion && isFile(filepath.Join(bin, "initdb")) {
			best, bestVersion = bin, v
		}
	}
	if best != "" {
		return best, nil
	}
	if p, err := exec.LookPath("postgres"); err == nil && isFile(filepath.Join(filepath.Dir(p), "initdb")) {
		return filepath.Dir(p), nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		bin := strings.TrimSpace(string(out))
		if isFile(filepath.Join(bin, "postgres")) && isFile(filepath.Join(bin, "initdb")) {
			return bin, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (postgres, initdb) in /usr/lib/postgresql/*/bin or on PATH; install them (apt-get install postgresql)")
})

// initdbArgs are the initdb options of every private cluster (the data directory comes first).
var initdbArgs = []string{"-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"}

var templateMu sync.Mutex

// postgresTemplate returns a data directory fresh from initdb, to be copied for each private
// cluster: a copy takes a fraction of initdb's seconds, which add up over many tests on a
// 2-core machine. The template lives in os.TempDir(), keyed by the server binary (path and
// modification time, so an upgrade makes a new one) and by the user it belongs to, and is
// shared by every test process. It is built aside and renamed into place, so a process never
// sees half of one; processes racing to build it each build one and all but the first discard
// theirs. initdb's output goes to logPath.
func postgresTemplate(bin string, cred *syscall.Credential, logPath string) (string, error) {
	templateMu.Lock()
	defer templateMu.Unlock()
	fi, err := os.Stat(filepath.Join(bin, "postgres"))
	if err != nil {
		return "", err
	}
	owner := uint32(os.Geteuid())
	if cred != nil {
		owner = cred.Uid
	}
	key := fmt.Sprintf("%s|%d|%s|%d", bin, fi.ModTime().UnixNano(), strings.Join(initdbArgs, " "), owner)
	sum := sha256.Sum256([]byte(key))
	final := filepath.Join(os.TempDir(), fmt.Sprintf("baton-testenv-pg-%x", sum[:8]))
	if templateUsable(final, owner) {
		return filepath.Join(final, "data"), nil
	}

	build, err := os.MkdirTemp(os.TempDir(), "baton-testenv-pg-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(build) // a no-op once renamed
	if cred != nil {
		if err := handOver(cred, build); err != nil {
			return "", err
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), append([]string{"-D", filepath.Join(build, "data")}, initdbArgs...)...)
	if err := runLogged(initdb, cred, build, logPath); err != nil {
		return "", err
	}
	if err := os.Rename(build, final); err != nil && !templateUsable(final, owner) {
		return "", err
	}
	return filepath.Join(final, "data"), nil
}

// templateUsable reports whether dir is a complete template owned by uid (and not, say, a
// directory another user planted under that name).
func templateUsable(dir string, uid uint32) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != uid {
		return false
	}
	return isFile(filepath.Join(dir, "data", "PG_VERSION"))
}

// copyTree copies the directory src to dst (which must not exist), keeping permission bits.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, info.Mode().Perm())
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			return CopyFile(path, target, info.Mode().Perm())
		}
	})
}

// serverCredential says whom private servers run as: nil (the test's own user) unless the test
// runs as root, which PostgreSQL refuses; then the postgres user, or nobody. This is what
// `runuser -u postgres --` would do, without needing runuser, su or PAM.
// serverPlace gives a private server a directory of the test's and a free port.
func serverPlace(t testing.TB) (dir string, port int) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return t.TempDir(), port
}

// mustServerCredential is serverCredential, failing t when there is none.
func mustServerCredential(t testing.TB) *syscall.Credential {
	t.Helper()
	cred, err := serverCredential()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return cred
}

func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
	}
	return nil, errors.New("running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as")
}

// socketDir returns dir/sock, or, when that path would exceed the ~107-byte limit of a unix
// socket path, a short directory of its own removed when the test ends.
func socketDir(t testing.TB, dir string) string {
	t.Helper()
	sock := filepath.Join(dir, "sock")
	if len(sock)+len("/.s.PGSQL.65535.lock") >= 100 {
		short, err := os.MkdirTemp("", "pgsock")
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(short) })
		return short
	}
	if err := os.Mkdir(sock, 0o700); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return sock
}

// handOver gives the server user the directories it writes to, and makes sure it can reach
// them: the testing package creates temporary directories mode 0700, owned by root.
func handOver(cred *syscall.Credential, dirs ...string) error {
	tmp := filepath.Clean(os.TempDir())
	for _, dir := range dirs {
		err := filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, int(cred.Uid), int(cred.Gid))
		})
		if err != nil {
			return err
		}
		for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			if err != nil {
				return err
			}
			if !reachable(fi, cred) {
				if !strings.HasPrefix(d, tmp+string(filepath.Separator)) {
					return fmt.Errorf("user %d cannot enter %s; set TMPDIR to a directory it can reach", cred.Uid, d)
				}
				// A directory the testing package made for this test: let others traverse it.
				if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
					return err
				}
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return nil
}

func reachable(fi os.FileInfo, cred *syscall.Credential) bool {
	perm := fi.Mode().Perm()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return perm&0o001 != 0
	}
	switch {
	case st.Uid == cred.Uid:
		return perm&0o100 != 0
	case st.Gid == cred.Gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func readFrom(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return ""
	}
	return string(b[offset:])
}

// logTail returns the last lines of a log file, for failure messages.
func logTail(path string) string {
	tail, err := LastLines(path, 40)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return "--- tail of " + path + " ---\n" + tail
}

// Database creates a database named prefix + random on s, applies the product's migrations to
// it and returns its name. It lives as long as s.
func (s *PostgresServer) Database(t testing.TB, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := RandomName(prefix)
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, s.URL(name)); err != nil {
		t.Fatalf("testenv: migrate %s: %v", name, err)
	}
	return name
}
