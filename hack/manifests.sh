#!/usr/bin/env bash
# `make manifests`: regenerates what is derived from the code.
#
#   config/rbac/role.yaml  from the +kubebuilder:rbac markers (controller-gen)
#   config/components/csi/role.yaml  from cmd/reroll's marker (--enable-csi-integration)
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
"$controller_gen" rbac:roleName=manager-role paths=./internal/... output:rbac:artifacts:config=config/rbac
# --enable-csi-integration's permission, apart from the base role.
"$controller_gen" rbac:roleName=csi-role paths=./cmd/reroll/... output:rbac:artifacts:config=config/components/csi
"$controller_gen" object paths=./api/...
"$controller_gen" crd paths=./api/... output:crd:artifacts:config=config/crd/bases
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
echo "==> wrote config/rbac/role.yaml, config/components/csi/role.yaml, the deepcopy functions, the CRDs and deploy/reroll.yaml"
