package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
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
	root, err := moduleRoot()
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

// moduleRoot finds the directory holding go.mod, upwards from the working directory (a test
// runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
