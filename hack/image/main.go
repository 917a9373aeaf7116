// Command image builds Reroll's controller image without a container engine:
// a multi-platform OCI image, written as a tarred OCI image layout (an
// "oci-archive"), from static binaries built beforehand by hack/build.sh.
// `make image` runs it through hack/image.sh; see docs/release.md.
//
//	image build -out FILE -binary linux/amd64=PATH [-binary ...] -version V -revision SHA -created EPOCH -source URL -repository REPO
//	image extract -archive FILE -platform linux/amd64 -file reroll -out PATH
//
// build prints the digest of the image index: the digest the image has in
// a registry once pushed with its manifests kept byte for byte (crane push
// --index, skopeo copy --preserve-digests). Nothing in the archive depends
// on the time or the machine it is built on, only on its inputs, so two
// builds of one commit with one Go toolchain have the same digest.
//
// It lives in its own module so that go-containerregistry stays out of the
// product's dependencies.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: image build|extract [flags]")
	}
	switch args[0] {
	case "build":
		return build(args[1:])
	case "extract":
		return extract(args[1:])
	}
	return fmt.Errorf("unknown command %q (want build or extract)", args[0])
}

// binaries is the repeatable -binary os/arch=path flag.
type binaries map[string]string

func (b binaries) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaries) Set(s string) error {
	platform, path, ok := strings.Cut(s, "=")
	if !ok || !strings.Contains(platform, "/") {
		return fmt.Errorf("want os/arch=path, got %q", s)
	}
	b[platform] = path
	return nil
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	bins := binaries{}
	fs.Var(bins, "binary", "os/arch=path of the reroll binary for that platform; repeatable")
	out := fs.String("out", "", "the OCI archive to write")
	var m Metadata
	fs.StringVar(&m.Version, "version", "", "the release, e.g. v0.1.0 (label org.opencontainers.image.version)")
	fs.StringVar(&m.Revision, "revision", "", "the git commit (label org.opencontainers.image.revision)")
	fs.StringVar(&m.Source, "source", "", "the source repository URL (label org.opencontainers.image.source)")
	fs.StringVar(&m.Repository, "repository", "", "the image repository, e.g. ghcr.io/reroll/reroll: names the image for docker load")
	created := fs.String("created", "", "SOURCE_DATE_EPOCH: seconds since the epoch, the commit's time; every timestamp in the image")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || len(bins) == 0 || m.Version == "" || m.Revision == "" || *created == "" {
		return fmt.Errorf("build needs -out, -binary, -version, -revision and -created")
	}
	epoch, err := strconv.ParseInt(*created, 10, 64)
	if err != nil {
		return fmt.Errorf("-created: %w", err)
	}
	m.Created = time.Unix(epoch, 0).UTC()
	idx, err := NewIndex(bins, m)
	if err != nil {
		return err
	}
	if err := WriteArchive(*out, idx, m); err != nil {
		return err
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Println(d)
	return nil
}

func extract(args []string) error {
	fs := flag.NewFlagSet("extract", flag.ContinueOnError)
	archive := fs.String("archive", "", "the OCI archive that build wrote")
	platform := fs.String("platform", "linux/amd64", "os/arch of the image to read")
	file := fs.String("file", "reroll", "path of the file in the image")
	out := fs.String("out", "", "where to write it (mode 0755)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *archive == "" || *out == "" {
		return fmt.Errorf("extract needs -archive and -out")
	}
	b, err := ExtractFile(*archive, *platform, *file)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, b, 0o755)
}
