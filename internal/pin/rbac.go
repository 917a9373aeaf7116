package pin

// The permissions of versioned config: create the copies, and patch them (a
// claim, the owners an older Reroll wrote removed, a rotation record); list
// a Deployment's ReplicaSets, and a StatefulSet's or DaemonSet's
// ControllerRevisions, to find the revision an automatic undo returns to. Kubernetes RBAC cannot limit create by name, so they cover every
// ConfigMap and Secret of the watched namespaces; they are off by default and kept out of the base
// role: `make manifests` generates them into
// config/components/versioned-config/role.yaml, and the Helm chart adds
// them with versionedConfig.enabled. Without them a versioned workload
// rolls unpinned, with an Unpinned Warning Event saying why.

// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=replicasets;controllerrevisions,verbs=list
