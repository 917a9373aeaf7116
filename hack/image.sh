#!/usr/bin/env bash
# `make image`: builds Reroll's controller image without a container engine
# into dist/reroll-image_$VERSION.tar, an OCI image archive (a tarred OCI
# image layout) holding one image per platform of IMAGE_PLATFORMS, and
# writes its digest (sha256:...) to dist/reroll-image_$VERSION.digest.
#
# The binaries come from hack/build.sh, the image from hack/image (a Go
# program on go-containerregistry, in its own module). Every timestamp is
# SOURCE_DATE_EPOCH, the commit's time by default, so two builds of one
# commit have one digest. See docs/release.md for loading and pushing it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

: "${VERSION:=$(<VERSION)}"
: "${IMAGE_PLATFORMS:=linux/amd64 linux/arm64}"
: "${IMAGE_REPOSITORY:=ghcr.io/reroll/reroll}"
: "${IMAGE_SOURCE:=https://github.com/reroll/reroll}"
if [[ -z ${COMMIT:-} ]]; then
  COMMIT=$(git rev-parse HEAD)
  git diff --quiet HEAD -- || COMMIT+=-dirty
fi
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct)}"
export VERSION COMMIT SOURCE_DATE_EPOCH

work=.run/image
mkdir -p "$work" dist
args=()
for platform in $IMAGE_PLATFORMS; do
  bin="$work/${platform//\//_}/reroll"
  echo "building $bin"
  GOOS=${platform%/*} GOARCH=${platform#*/} hack/build.sh "$bin" ./cmd/reroll
  args+=(-binary "$platform=$root/$bin")
done

# hack/image is built into .run/ so that its flags do not need the module's
# directory as the working one.
go -C hack/image build -o "$root/$work/image" .
archive="dist/reroll-image_${VERSION}.tar"
digest=$("$work/image" build -out "$archive" "${args[@]}" -version "$VERSION" -revision "$COMMIT" \
  -created "$SOURCE_DATE_EPOCH" -source "$IMAGE_SOURCE" -repository "$IMAGE_REPOSITORY")
echo "$digest" >"dist/reroll-image_${VERSION}.digest"
echo "wrote $archive: $IMAGE_REPOSITORY:$VERSION@$digest"
