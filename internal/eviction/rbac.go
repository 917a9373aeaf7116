package eviction

// The permissions of restarts by eviction (--enable-pod-eviction): list and
// watch pods (the cache that finds a workload's pods and sees their
// replacements Ready) and create pods/eviction (Evict). They are off by
// default, so these markers are kept out of the base role: `make manifests`
// generates them into config/components/pod-eviction/role.yaml, and the
// Helm chart adds them with podEviction.enabled.

// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
