package observe

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/revert"
)

// Revision implements plan.View: the Deployment's ReplicaSet whose pod
// template, without the pod-template-hash label, has the fingerprint,
// read from the API server (ReplicaSets are not cached); nil for other
// kinds.
func (v workloadView) Revision(fingerprint string) (*corev1.PodTemplateSpec, error) {
	d, ok := v.obj.(*appsv1.Deployment)
	if !ok || d.Spec.Selector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, nil
	}
	var list appsv1.ReplicaSetList
	if err := v.d.APIReader.List(v.Ctx, &list, client.InNamespace(d.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the ReplicaSets of Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	for i := range list.Items {
		rs := &list.Items[i]
		if c := metav1.GetControllerOf(rs); c == nil || c.UID != d.UID {
			continue
		}
		t := rs.Spec.Template.DeepCopy()
		delete(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		if revert.Fingerprint(t) == fingerprint {
			return t, nil
		}
	}
	return nil, nil
}
