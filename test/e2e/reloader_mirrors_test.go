//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/gomega"
)

// reloaderMirrors are Reloader values files that pull Reloader's image from
// a mirror or a private registry.
const reloaderMirrors = "test/e2e/testdata/reloader-mirrors"

// Enterprises mirror images. A Reloader values file that pulls Reloader's
// image from a mirror got Reroll's chart either to refuse it
// (global.imageRegistry, a repository ending in stakater/reloader) or to
// take the mirror's path for Reroll's own image, so that Reloader's binary
// ran with Reroll's arguments. Reroll's image is now taken from the same
// registry or mirror path, with Reloader's suffix replaced by Reroll's, at
// the chart's appVersion; Reloader's chart, given the same file, pulls
// Reloader's image from that same place (the test renders both).
func TestHelmChart_ReloaderMirrorsGiveReRollsImageFromTheSameMirror(t *testing.T) {
	t.Parallel()
	version := chartAppVersion(t)
	cases := map[string]struct {
		// reloader is the image Reloader's chart renders; reroll is Reroll's.
		reloader, reroll string
	}{
		"ecr-pull-through.yaml": {
			reloader: "123456789012.dkr.ecr.eu-west-1.amazonaws.com/ghcr/stakater/reloader:v1.4.20",
			reroll:   "123456789012.dkr.ecr.eu-west-1.amazonaws.com/ghcr/reroll/reroll:" + version,
		},
		"harbor-proxy.yaml": {
			reloader: "harbor.corp/proxy/reloader@sha256:0000000000000000000000000000000000000000000000000000000000000000",
			reroll:   "harbor.corp/proxy/reroll:" + version,
		},
		"global-registry.yaml": {
			reloader: "registry.corp.example:5000/stakater/reloader:",
			reroll:   "registry.corp.example:5000/reroll/reroll:" + version,
		},
	}
	for file, tc := range cases {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			override := []string{"-f", filepath.Join(reloaderMirrors, file)}
			reloader := container(t, renderWith(t, reloaderChart, override)).Image
			g.Expect(reloader).To(gomega.HavePrefix(tc.reloader), "Reloader's chart pulls from the mirror")
			for form, args := range map[string][]string{
				"override alone": override,
				"whole file":     append([]string{"-f", reloaderChart + "/values.yaml"}, override...),
			} {
				c := container(t, renderWith(t, chartDir, args))
				g.Expect(c.Image).To(gomega.Equal(tc.reroll), form)
				g.Expect(c.Image).NotTo(gomega.ContainSubstring("reloader"), "never Reloader's image with Reroll's arguments (%s)", form)
			}
		})
	}
}

// Where the chart cannot tell Reloader's image from Reroll's, it refuses,
// naming the fix; the fix renders.
func TestHelmChart_RefusesAMirrorItCannotRead(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		// refused are the values refused, want is in the error; fixed are
		// the values of the fix, rendering image.
		refused map[string]any
		want    string
		fixed   map[string]any
		image   string
	}{
		"a last segment that only contains reloader": {
			refused: map[string]any{"image.repository": "harbor.corp/proxy/stakater-reloader"},
			want:    "the chart cannot tell where Reroll's image is in this mirror",
			fixed:   map[string]any{"image.repository": "harbor.corp/proxy/reroll"},
			image:   "harbor.corp/proxy/reroll:",
		},
		"Reloader's image.name beside a repository named neither way": {
			refused: map[string]any{"image.name": "stakater/reloader", "image.repository": "harbor.corp/proxy/controller"},
			want:    "cannot tell whether this is a mirror of Reloader's image or Reroll's",
			fixed:   map[string]any{"image.repository": "harbor.corp/proxy/controller"},
			image:   "harbor.corp/proxy/controller:",
		},
		"a registry with an image.name not ending in reloader": {
			refused: map[string]any{"global.imageRegistry": "registry.example", "image.name": "tools/config-watcher"},
			want:    "global.imageRegistry registry.example with image.name tools/config-watcher",
			fixed:   map[string]any{"image.repository": "registry.example/tools/reroll"},
			image:   "registry.example/tools/reroll:",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newT(t)
			_, err := helm(append([]string{"template", "r", chartDir, "--namespace", "reroll-system"}, setFlags(tc.refused)...)...)
			g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(tc.want)))
			c := container(t, renderChart(t, tc.fixed))
			g.Expect(c.Image).To(gomega.HavePrefix(tc.image))
			g.Expect(strings.Contains(c.Image, "reloader")).To(gomega.BeFalse())
		})
	}
}
