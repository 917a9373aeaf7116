package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/onsi/gomega"
)

// dockerStage is the parsed build stage of the Dockerfile.
type dockerStage struct {
	// copies are the sources of its COPY instructions (not --from).
	copies []string
	// runs are its RUN instructions, continuation lines joined.
	runs []string
}

// parseBuildStage reads the Dockerfile's first stage: from the first FROM
// to the next one.
func parseBuildStage(t *testing.T, path string) dockerStage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st dockerStage
	var lines []string
	sc := bufio.NewScanner(f)
	var cur string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			cur += s + " "
			continue
		}
		lines = append(lines, cur+line)
		cur = ""
	}
	froms := 0
	for _, l := range lines {
		fields := strings.Fields(l)
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			froms++
		case "COPY":
			if froms == 1 && !strings.HasPrefix(fields[1], "--from") {
				st.copies = append(st.copies, fields[1:len(fields)-1]...)
			}
		case "RUN":
			if froms == 1 {
				st.runs = append(st.runs, strings.Join(fields[1:], " "))
			}
		}
	}
	return st
}

// TestDockerfile_CopiesEveryPackage checks that the Dockerfile's build stage
// copies the directory of every package of this module that ./cmd/reroll
// builds from (go list -deps), and the files hack/build.sh reads. A package
// it misses fails docker build, which nothing here runs (no engine): this
// test is what notices.
func TestDockerfile_CopiesEveryPackage(t *testing.T) {
	g := gomega.NewWithT(t)
	root := filepath.Join("..", "..")
	st := parseBuildStage(t, filepath.Join(root, "Dockerfile"))

	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,Module", "./cmd/reroll")
	cmd.Dir = root
	out, err := cmd.Output()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	abs, err := filepath.Abs(root)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var dirs []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath, Dir string
			Module          *struct{ Path string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			g.Expect(err).NotTo(gomega.HaveOccurred())
		}
		if p.Module == nil || p.Module.Path != "github.com/reroll/reroll" {
			continue
		}
		rel, err := filepath.Rel(abs, p.Dir)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		dirs = append(dirs, filepath.ToSlash(rel)+"/")
	}
	// Positive control: the list holds the packages known to be needed,
	// the API types among them (the Dockerfile once missed api/).
	g.Expect(dirs).To(gomega.ContainElements("cmd/reroll/", "api/v1alpha1/", "internal/controller/"))

	copied := func(path string) bool {
		for _, c := range st.copies {
			c = strings.TrimPrefix(c, "./")
			if c == path || (strings.HasSuffix(c, "/") && strings.HasPrefix(path, c)) {
				return true
			}
		}
		return false
	}
	for _, d := range dirs {
		g.Expect(copied(d)).To(gomega.BeTrue(), "the Dockerfile's build stage copies no source of %s (it has COPY %v)", d, st.copies)
	}
	for _, f := range []string{"go.mod", "go.sum", "VERSION", "hack/build.sh"} {
		g.Expect(copied(f)).To(gomega.BeTrue(), "the Dockerfile's build stage does not copy %s", f)
	}
	// And a negative control of copied itself: a path no COPY names.
	g.Expect(copied("test/e2e/")).To(gomega.BeFalse())
}

// TestDockerfile_BuildsWithTheReleaseScript checks that the Dockerfile
// builds ./cmd/reroll with hack/build.sh, the script that `make image` and
// `make release` use, so both build the binary with the same flags, and
// that no other go build in it could differ.
func TestDockerfile_BuildsWithTheReleaseScript(t *testing.T) {
	g := gomega.NewWithT(t)
	st := parseBuildStage(t, filepath.Join("..", "..", "Dockerfile"))
	var builds []string
	for _, r := range st.runs {
		if strings.Contains(r, "hack/build.sh") || strings.Contains(r, "go build") {
			builds = append(builds, r)
		}
	}
	g.Expect(builds).To(gomega.HaveLen(1))
	g.Expect(builds[0]).To(gomega.MatchRegexp(`hack/build\.sh /out/reroll \./cmd/reroll$`))
	g.Expect(builds[0]).NotTo(gomega.ContainSubstring("go build"))
	// The flags themselves live in hack/build.sh, once.
	script, err := os.ReadFile(filepath.Join("..", "..", "hack", "build.sh"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(string(script)).To(gomega.ContainSubstring("CGO_ENABLED=0 go build -trimpath -buildvcs=false"))
}

// TestDockerfile_BuildImageHasTheModulesGo checks that the build stage's
// golang image has the Go version go.mod requires (major.minor), so the
// image builds without a toolchain download (GOTOOLCHAIN=auto would fetch
// one, and an offline builder fails).
func TestDockerfile_BuildImageHasTheModulesGo(t *testing.T) {
	g := gomega.NewWithT(t)
	root := filepath.Join("..", "..")
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	want := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	// Positive control: go.mod names a version.
	g.Expect(want).To(gomega.HaveLen(2))
	docker, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	from := regexp.MustCompile(`(?m)^FROM golang:(\S+) AS build`).FindSubmatch(docker)
	g.Expect(from).To(gomega.HaveLen(2), "the build stage is FROM golang:<version> AS build")
	g.Expect(string(from[1])).To(gomega.HavePrefix(string(want[1])),
		"the build image's Go must be go.mod's %s", want[1])
}
