package main

// The permission --enable-csi-integration needs: reading the Secrets Store
// CSI Driver's SecretProviderClassPodStatuses. It is kept out of
// internal/..., whose markers make the base role (config/rbac/role.yaml), so
// that the base grants nothing for a flag that is off by default; `make
// manifests` generates it into config/components/csi/role.yaml, and the Helm
// chart adds it with csiIntegration.enabled.

// +kubebuilder:rbac:groups=secrets-store.csi.x-k8s.io,resources=secretproviderclasspodstatuses,verbs=get;list;watch
