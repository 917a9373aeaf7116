package pin

// The permissions of the copies' garbage collection and rotation receipts
// (internal/pingc), part of versioned config's role: delete a copy that
// nothing names any more, and list what could name one (pods,
// ReplicaSets, ControllerRevisions, Jobs), only in the namespaces where
// copies exist (list only: no watch, no cache). The receipt's record on a
// copy is the patch above. Without them the collector deletes nothing and
// logs which permission is missing.

// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=apps,resources=replicasets;controllerrevisions,verbs=list
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=list
