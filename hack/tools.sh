#!/usr/bin/env bash
# Builds the binaries of the local control plane into bin/, one folder per
# tool and version, so a second run finds them and starts at once.
#
#   hack/tools.sh            build everything that is missing
#   hack/tools.sh kube kwok  build only the named tools
#
# Tools: etcd, kube (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl),
# kwok, helm, controller-gen, helm-docs. The first build from empty Go caches takes about ten minutes on
# two cores; every later run takes well under a second.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tools/versions.env
source "$root/hack/tools/versions.env"
bin="$root/bin"

# Prints the folder that holds a tool's binaries; the test suites and
# hack/controlplane read the same layout.
dir_of() {
  case "$1" in
    etcd) echo "$bin/etcd-$ETCD_VERSION" ;;
    kube) echo "$bin/kube-$KUBE_VERSION" ;;
    kwok) echo "$bin/kwok-$KWOK_VERSION" ;;
    helm) echo "$bin/helm-$HELM_VERSION-k8s1.$HELM_KUBE_MINOR" ;;
    controller-gen) echo "$bin/controller-gen-$CONTROLLER_TOOLS_VERSION" ;;
    helm-docs) echo "$bin/helm-docs-$HELM_DOCS_VERSION" ;;
    *) echo "unknown tool $1 (want etcd, kube, kwok, helm, controller-gen or helm-docs)" >&2; return 1 ;;
  esac
}

# Runs a long build with a line of progress every 30 seconds, because a
# newcomer otherwise stares at a silent terminal for minutes.
with_progress() {
  local what=$1; shift
  local start=$SECONDS
  "$@" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if (( (SECONDS - start) % 30 == 0 )) && kill -0 "$pid" 2>/dev/null; then
      echo "    ... still building $what ($((SECONDS - start))s)"
    fi
  done
  wait "$pid"
  echo "==> built $what in $((SECONDS - start))s"
}

# Go caches of this run's builds. The tools share nothing with the project's
# own build but the standard library, and a cold build leaves about 6 GB of
# build and module cache behind (kube alone: 4.5 GB and 1.2 GB), which is
# what a fresh machine's disk ran out of in the project's tests. So the
# builds use a throwaway GOCACHE and GOMODCACHE, removed on exit once bin/
# holds the binaries. REROLL_TOOLS_GO_CACHES=keep builds with the usual
# caches instead (a developer who rebuilds tools often).
scratch=""
use_scratch_caches() {
  [[ -n "$scratch" || "${REROLL_TOOLS_GO_CACHES:-}" == keep ]] && return 0
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/reroll-tools-XXXXXX")
  trap remove_scratch_caches EXIT
  export GOCACHE="$scratch/build" GOMODCACHE="$scratch/mod"
  echo "    (Go caches of the tool builds in $scratch, removed when done)"
}
remove_scratch_caches() {
  [[ -n "$scratch" ]] || return 0
  # The module cache is read-only by design; go clean knows how to remove it.
  go clean -modcache >/dev/null 2>&1 || chmod -R u+w "$scratch"
  rm -rf "$scratch"
}

build() {
  local tool=$1 out
  out=$(dir_of "$tool")
  local ldflags
  case "$tool" in
    etcd)
      [[ -x "$out/etcd" ]] && return 0
      echo "==> building etcd $ETCD_VERSION into $out (about a minute on a cold cache)"
      use_scratch_caches
      mkdir -p "$out.tmp"
      (cd "$root/hack/tools/etcd" && with_progress etcd go build -trimpath -ldflags "-s -w" -o "$out.tmp/etcd" .)
      ;;
    kube)
      [[ -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" && -x "$out/kube-scheduler" && -x "$out/kubectl" ]] && return 0
      echo "==> building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $KUBE_VERSION into $out (about five minutes on a cold cache)"
      use_scratch_caches
      mkdir -p "$out.tmp"
      ldflags="-s -w"
      for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=32 -X $pkg.gitTreeState=clean"
      done
      (cd "$root/hack/tools/kube" && with_progress "kube $KUBE_VERSION" go build -trimpath -ldflags "$ldflags" -o "$out.tmp/" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler \
        k8s.io/kubernetes/cmd/kubectl)
      ;;
    kwok)
      [[ -x "$out/kwok" ]] && return 0
      echo "==> building kwok $KWOK_VERSION into $out (about two minutes on a cold cache)"
      use_scratch_caches
      mkdir -p "$out.tmp"
      GOBIN="$out.tmp" with_progress kwok go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
      ;;
    helm)
      [[ -x "$out/helm" ]] && return 0
      echo "==> building helm $HELM_VERSION into $out (about two minutes on a cold cache)"
      use_scratch_caches
      mkdir -p "$out.tmp"
      # As helm's Makefile does for a release: the default Kubernetes
      # version of `helm template` and `helm lint`.
      ldflags="-s -w"
      for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
        ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$HELM_KUBE_MINOR"
      done
      GOBIN="$out.tmp" with_progress helm go install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
      ;;
    controller-gen)
      # Generates config/rbac/role.yaml from the +kubebuilder:rbac markers
      # (`make manifests`); installed from its own module, never required by
      # the project's go.mod.
      [[ -x "$out/controller-gen" ]] && return 0
      echo "==> building controller-gen $CONTROLLER_TOOLS_VERSION into $out (about a minute on a cold cache)"
      use_scratch_caches
      mkdir -p "$out.tmp"
      GOBIN="$out.tmp" with_progress controller-gen go install -trimpath -ldflags "-s -w" "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION"
      ;;
    helm-docs)
      # Generates charts/reroll/README.md from values.yaml's "# --" comments
      # (`make chart-docs`); installed from its own module.
      [[ -x "$out/helm-docs" ]] && return 0
      echo "==> building helm-docs $HELM_DOCS_VERSION into $out (about a minute on a cold cache)"
      use_scratch_caches
      mkdir -p "$out.tmp"
      GOBIN="$out.tmp" with_progress helm-docs go install -trimpath -ldflags "-s -w" "github.com/norwoodj/helm-docs/cmd/helm-docs@$HELM_DOCS_VERSION"
      ;;
  esac
  # Publish the folder only once every binary in it is complete, so an
  # interrupted build never leaves a half-written tool that looks cached.
  rm -rf "$out"
  mv "$out.tmp" "$out"
}

if [[ "${1:-}" == "--dir" ]]; then
  dir_of "$2"
  exit 0
fi

tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(etcd kube kwok helm controller-gen helm-docs)
for t in "${tools[@]}"; do
  dir_of "$t" >/dev/null
  build "$t"
done
