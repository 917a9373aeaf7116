package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// WriteArchive writes idx as an OCI image layout (oci-layout, index.json,
// blobs/sha256/...) tarred into path: what skopeo calls an oci-archive and
// what docker load (25 and later), podman load and ctr import read. The
// layout's index.json names the image Repository:Version.
func WriteArchive(path string, idx v1.ImageIndex, m Metadata) error {
	dir, err := os.MkdirTemp("", "reroll-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, mutate.IndexMediaType(empty.Index, types.OCIImageIndex))
	if err != nil {
		return fmt.Errorf("writing the image layout: %w", err)
	}
	ann := map[string]string{"org.opencontainers.image.ref.name": m.Version}
	if m.Repository != "" {
		ann["io.containerd.image.name"] = m.Repository + ":" + m.Version
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(ann)); err != nil {
		return fmt.Errorf("writing the image layout: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := tarDir(tmp, dir, m); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// tarDir tars the files under dir into path in lexical order (WalkDir's),
// each owned by root, mode 0644 or 0755, dated m.Created.
func tarDir(path, dir string, m Metadata) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: m.Created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Name, h.Mode, h.Typeflag = h.Name+"/", 0o755, tar.TypeDir
			return tw.WriteHeader(h)
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		st, err := src.Stat()
		if err != nil {
			return err
		}
		h.Size = st.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadArchive unpacks the archive at path into a new directory under tmp
// and returns the image index it holds (the first entry of index.json).
func ReadArchive(path, tmp string) (v1.ImageIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		name := filepath.Join(tmp, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(tmp)+string(filepath.Separator)) {
			return nil, fmt.Errorf("reading %s: entry %q leaves the layout", path, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(name, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return nil, err
			}
			out, err := os.Create(name)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, err
			}
		}
	}
	top, err := layout.ImageIndexFromPath(tmp)
	if err != nil {
		return nil, fmt.Errorf("reading the layout in %s: %w", path, err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) != 1 || !im.Manifests[0].MediaType.IsIndex() {
		return nil, fmt.Errorf("%s: index.json should list one image index, it lists %d entries", path, len(im.Manifests))
	}
	return top.ImageIndex(im.Manifests[0].Digest)
}

// PlatformImage returns the image of os/arch in idx.
func PlatformImage(idx v1.ImageIndex, platform string) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range im.Manifests {
		if d.Platform != nil && d.Platform.OS+"/"+d.Platform.Architecture == platform {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("the index has no image for %s", platform)
}

// ExtractFile returns the content of the file at name (e.g. "reroll" or
// "/reroll") in the os/arch image of the archive at path.
func ExtractFile(path, platform, name string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "reroll-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	idx, err := ReadArchive(path, tmp)
	if err != nil {
		return nil, err
	}
	img, err := PlatformImage(idx, platform)
	if err != nil {
		return nil, err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	want := strings.TrimPrefix(name, "/")
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("the %s image has no %s", platform, name)
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(h.Name, "/") == want {
			return io.ReadAll(tr)
		}
	}
}
