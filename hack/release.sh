#!/usr/bin/env bash
# `make release`: builds every artifact of the release VERSION (the VERSION
# file) into a fresh dist/, and SHA256SUMS over them. See docs/release.md.
#
#   reroll-image_$VERSION.tar          the controller image, linux/amd64+arm64,
#                                      an OCI archive (hack/image.sh)
#   reroll-image_$VERSION.digest       its digest, sha256:...
#   kubectl-reroll_$VERSION_<os>_<arch>.tar.gz|.zip
#                                      the plugin for linux, darwin, windows x
#                                      amd64, arm64 (hack/krew.sh)
#   krew/reroll.yaml                   the krew manifest naming those archives
#   reroll-<chart version>.tgz         the Helm chart (helm package), appVersion
#                                      VERSION
#   reroll.yaml                        deploy/reroll.yaml with the image pinned
#                                      by digest (tag@sha256:...)
#   SHA256SUMS                         sha256sum of every file above
#
# A release is cut from a clean tree: a modified one would stamp "-dirty"
# into every binary. ALLOW_DIRTY=1 builds anyway, for a try.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

file_version=$(<VERSION)
: "${VERSION:=$file_version}"
if [[ $VERSION != "$file_version" ]]; then
  echo "VERSION=$VERSION differs from the VERSION file ($file_version): a release is what the file says; edit it and commit" >&2
  exit 1
fi
if ! git diff --quiet HEAD -- && [[ -z ${ALLOW_DIRTY:-} ]]; then
  echo "the tree has uncommitted changes; commit them, or set ALLOW_DIRTY=1 for a build that is not a release" >&2
  exit 1
fi
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct)}"
: "${IMAGE_REPOSITORY:=ghcr.io/reroll/reroll}"
export VERSION SOURCE_DATE_EPOCH IMAGE_REPOSITORY

rm -rf dist
mkdir -p dist

echo "==> the image"
hack/image.sh
digest=$(<"dist/reroll-image_${VERSION}.digest")

echo "==> the plugin archives and the krew manifest"
hack/krew.sh linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
if grep -q '{{' dist/krew/reroll.yaml; then
  echo "dist/krew/reroll.yaml still has placeholders" >&2
  exit 1
fi

echo "==> the chart"
hack/tools.sh helm
helm="$(hack/tools.sh --dir helm)/helm"
"$helm" package charts/reroll --app-version "$VERSION" --destination dist

echo "==> the one-file manifest, pinned by digest"
image_line="image: $IMAGE_REPOSITORY:$VERSION"
n=$(grep -c "^ *$image_line\$" deploy/reroll.yaml || true)
if [[ $n != 1 ]]; then
  echo "deploy/reroll.yaml should name $IMAGE_REPOSITORY:$VERSION once, it does $n times: run make manifests, and check config/manager/kustomization.yaml's newTag" >&2
  exit 1
fi
{
  echo "# Reroll $VERSION in one file: cluster scope, namespace reroll-system; the image pinned by digest."
  sed -e '/^# Reroll in one file/d' -e "s|$image_line\$|$image_line@$digest|" deploy/reroll.yaml
} >dist/reroll.yaml

echo "==> SHA256SUMS"
(cd dist && find . -type f ! -name SHA256SUMS | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
cat dist/SHA256SUMS
echo "==> release $VERSION in dist/; image $IMAGE_REPOSITORY:$VERSION@$digest"
