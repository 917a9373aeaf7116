package version

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/onsi/gomega"
)

func TestGet(t *testing.T) {
	vcs := &debug.BuildInfo{
		GoVersion: "go1.25.3",
		Main:      debug.Module{Path: "github.com/reroll/reroll", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abc"},
			{Key: "vcs.time", Value: "2026-01-02T15:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	cases := map[string]struct {
		// version, commit, date are the linker's values.
		version, commit, date string
		// bi is the toolchain's build info (nil: none).
		bi   *debug.BuildInfo
		want Info
	}{
		"the linker's values win over the build info": {
			version: "v1.2.3", commit: "feedbeef", date: "2026-03-04T05:06:07Z", bi: vcs,
			want: Info{Version: "v1.2.3", Commit: "feedbeef", Date: "2026-03-04T05:06:07Z", GoVersion: "go1.25.3"},
		},
		"a plain go build from a modified tree: the vcs settings, marked dirty": {
			bi:   vcs,
			want: Info{Version: Unknown, Commit: "0123abc-dirty", Date: "2026-01-02T15:04:05Z", GoVersion: "go1.25.3"},
		},
		"go install module@version: the module version": {
			bi:   &debug.BuildInfo{GoVersion: "go1.25.3", Main: debug.Module{Version: "v0.1.0"}},
			want: Info{Version: "v0.1.0", Commit: Unknown, Date: Unknown, GoVersion: "go1.25.3"},
		},
		"nothing known": {
			want: Info{Version: Unknown, Commit: Unknown, Date: Unknown, GoVersion: runtime.Version()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			tc.want.Platform = runtime.GOOS + "/" + runtime.GOARCH
			g.Expect(get(tc.version, tc.commit, tc.date, tc.bi)).To(gomega.Equal(tc.want))
		})
	}
}

func TestInfo_String(t *testing.T) {
	g := gomega.NewWithT(t)
	i := Info{Version: "v0.1.0", Commit: "abc", Date: "2026-01-02T15:04:05Z", GoVersion: "go1.25.3", Platform: "linux/arm64"}
	g.Expect(i.String()).To(gomega.Equal("v0.1.0 (commit abc, built 2026-01-02T15:04:05Z, go1.25.3, linux/arm64)"))
}
