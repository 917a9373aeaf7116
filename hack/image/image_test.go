package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/onsi/gomega"
)

// fakeBinaries writes one distinct file per platform, standing in for the
// binaries hack/build.sh makes.
func fakeBinaries(t *testing.T) map[string]string {
	dir := t.TempDir()
	bins := map[string]string{}
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		path := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(path, []byte("#!binary for "+p), 0o755); err != nil {
			t.Fatal(err)
		}
		bins[p] = path
	}
	return bins
}

var meta = Metadata{
	Version: "v9.8.7", Revision: "0123456789abcdef", Source: "https://github.com/reroll/reroll",
	Repository: "ghcr.io/reroll/reroll", Created: time.Unix(1767366245, 0).UTC(), // 2026-01-02T15:04:05Z
}

func TestWriteArchive_SameInputsSameBytes(t *testing.T) {
	g := gomega.NewWithT(t)
	bins := fakeBinaries(t)
	dir := t.TempDir()
	var sums [2][32]byte
	for i := range sums {
		idx, err := NewIndex(bins, meta)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		path := filepath.Join(dir, "a.tar")
		g.Expect(WriteArchive(path, idx, meta)).To(gomega.Succeed())
		b, err := os.ReadFile(path)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		sums[i] = sha256.Sum256(b)
	}
	g.Expect(sums[1]).To(gomega.Equal(sums[0]))

	// Positive control: another revision is another archive.
	other := meta
	other.Revision = "fedcba9876543210"
	idx, err := NewIndex(bins, other)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	path := filepath.Join(dir, "b.tar")
	g.Expect(WriteArchive(path, idx, other)).To(gomega.Succeed())
	b, err := os.ReadFile(path)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(sha256.Sum256(b)).NotTo(gomega.Equal(sums[0]))
}

func TestWriteArchive_TheImageAsSpecified(t *testing.T) {
	g := gomega.NewWithT(t)
	bins := fakeBinaries(t)
	idx, err := NewIndex(bins, meta)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	path := filepath.Join(t.TempDir(), "image.tar")
	g.Expect(WriteArchive(path, idx, meta)).To(gomega.Succeed())

	read, err := ReadArchive(path, t.TempDir())
	g.Expect(err).NotTo(gomega.HaveOccurred())
	want, err := idx.Digest()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	got, err := read.Digest()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(got).To(gomega.Equal(want), "the archive holds the index whose digest build prints")
	im, err := read.IndexManifest()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(im.MediaType).To(gomega.Equal(types.OCIImageIndex))
	g.Expect(im.Manifests).To(gomega.HaveLen(2))
	g.Expect(im.Annotations).To(gomega.HaveKeyWithValue("org.opencontainers.image.revision", "0123456789abcdef"))

	for _, platform := range []string{"linux/amd64", "linux/arm64"} {
		img, err := PlatformImage(read, platform)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		mt, err := img.MediaType()
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(mt).To(gomega.Equal(types.OCIManifestSchema1))
		cf, err := img.ConfigFile()
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(cf.OS + "/" + cf.Architecture).To(gomega.Equal(platform))
		g.Expect(cf.Config.User).To(gomega.Equal("65532:65532"))
		g.Expect(cf.Config.Entrypoint).To(gomega.Equal([]string{"/reroll"}))
		g.Expect(cf.Created.Time.Equal(meta.Created)).To(gomega.BeTrue())
		g.Expect(cf.Config.Labels).To(gomega.Equal(map[string]string{
			"org.opencontainers.image.title":    "reroll",
			"org.opencontainers.image.licenses": "Apache-2.0",
			"org.opencontainers.image.version":  "v9.8.7",
			"org.opencontainers.image.revision": "0123456789abcdef",
			"org.opencontainers.image.source":   "https://github.com/reroll/reroll",
			"org.opencontainers.image.created":  "2026-01-02T15:04:05Z",
		}))

		files := map[string]*tar.Header{}
		contents := map[string][]byte{}
		rc := mutate.Extract(img)
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			g.Expect(err).NotTo(gomega.HaveOccurred())
			files[h.Name] = h
			contents[h.Name], err = io.ReadAll(tr)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(h.ModTime.Equal(meta.Created)).To(gomega.BeTrue(), h.Name)
		}
		rc.Close()
		g.Expect(string(contents["reroll"])).To(gomega.Equal("#!binary for " + platform))
		g.Expect(files["reroll"].Mode).To(gomega.Equal(int64(0o755)))
		g.Expect(string(contents["etc/passwd"])).To(gomega.ContainSubstring("nonroot:x:65532:65532:"))
		g.Expect(string(contents["etc/group"])).To(gomega.ContainSubstring("nonroot:x:65532:"))
		g.Expect(files["home/nonroot"].Uid).To(gomega.Equal(65532))
		g.Expect(files["tmp"].Mode).To(gomega.Equal(int64(0o1777)))

		// The CA bundle parses, and holds a root every public TLS client
		// trusts (ISRG Root X1, Let's Encrypt's).
		pool := x509.NewCertPool()
		g.Expect(pool.AppendCertsFromPEM(contents["etc/ssl/certs/ca-certificates.crt"])).To(gomega.BeTrue())
		var subjects []string
		rest := contents["etc/ssl/certs/ca-certificates.crt"]
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			c, err := x509.ParseCertificate(b.Bytes)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			subjects = append(subjects, c.Subject.CommonName)
		}
		g.Expect(len(subjects)).To(gomega.BeNumerically(">", 100))
		g.Expect(subjects).To(gomega.ContainElement("ISRG Root X1"))
	}

	b, err := ExtractFile(path, "linux/arm64", "/reroll")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(bytes.Equal(b, []byte("#!binary for linux/arm64"))).To(gomega.BeTrue())
	_, err = ExtractFile(path, "linux/s390x", "/reroll")
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("no image for linux/s390x")))
}
