package workload

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ControllerName is unique per kind: "deployment" for the built-in kinds,
// "<kind>.<group>" for others (two groups may both have a StatefulSet).
// It names the kind's controller and its admission webhook's path.
func ControllerName(k Kind) string {
	name := strings.ToLower(k.Name())
	if u, ok := k.(Unstructured); ok && u.GVK.Group != "" {
		name += "." + u.GVK.Group
	}
	return name
}

// builtinPodControllers are the pod controllers of the built-in workload
// kinds: a Deployment's or Argo Rollout's ReplicaSets, a DeploymentConfig's
// ReplicationControllers, StatefulSets, DaemonSets and Jobs (a CronJob's
// too).
var builtinPodControllers = []schema.GroupKind{
	{Group: "apps", Kind: "ReplicaSet"}, {Group: "", Kind: "ReplicationController"},
	{Group: "apps", Kind: "StatefulSet"}, {Group: "apps", Kind: "DaemonSet"}, {Group: "batch", Kind: "Job"},
}

// PodControllers returns the kinds of the controllers of pods that Reroll
// restarts through a workload of its own, not through the pods'
// annotations: the pod controllers of the built-in kinds, and each custom
// kind and pod owner of kinds.
func PodControllers(kinds []Kind) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, gk := range builtinPodControllers {
		out[gk] = true
	}
	for _, k := range kinds {
		switch k := k.(type) {
		case PodOwner:
			out[k.GVK.GroupKind()] = true
		case Unstructured:
			out[k.GVK.GroupKind()] = true
		}
	}
	return out
}
