package testenv

import (
	"os/exec"
	"strings"
	"testing"
)

// ForbidDeps fails t for every package that the packages of pattern (a `go list` pattern,
// resolved in the test's directory) depend on, however indirectly, that is in forbidden or
// below one of them. The packages of pattern themselves do not count, so a package can be
// forbidden everything of its module but itself. It fails too when pattern matches nothing.
func ForbidDeps(t testing.TB, pattern, who string, forbidden []string) {
	t.Helper()
	roots := goList(t, pattern)
	if len(roots) == 0 {
		t.Fatalf("go list %s matched no package", pattern)
	}
	self := map[string]bool{}
	for _, p := range roots {
		self[p] = true
	}
	for _, p := range goList(t, "-deps", pattern) {
		if self[p] {
			continue
		}
		for _, bad := range forbidden {
			if p == bad || strings.HasPrefix(p, bad+"/") {
				t.Errorf("%s depends on %s: %s must not depend on it", pattern, p, who)
			}
		}
	}
}

// ForbidPackageImports fails t for every package of pattern (a `go list` pattern, resolved in
// the test's directory) that imports, in its code or its tests, a package in forbidden or
// below one of them; who names the rule's subject in the message. It fails too when pattern
// matches nothing.
func ForbidPackageImports(t testing.TB, pattern, who string, forbidden []string) {
	t.Helper()
	lines := listImports(t, pattern)
	if len(lines) == 0 {
		t.Fatalf("go list %s matched no package", pattern)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			for _, bad := range forbidden {
				if imp == bad || strings.HasPrefix(imp, bad+"/") {
					t.Errorf("%s imports %s: %s must not depend on it", f[0], imp, who)
				}
			}
		}
	}
}

// ForbidImporters fails t for every package of the module that imports a package below
// guarded (in its code or its tests) without being below owner itself.
func ForbidImporters(t testing.TB, module, guarded, owner string) {
	t.Helper()
	lines := listImports(t, module+"/...")
	if len(lines) < 10 {
		t.Fatalf("go list %s/... listed only %d packages", module, len(lines))
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if f[0] == owner || strings.HasPrefix(f[0], owner+"/") {
			continue
		}
		for _, imp := range f[1:] {
			if imp == guarded || strings.HasPrefix(imp, guarded+"/") {
				t.Errorf("%s imports %s: only %s may", f[0], imp, owner)
			}
		}
	}
}

// listImports returns a line per package of pattern: its import path, then every package its
// code and its tests import, separated by spaces.
func listImports(t testing.TB, pattern string) []string {
	t.Helper()
	return goList(t, "-f",
		`{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}`,
		pattern)
}

// goList runs `go list args...` and returns its lines.
func goList(t testing.TB, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		return strings.Split(s, "\n")
	}
	return nil
}
