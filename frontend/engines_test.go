package frontend

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// nodeFloor is the lowest Node version package.json's engines allow (">=20.19" gives
// 20.19.0), which the README names and CI runs.
func nodeFloor(t *testing.T) *semver.Version {
	t.Helper()
	var pkg struct{ Engines struct{ Node string } }
	readJSON(t, "package.json", &pkg)
	floor, ok := strings.CutPrefix(strings.TrimSpace(pkg.Engines.Node), ">=")
	if !ok {
		t.Fatalf("package.json's engines.node is %q; want a floor, >=X.Y", pkg.Engines.Node)
	}
	v, err := semver.NewVersion(strings.TrimSpace(floor))
	if err != nil {
		t.Fatalf("package.json's engines.node %q: %v", pkg.Engines.Node, err)
	}
	return v
}

// TestNodePackagesSupportTheNodeFloor: every package package-lock.json installs supports the
// Node version package.json requires at the least, so `npm ci` there warns of no engine
// (EBADENGINE) and, with .npmrc's engine-strict, cannot install one that needs a newer Node.
func TestNodePackagesSupportTheNodeFloor(t *testing.T) {
	t.Parallel()
	floor := nodeFloor(t)
	npmrc, err := os.ReadFile(".npmrc")
	if err != nil || !strings.Contains(string(npmrc), "engine-strict=true") {
		t.Errorf(".npmrc must set engine-strict=true (read: %v)", err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string
			Engines json.RawMessage
		}
	}
	readJSON(t, "package-lock.json", &lock)
	checked := 0
	for path, p := range lock.Packages {
		var engines struct{ Node string }
		if path == "" || len(p.Engines) == 0 || json.Unmarshal(p.Engines, &engines) != nil || engines.Node == "" {
			continue // the project itself, or a package that names no Node version
		}
		c, err := semver.NewConstraint(engines.Node)
		if err != nil {
			t.Errorf("%s@%s: engines.node %q does not parse: %v", path, p.Version, engines.Node, err)
			continue
		}
		if !c.Check(floor) {
			t.Errorf("%s@%s needs Node %s, which Node %s is not: pin a version that supports it (package.json overrides)",
				strings.TrimPrefix(path, "node_modules/"), p.Version, engines.Node, floor)
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("checked only %d packages' engines; is package-lock.json complete?", checked)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
