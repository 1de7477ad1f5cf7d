//go:build unix

package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PgBouncerPoolSize is the number of server connections a private PgBouncer keeps per
// database and user: fewer than the clients a test opens, so they share them.
const PgBouncerPoolSize = 10

// PgBouncer is a private PgBouncer in transaction mode in front of a private PostgreSQL.
type PgBouncer struct {
	Port    int    // TCP port on 127.0.0.1
	Dir     string // temporary directory holding the configuration and the log
	LogFile string
	Backend *PostgresServer

	srv *managedServer
}

// PrivatePgBouncer starts Debian's pgbouncer (/usr/sbin/pgbouncer, else on PATH) on a spare
// port in front of backend, in transaction mode (pool_mode = transaction) with
// PgBouncerPoolSize server connections per database, any database name passed through,
// and trust authentication for user postgres. It stops it when the test ends. When the test
// runs as root PgBouncer runs as the server user, as PostgreSQL does.
func PrivatePgBouncer(t testing.TB, backend *PostgresServer) *PgBouncer {
	t.Helper()
	bin := "/usr/sbin/pgbouncer"
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("pgbouncer"); err != nil {
			t.Fatalf("testenv: pgbouncer not found (apt-get install pgbouncer): %v", err)
		}
	}
	cred := mustServerCredential(t)
	dir, port := serverPlace(t)
	b := &PgBouncer{Port: port, Dir: dir, LogFile: filepath.Join(dir, "pgbouncer.log"), Backend: backend}
	if err := os.WriteFile(filepath.Join(dir, "users.txt"), []byte(`"postgres" ""`+"\n"), 0o600); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if cred != nil {
		if err := handOver(cred, dir); err != nil {
			t.Fatalf("testenv: prepare %s for the server user: %v", dir, err)
		}
	}
	b.srv = &managedServer{
		name:    "pgbouncer",
		logPath: b.LogFile,
		dir:     dir,
		cred:    cred,
		command: func() *exec.Cmd {
			// Written at each start: the first start may move the port. Should the write
			// fail, pgbouncer exits on the missing file and the log says so.
			ini := filepath.Join(dir, "pgbouncer.ini")
			_ = os.WriteFile(ini, []byte(b.config()), 0o644)
			return exec.Command(bin, ini)
		},
		ping: func(ctx context.Context) error {
			conn, err := pgx.Connect(ctx, b.URL("postgres"))
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			_, err = conn.Exec(ctx, "SELECT 1")
			return err
		},
		stopSignal: syscall.SIGTERM, // immediate shutdown; SIGINT would wait for every client
		kill:       func(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) },
		portInUse:  "Address already in use",
		movePort:   func(p int) { b.Port = p },
	}
	b.srv.startFor(t, func() int { return b.Port })
	return b
}

// config is the pgbouncer.ini of the current port.
func (b *PgBouncer) config() string {
	return fmt.Sprintf(`[databases]
* = host=127.0.0.1 port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 1000
server_reset_query =
ignore_startup_parameters = extra_float_digits
`, b.Backend.Port, b.Port, filepath.Join(b.Dir, "users.txt"), PgBouncerPoolSize)
}

// URL returns a URL for database db through the pooler, as superuser postgres.
func (b *PgBouncer) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", b.Port, db)
}

// PrivateTLSPostgres starts a private PostgreSQL with ssl=on and a server certificate of
// MakeCerts (for 127.0.0.1 and localhost), returned with it. It accepts TLS and plain
// connections alike; a client asks for TLS with sslmode.
func PrivateTLSPostgres(t testing.TB) (*PostgresServer, *Certs) {
	t.Helper()
	certs := MakeCerts(t)
	s := privatePostgres(t, func(s *PostgresServer) []string {
		cert, key := filepath.Join(s.Dir, "server.pem"), filepath.Join(s.Dir, "server-key.pem")
		for src, dst := range map[string]string{certs.CertFile: cert, certs.KeyFile: key} {
			raw, err := os.ReadFile(src)
			if err != nil {
				t.Fatalf("testenv: %v", err)
			}
			// The server refuses a key file others may read; handOver makes it the server's.
			if err := os.WriteFile(dst, raw, 0o600); err != nil {
				t.Fatalf("testenv: %v", err)
			}
		}
		return []string{"-c", "ssl=on", "-c", "ssl_cert_file=" + cert, "-c", "ssl_key_file=" + key}
	})
	return s, certs
}

// TLSURL returns a URL for database db on a server of PrivateTLSPostgres that verifies the
// server's certificate and name against caFile (sslmode=verify-full); caFile "" leaves
// sslrootcert out, so the system's roots decide.
func (s *PostgresServer) TLSURL(db, caFile string) string {
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=verify-full", s.Port, db)
	if caFile != "" {
		u += "&sslrootcert=" + caFile
	}
	return u
}
