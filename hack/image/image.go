package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The user the image runs as: distroless's "nonroot", which the chart's and
// config/'s securityContext (runAsUser 65532) expect.
const (
	nonrootUID = 65532
	// Entrypoint is where the binary sits and what the image runs.
	Entrypoint = "/reroll"
	// CertFile is the CA bundle, where Go's crypto/x509 looks on Linux.
	CertFile = "/etc/ssl/certs/ca-certificates.crt"
)

// Metadata is what the image says about itself.
type Metadata struct {
	// Version, Revision and Source become the OCI labels
	// org.opencontainers.image.version, .revision and .source.
	Version, Revision, Source string
	// Repository names the image in the archive (io.containerd.image.name,
	// Repository:Version), which docker load and ctr import read.
	Repository string
	// Created is every timestamp in the image: the config's, the history's
	// and each file's. The commit's time, so that a rebuild is identical.
	Created time.Time
}

// Labels returns the image's OCI labels (also the index's annotations).
func (m Metadata) Labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":    "reroll",
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.version":  m.Version,
		"org.opencontainers.image.revision": m.Revision,
		"org.opencontainers.image.created":  m.Created.Format(time.RFC3339),
	}
	if m.Source != "" {
		l["org.opencontainers.image.source"] = m.Source
	}
	return l
}

// NewIndex returns the multi-platform image: for each os/arch in bins, an
// image of two layers, the base (users, CA certificates, /tmp; the same
// blob on every platform) and the binary at Entrypoint.
func NewIndex(bins map[string]string, m Metadata) (v1.ImageIndex, error) {
	base, err := baseLayer(m.Created)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, platform := range slices.Sorted(maps.Keys(bins)) {
		osName, arch, _ := strings.Cut(platform, "/")
		bin, err := os.ReadFile(bins[platform])
		if err != nil {
			return nil, fmt.Errorf("reading the %s binary: %w", platform, err)
		}
		img, err := newImage(osName, arch, base, bin, m)
		if err != nil {
			return nil, fmt.Errorf("building the %s image: %w", platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}},
		})
	}
	return mutate.Annotations(idx, m.Labels()).(v1.ImageIndex), nil
}

func newImage(osName, arch string, base v1.Layer, bin []byte, m Metadata) (v1.Image, error) {
	binLayer, err := layer(m.Created, []file{{name: strings.TrimPrefix(Entrypoint, "/"), mode: 0o755, data: bin}})
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: arch,
		OS:           osName,
		Created:      v1.Time{Time: m.Created},
		Config: v1.Config{
			User:         fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
			Entrypoint:   []string{Entrypoint},
			WorkingDir:   "/",
			Env:          []string{"SSL_CERT_FILE=" + CertFile},
			Labels:       m.Labels(),
			ExposedPorts: map[string]struct{}{"9090/tcp": {}, "8081/tcp": {}},
		},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: m.Created}, CreatedBy: "hack/image: /etc/passwd, /etc/group, " + CertFile + ", /tmp"}},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: v1.Time{Time: m.Created}, CreatedBy: "hack/image: " + Entrypoint + " (hack/build.sh)"}},
	)
}

// file is one entry of a layer; a directory when data is nil and mode has
// os.ModeDir.
type file struct {
	name     string
	mode     int64
	dir      bool
	uid, gid int
	data     []byte
}

// baseLayer holds what distroless/static's nonroot variant gives a static
// binary: the users, CA certificates and a writable /tmp (cert-controller
// writes the webhook's serving certificate under it).
func baseLayer(created time.Time) (v1.Layer, error) {
	certs, err := caBundle()
	if err != nil {
		return nil, err
	}
	return layer(created, []file{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonrootUID))},
		{name: "etc/passwd", mode: 0o644, data: []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonrootUID, nonrootUID))},
		{name: "etc/ssl", mode: 0o755, dir: true},
		{name: "etc/ssl/certs", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(CertFile, "/"), mode: 0o644, data: certs},
		{name: "home", mode: 0o755, dir: true},
		{name: "home/nonroot", mode: 0o700, dir: true, uid: nonrootUID, gid: nonrootUID},
		{name: "tmp", mode: 0o1777, dir: true},
	})
}

// caBundle returns the PEM bundle of the Mozilla (NSS) roots that
// golang.org/x/crypto/x509roots/fallback ships, a Go module pinned in
// go.sum: reproducible, and independent of the building machine's store.
// Roots with a constraint that PEM cannot carry (distrust after a date)
// are left out rather than trusted without it.
func caBundle() ([]byte, error) {
	var buf bytes.Buffer
	n := 0
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("the fallback bundle has no roots")
	}
	return buf.Bytes(), nil
}

// layer returns a gzipped OCI layer of files, in the order given, each
// owned by root unless it says otherwise and dated created.
func layer(created time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: created, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}
