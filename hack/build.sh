#!/usr/bin/env bash
# hack/build.sh OUT PACKAGE: builds one release binary of PACKAGE
# (./cmd/reroll or ./cmd/kubectl-reroll) to OUT, for GOOS/GOARCH from the
# environment (default: this machine's). The one place that says how a
# shipped binary is built: `make build`, `make image`, hack/krew.sh and the
# Dockerfile all call it, and cmd/reroll's TestDockerfile checks that the
# Dockerfile does.
#
#   static:        CGO_ENABLED=0
#   reproducible:  -trimpath -buildvcs=false, and the version stamped with
#                  -ldflags -X from the values below (no wall-clock time)
#   small:         -s -w
#
# The stamped values (internal/version), each overridable by the environment:
#   VERSION            the VERSION file at the repository root
#   COMMIT             git rev-parse HEAD, "-dirty" appended when tracked files
#                      differ from it; "unknown" without git (a Docker build)
#   SOURCE_DATE_EPOCH  the commit's time (git log -1 --format=%ct); the build
#                      date printed is this, in UTC
set -euo pipefail

out=${1:?usage: hack/build.sh OUT PACKAGE} pkg=${2:?usage: hack/build.sh OUT PACKAGE}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

: "${VERSION:=$(<VERSION)}"
if [[ -z ${COMMIT:-} ]]; then
  if COMMIT=$(git rev-parse HEAD 2>/dev/null); then
    git diff --quiet HEAD -- 2>/dev/null || COMMIT+=-dirty
  else
    COMMIT=unknown
  fi
fi
if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || echo 0)
fi
date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

v=github.com/reroll/reroll/internal/version
CGO_ENABLED=0 go build -trimpath -buildvcs=false \
  -ldflags "-s -w -X $v.version=$VERSION -X $v.commit=$COMMIT -X $v.date=$date" \
  -o "$out" "$pkg"
