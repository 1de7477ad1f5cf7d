//go:build unix

package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
)

// TestPostgresPairFailsOver: a row committed on the primary is read on the standby, which
// refuses writes; once the primary is killed and the standby promoted, the standby has the
// row and accepts writes, and the multi-host URL, which reached the primary before, reaches it.
func TestPostgresPairFailsOver(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pair := testenv.PrivatePostgresPair(t)
	multi := pair.MultiHostURL("postgres")

	var port int
	if err := connectPG(ctx, t, multi).QueryRow(ctx, `SELECT current_setting('port')::int`).Scan(&port); err != nil || port != pair.Primary.Port {
		t.Fatalf("the multi-host URL reached port %d (%v); want the primary's %d", port, err, pair.Primary.Port)
	}
	primary := connectPG(ctx, t, pair.Primary.URL("postgres"))
	if _, err := primary.Exec(ctx, "CREATE TABLE survivors (id int PRIMARY KEY); INSERT INTO survivors VALUES (1), (2), (3)"); err != nil {
		t.Fatalf("write on the primary: %v", err)
	}
	standby := connectPG(ctx, t, pair.Standby.URL("postgres"))
	testenv.Eventually(t, time.Minute, "the primary's rows on the standby", func() bool {
		var n int
		return standby.QueryRow(ctx, "SELECT count(*) FROM survivors").Scan(&n) == nil && n == 3
	})
	if _, err := standby.Exec(ctx, "INSERT INTO survivors VALUES (4)"); err == nil {
		t.Fatal("the standby accepted a write before promotion")
	}

	pair.Primary.Kill(t)
	requirePGDown(t, pair.Primary.URL("postgres"))
	pair.Promote(t)

	if _, err := standby.Exec(ctx, "INSERT INTO survivors VALUES (4)"); err != nil {
		t.Fatalf("write on the promoted standby: %v", err)
	}
	if n := countRows(ctx, t, standby); n != 4 {
		t.Fatalf("%d rows on the promoted standby; want 4", n)
	}
	viaMulti := connectPG(ctx, t, multi)
	if err := viaMulti.QueryRow(ctx, `SELECT current_setting('port')::int`).Scan(&port); err != nil || port != pair.Standby.Port {
		t.Fatalf("after the failover the multi-host URL reached port %d (%v); want the promoted standby's %d", port, err, pair.Standby.Port)
	}
	if _, err := viaMulti.Exec(ctx, "INSERT INTO survivors VALUES (5)"); err != nil {
		t.Fatalf("write through the multi-host URL after the failover: %v", err)
	}
}
