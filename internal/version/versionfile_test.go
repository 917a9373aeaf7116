package version

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// readYAML reads the repository file at path into out.
func readYAML(t *testing.T, path string, out any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestVersionFile_EverythingShipsIt checks that every place naming the
// release agrees with the VERSION file, which hack/build.sh stamps into the
// binaries and hack/image.sh into the image: the chart's appVersion (the
// default image tag: values.yaml's image.tag stays empty), Kustomize's image
// tag and the one-file manifest's image.
func TestVersionFile_EverythingShipsIt(t *testing.T) {
	g := gomega.NewWithT(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "VERSION"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	v := strings.TrimSpace(string(raw))
	g.Expect(string(raw)).To(gomega.Equal(v+"\n"), "VERSION holds one line")
	g.Expect(v).To(gomega.MatchRegexp(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`), "VERSION is a semantic version with a v")

	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	readYAML(t, "charts/reroll/Chart.yaml", &chart)
	g.Expect(chart.AppVersion).To(gomega.Equal(v), "charts/reroll/Chart.yaml's appVersion")

	var values struct {
		Image *struct {
			Repository string  `json:"repository"`
			Tag        *string `json:"tag"`
		} `json:"image"`
	}
	readYAML(t, "charts/reroll/values.yaml", &values)
	g.Expect(values.Image).NotTo(gomega.BeNil())
	g.Expect(values.Image.Repository).To(gomega.Equal("ghcr.io/reroll/reroll"))
	g.Expect(values.Image.Tag).NotTo(gomega.BeNil(), "values.yaml has image.tag")
	g.Expect(*values.Image.Tag).To(gomega.BeEmpty(), "values.yaml's image.tag stays empty, so that the tag is the chart's appVersion")

	var kustomization struct {
		Images []struct {
			Name   string `json:"name"`
			NewTag string `json:"newTag"`
		} `json:"images"`
	}
	readYAML(t, "config/manager/kustomization.yaml", &kustomization)
	g.Expect(kustomization.Images).To(gomega.ContainElement(gomega.And(
		gomega.HaveField("Name", "ghcr.io/reroll/reroll"), gomega.HaveField("NewTag", v))),
		"config/manager/kustomization.yaml's newTag")

	deploy, err := os.ReadFile(filepath.Join("..", "..", "deploy", "reroll.yaml"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	images := regexp.MustCompile(`(?m)^\s*image:\s*(\S+)\s*$`).FindAllStringSubmatch(string(deploy), -1)
	g.Expect(images).To(gomega.HaveLen(1), "deploy/reroll.yaml names one image")
	g.Expect(images[0][1]).To(gomega.Equal("ghcr.io/reroll/reroll:"+v), "deploy/reroll.yaml's image (make manifests)")
}
