// Package e2e holds the end-to-end tests, built only with `-tags e2e`
// (`make test-e2e`): the Helm chart and the Kustomize manifests installed on a
// local control plane, and the built reroll binary run as a local process with
// the token of the ServiceAccount they create, so that their RBAC is proven
// sufficient for Reroll's behaviour, and minimal.
package e2e
