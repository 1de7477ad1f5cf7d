// Package scripts holds the tests of the shell scripts beside them.
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestScriptNamesWhatIsMissing runs `scripts/test.sh --check-only` with a PATH that holds
// only a shell and where nothing else is found: it fails with one message naming every tool
// the tests need and the packages that hold them. With the machine's PATH (where `make test`
// installed them) it finds everything. --check-only installs nothing either way.
func TestTestScriptNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	for _, tool := range []string{"bash", "dirname", "id"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	nowhere := filepath.Join(t.TempDir(), "nowhere")
	cmd := exec.Command(filepath.Join(bin, "bash"), "test.sh", "--check-only")
	cmd.Env = []string{"PATH=" + bin, "BATON_PG_BIN_GLOB=" + nowhere + "/*", "BATON_SBIN=" + nowhere, "BATON_CHROMIUM=" + nowhere}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("test.sh --check-only without the tools succeeded:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 {
		t.Errorf("test.sh --check-only printed %d lines; want one message:\n%s", len(lines), out)
	}
	for _, want := range []string{"postgres", "initdb", "pg_basebackup", "redis-server", "redis-cli", "pgbouncer", "promtool",
		"chromium", "node", "npm", "apt-get install --no-install-recommends postgresql postgresql-client redis-server redis-tools pgbouncer prometheus chromium nodejs npm"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("test.sh --check-only does not name %q:\n%s", want, out)
		}
	}

	// One missing: named alone.
	cmd = exec.Command("bash", "test.sh", "--check-only")
	cmd.Env = append(os.Environ(), "BATON_SBIN="+nowhere, "PATH="+pathWithout(t, "pgbouncer"))
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the tests need pgbouncer, which is not installed") ||
		!strings.Contains(string(out), "apt-get install --no-install-recommends pgbouncer (") {
		t.Errorf("test.sh --check-only without pgbouncer: %v\n%s", err, out)
	}

	// Everything there.
	cmd = exec.Command("bash", "test.sh", "--check-only")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "everything the tests need is installed") {
		t.Errorf("test.sh --check-only on this machine: %v\n%s", err, out)
	}
}

// pathWithout is the PATH without the directories that hold tool.
func pathWithout(t *testing.T, tool string) string {
	var keep []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, tool)); err != nil {
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}
