package cluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/baton-run/baton/internal/testenv"
)

// Binaries are the programs a cluster runs.
type Binaries struct {
	Baton     string // cmd/baton
	StormNode string // e2e/cluster/cmd/stormnode
}

var (
	buildMu  sync.Mutex
	built    *Binaries
	buildErr error
	buildDir string
)

// Build compiles cmd/baton and the storm node once per test binary run (later calls return
// the same binaries) into a temporary directory that CleanupBuild removes. BATON_BIN, when
// set, is used for baton instead of building it (the Makefile's soak target passes the binary
// it just built). BATON_E2E_RACE=1 builds with the race detector.
func Build() (*Binaries, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if built != nil || buildErr != nil {
		return built, buildErr
	}
	built, buildErr = build()
	return built, buildErr
}

// CleanupBuild removes what Build made. Call it from TestMain after m.Run.
func CleanupBuild() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
		buildDir = ""
	}
}

func build() (*Binaries, error) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "baton-e2e-bin-")
	if err != nil {
		return nil, err
	}
	buildDir = dir
	pkgs := []string{"./e2e/cluster/cmd/stormnode"}
	b := &Binaries{StormNode: filepath.Join(dir, "stormnode"), Baton: os.Getenv("BATON_BIN")}
	if b.Baton == "" {
		pkgs = append(pkgs, "./cmd/baton")
		b.Baton = filepath.Join(dir, "baton")
	} else if _, err := os.Stat(b.Baton); err != nil {
		return nil, fmt.Errorf("BATON_BIN: %w", err)
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if os.Getenv("BATON_E2E_RACE") == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %v: %w\n%s", args, err, out.String())
	}
	return b, nil
}
