package scope

import (
	appsv1 "k8s.io/api/apps/v1"
)

// trimDeployment drops, from a cached Deployment, the fields outside its
// pod template and metadata that no reader of the cache uses. It keeps:
//
//   - spec.replicas: workload.Progress, workload.DesiredPods, kstatus
//     (delivery.Health);
//   - spec.selector: eviction (the workload's pods), observe.Revision (its
//     ReplicaSets), the change set's members;
//   - spec.template, as envtrim.Keep leaves it (Transform trims it, after
//     holding revert.Sums of the whole template);
//   - spec.paused: workload.Pausable (Reloader's pause-period);
//   - spec.progressDeadlineSeconds: workload.Progress (the kind's
//     deadline) and kstatus;
//   - spec.strategy.type: nothing reads it today; it costs no allocation
//     and says which way the Deployment rolls in a dump of the cache;
//   - status: observedGeneration and the replica counts (Progress,
//     kstatus), and each condition's type, status, reason and times
//     (kstatus reads Progressing's reason ProgressDeadlineExceeded and
//     NewReplicaSetAvailable, Available's status); a condition's message
//     is kept only for types other than the Deployment controller's own
//     (Available, Progressing, ReplicaFailure): kstatus reports the
//     message of a Reconciling or Stalled condition, and ignores those.
//
// It drops spec.strategy.rollingUpdate, spec.minReadySeconds,
// spec.revisionHistoryLimit, status.collisionCount and
// status.terminatingReplicas. Reroll writes a Deployment only by strategic
// merge patches between two copies (workload.Patch), so a field missing
// from both is missing from the patch and the API server keeps it.
func trimDeployment(d *appsv1.Deployment) {
	s := &d.Spec
	*s = appsv1.DeploymentSpec{
		Replicas: s.Replicas, Selector: s.Selector, Template: s.Template, Paused: s.Paused,
		ProgressDeadlineSeconds: s.ProgressDeadlineSeconds,
		Strategy:                appsv1.DeploymentStrategy{Type: s.Strategy.Type},
	}
	st := &d.Status
	*st = appsv1.DeploymentStatus{
		ObservedGeneration: st.ObservedGeneration, Replicas: st.Replicas, UpdatedReplicas: st.UpdatedReplicas,
		ReadyReplicas: st.ReadyReplicas, AvailableReplicas: st.AvailableReplicas, UnavailableReplicas: st.UnavailableReplicas,
		Conditions: st.Conditions,
	}
	for i := range st.Conditions {
		switch st.Conditions[i].Type {
		case appsv1.DeploymentAvailable, appsv1.DeploymentProgressing, appsv1.DeploymentReplicaFailure:
			st.Conditions[i].Message = ""
		}
	}
}

// trimStatefulSet is trimDeployment for a StatefulSet. It keeps
// spec.replicas, spec.selector, spec.template (as trimDeployment) and
// spec.updateStrategy whole (workload.OnDelete reads its type, kstatus its
// type and rollingUpdate.partition); status: observedGeneration, the
// replica counts, currentRevision and updateRevision (workload.Progress,
// kstatus) and the conditions whole (the StatefulSet controller sets none
// today; kstatus reads a Reconciling or Stalled one).
//
// It drops spec.volumeClaimTemplates (whole PersistentVolumeClaims, read
// by nothing: they name no ConfigMap or Secret, and the fingerprint covers
// the pod template only), spec.serviceName, spec.podManagementPolicy,
// spec.revisionHistoryLimit, spec.minReadySeconds,
// spec.persistentVolumeClaimRetentionPolicy, spec.ordinals and
// status.collisionCount.
func trimStatefulSet(s *appsv1.StatefulSet) {
	sp := &s.Spec
	*sp = appsv1.StatefulSetSpec{Replicas: sp.Replicas, Selector: sp.Selector, Template: sp.Template, UpdateStrategy: sp.UpdateStrategy}
	st := &s.Status
	*st = appsv1.StatefulSetStatus{
		ObservedGeneration: st.ObservedGeneration, Replicas: st.Replicas, ReadyReplicas: st.ReadyReplicas,
		CurrentReplicas: st.CurrentReplicas, UpdatedReplicas: st.UpdatedReplicas, AvailableReplicas: st.AvailableReplicas,
		CurrentRevision: st.CurrentRevision, UpdateRevision: st.UpdateRevision, Conditions: st.Conditions,
	}
}

// trimDaemonSet is trimDeployment for a DaemonSet. It keeps spec.selector,
// spec.template (as trimDeployment), spec.updateStrategy.type
// (workload.OnDelete); status: observedGeneration, the counts (Progress,
// workload.DesiredPods, kstatus) and the conditions whole (as a
// StatefulSet's).
//
// It drops spec.updateStrategy.rollingUpdate, spec.minReadySeconds,
// spec.revisionHistoryLimit and status.collisionCount.
func trimDaemonSet(d *appsv1.DaemonSet) {
	sp := &d.Spec
	*sp = appsv1.DaemonSetSpec{Selector: sp.Selector, Template: sp.Template, UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: sp.UpdateStrategy.Type}}
	st := &d.Status
	st.CollisionCount = nil
}
