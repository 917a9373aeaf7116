package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the linker: -X github.com/reroll/reroll/internal/version.version=v1.2.3
// and likewise commit and date (hack/build.sh). Empty in a plain go build.
var (
	version string
	commit  string
	date    string
)

// Unknown is what a field holds when neither the linker nor the build info
// says.
const Unknown = "unknown"

// Info describes one build.
type Info struct {
	// Version is the release, e.g. "v0.1.0" (the VERSION file at build
	// time), or the module version `go install` recorded.
	Version string `json:"version"`
	// Commit is the git commit hash, with "-dirty" when the tree had
	// changes to tracked files.
	Commit string `json:"commit"`
	// Date is the commit's time in RFC 3339, UTC: a release build dates
	// itself by its commit, so that two builds of one commit are the same.
	Date string `json:"date"`
	// GoVersion is the toolchain that built the binary, e.g. "go1.25.3".
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH, e.g. "linux/amd64".
	Platform string `json:"platform"`
}

// Get returns the running binary's build information: the linker's values,
// else the build info's, else Unknown.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return get(version, commit, date, bi)
}

// get is Get with its sources as arguments; bi may be nil.
func get(version, commit, date string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		var revision, modified, time string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			case "vcs.time":
				time = s.Value
			}
		}
		if info.Commit == "" && revision != "" {
			info.Commit = revision
			if modified == "true" {
				info.Commit += "-dirty"
			}
		}
		if info.Date == "" {
			info.Date = time
		}
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
	}
	for _, f := range []*string{&info.Version, &info.Commit, &info.Date} {
		if *f == "" {
			*f = Unknown
		}
	}
	return info
}

// String returns one line for a person, e.g.
// "v0.1.0 (commit 3f2a..., built 2026-01-02T15:04:05Z, go1.25.3, linux/amd64)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s, %s, %s)", i.Version, i.Commit, i.Date, i.GoVersion, i.Platform)
}
