#!/usr/bin/env bash
# `make manifests`: regenerates what is derived from the code.
#
#   config/rbac/role.yaml  from the +kubebuilder:rbac markers (controller-gen)
#   config/components/csi/role.yaml  from cmd/reroll's marker (--enable-csi-integration)
#   config/components/pod-eviction/role.yaml  from internal/eviction's markers (--enable-pod-eviction)
#   api/v1alpha1/zz_generated.deepcopy.go, config/crd/bases/*.yaml and the
#                          chart's copy in charts/reroll/files/, from the API
#                          types and their markers (controller-gen)
#   deploy/reroll.yaml     the one-file install, from config/default (kubectl kustomize)
#
# test/e2e fails when either is stale (TestManifests_UpToDate).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

hack/tools.sh controller-gen
controller_gen="$(hack/tools.sh --dir controller-gen)/controller-gen"
# The base role: every package with markers but internal/eviction, whose
# markers are --enable-pod-eviction's (off by default), and internal/pin,
# whose are versioned config's (off by default). A package that gains
# markers must be listed here; the check below fails until it is.
base_rbac_packages=(internal/controller internal/projection internal/scope internal/validator internal/workload)
unlisted=$(grep -rl --include='*.go' '+kubebuilder:rbac' internal | xargs -r -n1 dirname | sort -u |
  grep -vxF -e internal/eviction -e internal/pin "${base_rbac_packages[@]/#/-e}" || true)
if [[ -n "$unlisted" ]]; then
  echo "RBAC markers in packages hack/manifests.sh does not list: $unlisted" >&2
  exit 1
fi
paths=$(printf './%s/...;' "${base_rbac_packages[@]}")
"$controller_gen" rbac:roleName=manager-role "paths=${paths%;}" output:rbac:artifacts:config=config/rbac
# --enable-csi-integration's permission, apart from the base role.
"$controller_gen" rbac:roleName=csi-role paths=./cmd/reroll/... output:rbac:artifacts:config=config/components/csi
# --enable-pod-eviction's permissions, apart from the base role.
"$controller_gen" rbac:roleName=pod-eviction-role paths=./internal/eviction/... output:rbac:artifacts:config=config/components/pod-eviction
# Versioned config's permissions (chart: versionedConfig.enabled), apart from the base role.
"$controller_gen" rbac:roleName=versioned-config-role paths=./internal/pin/... output:rbac:artifacts:config=config/components/versioned-config
"$controller_gen" object paths=./api/...
"$controller_gen" crd paths=./api/... output:crd:artifacts:config=config/crd/bases
# The Validator and ClusterValidator CRDs are installed by default
# (config/default), apart from the Projection CRD, which
# config/components/projections installs.
mv config/crd/bases/reroll.dev_validators.yaml config/crd/bases/reroll.dev_clustervalidators.yaml config/crd/validators/
mkdir -p charts/reroll/files
cp config/crd/bases/reroll.dev_projections.yaml charts/reroll/files/

# The kubectl built beside the control plane when there is one, else the
# machine's; both embed kustomize v5.5.0.
kubectl="$(hack/tools.sh --dir kube)/kubectl"
[[ -x "$kubectl" ]] || kubectl=$(command -v kubectl) || {
  echo "kubectl is needed to render deploy/reroll.yaml: run \`make tools\` or install kubectl" >&2
  exit 1
}
{
  echo "# Reroll in one file: cluster scope, namespace reroll-system."
  echo "# Generated from config/default by \`make manifests\`; do not edit."
  "$kubectl" kustomize config/default
} >deploy/reroll.yaml
echo "==> wrote config/rbac/role.yaml, config/components/csi/role.yaml, config/components/pod-eviction/role.yaml, config/components/versioned-config/role.yaml, the deepcopy functions, the CRDs and deploy/reroll.yaml"
