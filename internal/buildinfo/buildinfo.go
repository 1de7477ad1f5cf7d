// Package buildinfo holds the version and commit a build of Baton was made from. The build
// stamps them with -ldflags (scripts/ldflags.sh):
//
//	-X github.com/baton-run/baton/internal/buildinfo.version=v1.2.3
//	-X github.com/baton-run/baton/internal/buildinfo.commit=0123abcd
//
// Unstamped, Version is "dev" and Commit is the VCS revision Go recorded, or "unknown".
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set with -ldflags -X.
var (
	version string
	commit  string
)

// Version is the build's version: the stamped one, else "dev".
func Version() string {
	if version != "" {
		return version
	}
	return "dev"
}

// Commit is the build's commit: the stamped one, else the revision Go recorded (with
// "-dirty" for a modified tree), else "unknown".
func Commit() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if dirty {
				rev += "-dirty"
			}
			return rev
		}
	}
	return "unknown"
}

// GoVersion is the Go release the build was made with.
func GoVersion() string { return runtime.Version() }

// String is "VERSION (commit COMMIT, GO)", what `baton version` prints.
func String() string {
	return Version() + " (commit " + Commit() + ", " + GoVersion() + ")"
}
