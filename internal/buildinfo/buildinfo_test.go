package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLdflagsStampVersionAndCommit builds `baton` with scripts/ldflags.sh's flags, as
// `make build` and the Dockerfile do, and runs `baton version`: it prints the version and
// commit given, not "dev".
func TestLdflagsStampVersionAndCommit(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "scripts/ldflags.sh"))
	cmd.Env = append(os.Environ(), "VERSION=v9.8.7-test", "COMMIT=0123456789ab")
	flags, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/ldflags.sh: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "baton")
	build := exec.Command("go", "build", "-ldflags", strings.TrimSpace(string(flags)), "-o", bin, "./cmd/baton")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("baton version: %v\n%s", err, out)
	}
	if got := string(out); !strings.HasPrefix(got, "v9.8.7-test (commit 0123456789ab, go") {
		t.Errorf("baton version printed %q; want v9.8.7-test (commit 0123456789ab, go…)", got)
	}
}

// TestUnstamped: a build without the flags says "dev" and names a commit all the same.
func TestUnstamped(t *testing.T) {
	if Version() != "dev" || Commit() == "" || !strings.HasPrefix(String(), "dev (commit ") {
		t.Errorf("unstamped: %q, %q, %q", Version(), Commit(), String())
	}
}
