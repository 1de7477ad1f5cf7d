//go:build unix

package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// standbyRetryInterval is the standby's wal_retrieve_retry_interval: how long it waits before
// it tries a WAL source again, and so how long a promotion may wait after the primary died.
const standbyRetryInterval = "500ms"

// PostgresPair is a private PostgreSQL primary and a hot standby streaming from it, for tests
// that fail over: Primary.Kill crashes the primary, Promote makes the standby the new primary.
type PostgresPair struct {
	Primary *PostgresServer
	Standby *PostgresServer
}

// PrivatePostgresPair starts a private primary (as PrivatePostgres does) and a hot standby
// made from it by pg_basebackup -R -X stream, on spare ports of their own, and returns once
// the standby streams from the primary as its synchronous standby. Both stop when the test
// ends. The standby retries a lost WAL stream every 500ms (wal_retrieve_retry_interval), so a
// promotion right after the primary died waits at most that long for the standby's retry.
//
// Replication is synchronous (synchronous_standby_names = '*', synchronous_commit on): the
// primary acknowledges a commit only once the standby has its WAL, so no commit a client saw
// succeed is lost when the primary is killed and the standby promoted. That is what a
// failover test must be able to rely on: with asynchronous replication a committed item
// result could vanish, and a test could not tell a lost commit from a bug. The price is that
// the primary's commits wait while the standby is down; the promoted standby has no standby
// of its own and commits alone.
func PrivatePostgresPair(t testing.TB) *PostgresPair {
	t.Helper()
	primary := privatePostgres(t, func(s *PostgresServer) []string {
		// initdb's pg_hba.conf has this line already; it is written again so the pair does
		// not depend on initdb's defaults.
		hba := filepath.Join(s.DataDir, "pg_hba.conf")
		if err := appendFile(hba, "host replication all 127.0.0.1/32 trust\n"); err != nil {
			t.Fatalf("testenv: %v", err)
		}
		return []string{
			"-c", "wal_level=replica",
			"-c", "max_wal_senders=4",
			"-c", "synchronous_standby_names=*",
		}
	})
	standby := privatePostgres(t, func(s *PostgresServer) []string {
		if err := baseBackup(primary, s); err != nil {
			t.Fatalf("testenv: pg_basebackup from port %d: %v\n%s", primary.Port, err, logTail(filepath.Join(s.Dir, "basebackup.log")))
		}
		// PostgreSQL 15 can leave a promotion requested just after the stream broke waiting
		// out the retry interval of the WAL source, 5s by default; the pair promotes faster.
		return []string{"-c", "hot_standby=on", "-c", "wal_retrieve_retry_interval=" + standbyRetryInterval}
	})
	p := &PostgresPair{Primary: primary, Standby: standby}
	p.waitStreaming(t)
	return p
}

// baseBackup replaces the standby's data directory (a copy of the initdb template) with a base
// backup of primary that starts as its standby (standby.signal, primary_conninfo), made as the
// server user.
func baseBackup(primary, standby *PostgresServer) error {
	bin, err := postgresBinDir()
	if err != nil {
		return err
	}
	cred, err := serverCredential()
	if err != nil {
		return err
	}
	if err := os.RemoveAll(standby.DataDir); err != nil {
		return err
	}
	if cred != nil {
		if err := handOver(cred, standby.Dir); err != nil {
			return err
		}
	}
	cmd := exec.Command(filepath.Join(bin, "pg_basebackup"),
		"-d", fmt.Sprintf("host=127.0.0.1 port=%d user=postgres", primary.Port),
		"-D", standby.DataDir, "-R", "-X", "stream", "-c", "fast", "--no-sync")
	return runLogged(cmd, cred, standby.Dir, filepath.Join(standby.Dir, "basebackup.log"))
}

// waitStreaming waits until the primary reports the standby streaming as its synchronous
// standby, so that the next commit on the primary is on the standby too.
func (p *PostgresPair) waitStreaming(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.Primary.URL("postgres"))
	if err != nil {
		t.Fatalf("testenv: connect to the primary: %v", err)
	}
	defer conn.Close(context.Background())
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = 'sync'`).Scan(&n)
		if err == nil && n > 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("testenv: the standby on port %d is not streaming from the primary on port %d (%v)\n%s",
				p.Standby.Port, p.Primary.Port, err, logTail(p.Standby.LogFile))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Promote makes the standby a primary (pg_promote) and returns once it accepts writes: it is
// out of recovery and a write commits. The old primary should be down (Kill) first; the pair
// does not fence it.
func (p *PostgresPair) Promote(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.Standby.URL("postgres"))
	if err != nil {
		t.Fatalf("testenv: connect to the standby: %v", err)
	}
	defer conn.Close(context.Background())
	var promoted bool
	if err := conn.QueryRow(ctx, `SELECT pg_promote(true, $1)`, int(startTimeout/time.Second)).Scan(&promoted); err != nil || !promoted {
		t.Fatalf("testenv: promote the standby on port %d: %v, %v\n%s", p.Standby.Port, promoted, err, logTail(p.Standby.LogFile))
	}
	for {
		var recovering bool
		err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&recovering)
		if err == nil && !recovering {
			// A temporary table's write needs no standby and proves the server writes.
			if _, err = conn.Exec(ctx, `CREATE TEMP TABLE promoted (x int); INSERT INTO promoted VALUES (1)`); err == nil {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("testenv: the standby on port %d does not accept writes after pg_promote: %v\n%s", p.Standby.Port, err, logTail(p.Standby.LogFile))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// MultiHostURL returns a URL for database db listing the primary, then the standby, with
// target_session_attrs=read-write: a client connects to whichever of the two accepts writes,
// the primary before a failover, the promoted standby after it.
func (p *PostgresPair) MultiHostURL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%s,127.0.0.1:%s/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=5",
		strconv.Itoa(p.Primary.Port), strconv.Itoa(p.Standby.Port), db)
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
