#!/usr/bin/env bash
# `make krew-manifest`: builds kubectl-reroll for each PLATFORM argument
# (os/arch) into dist/, packs each with LICENSE (tar.gz, with the completion
# shim kubectl_complete-reroll; zip for Windows),
# and renders plugins/reroll.yaml into dist/krew/reroll.yaml with VERSION
# and each archive's SHA-256. A platform not built keeps its {{...}}
# placeholder, and the script says so: such a manifest is not for release.
# The binaries are built by hack/build.sh (version, commit and date stamped);
# the archives list their files in one order, owned by root and dated
# SOURCE_DATE_EPOCH (the commit's time), so a rebuild of a commit matches.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
: "${VERSION:?set VERSION, e.g. VERSION=v1.2.3}"
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct)}"
export VERSION SOURCE_DATE_EPOCH
dist="$root/dist"
mkdir -p "$dist/krew"
manifest="$dist/krew/reroll.yaml"
{
  echo "# krew plugin manifest of kubectl reroll $VERSION, rendered by hack/krew.sh from plugins/reroll.yaml."
  # The template's own header comment says it is not installable; drop it.
  sed -e '1,/^apiVersion:/{/^#/d}' -e "s/{{VERSION}}/$VERSION/g" plugins/reroll.yaml
} >"$manifest"

for platform in "$@"; do
  os=${platform%/*} arch=${platform#*/}
  name="kubectl-reroll_${VERSION}_${os}_${arch}"
  work="$dist/$name"
  rm -rf "$work" && mkdir -p "$work"
  bin=kubectl-reroll
  [[ $os == windows ]] && bin=kubectl-reroll.exe
  echo "building $name"
  GOOS=$os GOARCH=$arch hack/build.sh "$work/$bin" ./cmd/kubectl-reroll
  cp LICENSE "$work/"
  touch -d "@$SOURCE_DATE_EPOCH" "$work/$bin" "$work/LICENSE"
  if [[ $os == windows ]]; then
    archive="$dist/$name.zip"
    rm -f "$archive"
    (cd "$work" && python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED); [z.write(f) for f in sys.argv[2:]]; z.close()' "$archive" "$bin" LICENSE)
  else
    # kubectl (1.26 and later) completes a plugin's arguments through
    # kubectl_complete-reroll on PATH (docs/kubectl-plugin.md).
    cp plugins/kubectl_complete-reroll "$work/"
    touch -d "@$SOURCE_DATE_EPOCH" "$work/kubectl_complete-reroll"
    archive="$dist/$name.tar.gz"
    tar -C "$work" --owner=0 --group=0 --numeric-owner -cf - "$bin" kubectl_complete-reroll LICENSE | gzip -n >"$archive"
  fi
  rm -rf "$work"
  sum=$(sha256sum "$archive" | cut -d' ' -f1)
  sed -i "s/{{SHA256_${os}_${arch}}}/$sum/" "$manifest"
  echo "  $archive sha256 $sum"
done

if grep -q '{{SHA256_' "$manifest"; then
  echo "note: $manifest still has placeholders for platforms not built ($(grep -o '{{SHA256_[a-z0-9_]*}}' "$manifest" | tr '\n' ' ')); build every platform before a release"
fi
echo "wrote $manifest"
echo "try it: kubectl krew install --manifest=$manifest --archive=<the archive of this machine's platform>"
