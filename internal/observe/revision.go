package observe

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/revert"
)

// Revision implements plan.View: the workload's earlier pod template whose
// revert.Fingerprint is fingerprint, read from the API server (ReplicaSets
// and ControllerRevisions are not cached): for a Deployment, the template
// of a ReplicaSet it controls, without the pod-template-hash label (as
// kubectl rollout undo restores it); for a StatefulSet or a DaemonSet, the
// template in a ControllerRevision it controls (RevisionTemplate); nil for
// other kinds, a workload without a valid selector, or when none matches.
// The error is the list's.
func (v workloadView) Revision(fingerprint string) (*corev1.PodTemplateSpec, error) {
	switch w := v.obj.(type) {
	case *appsv1.Deployment:
		return v.replicaSetRevision(w, fingerprint)
	case *appsv1.StatefulSet:
		return v.controllerRevision(w, w.Spec.Selector, "StatefulSet", fingerprint)
	case *appsv1.DaemonSet:
		return v.controllerRevision(w, w.Spec.Selector, "DaemonSet", fingerprint)
	}
	return nil, nil
}

// replicaSetRevision is Revision for Deployment d.
func (v workloadView) replicaSetRevision(d *appsv1.Deployment, fingerprint string) (*corev1.PodTemplateSpec, error) {
	if d.Spec.Selector == nil {
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

// controllerRevision is Revision for a StatefulSet or DaemonSet w (kind
// names it in the error): the ControllerRevisions its controller keeps
// carry the template's labels, so w's selector finds them; only those w
// controls (owner reference with w's UID) count, and a revision whose data
// does not decode is skipped.
func (v workloadView) controllerRevision(w client.Object, selector *metav1.LabelSelector, kind, fingerprint string) (*corev1.PodTemplateSpec, error) {
	if selector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, nil
	}
	var list appsv1.ControllerRevisionList
	if err := v.d.APIReader.List(v.Ctx, &list, client.InNamespace(w.GetNamespace()), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the ControllerRevisions of %s %s/%s: %w", kind, w.GetNamespace(), w.GetName(), err)
	}
	for i := range list.Items {
		cr := &list.Items[i]
		if c := metav1.GetControllerOf(cr); c == nil || c.UID != w.GetUID() {
			continue
		}
		t, err := RevisionTemplate(cr.Data.Raw)
		if err != nil || t == nil {
			continue
		}
		if revert.Fingerprint(t) == fingerprint {
			return t, nil
		}
	}
	return nil, nil
}

// RevisionTemplate decodes the pod template from a ControllerRevision's
// data as the StatefulSet and DaemonSet controllers store it: a strategic
// merge patch {"spec":{"template":{...,"$patch":"replace"}}} (the
// directive, not a field of a pod template, is dropped), which kubectl
// rollout undo applies to return to that revision. It returns nil, nil
// when the data holds no template (a revision of another kind), and an
// error when the data is not JSON of that shape.
func RevisionTemplate(data []byte) (*corev1.PodTemplateSpec, error) {
	var patch struct {
		Spec struct {
			Template map[string]json.RawMessage `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, fmt.Errorf("decoding a ControllerRevision's data: %w", err)
	}
	if patch.Spec.Template == nil {
		return nil, nil
	}
	delete(patch.Spec.Template, "$patch")
	raw, err := json.Marshal(patch.Spec.Template)
	if err != nil {
		return nil, fmt.Errorf("encoding a ControllerRevision's template: %w", err)
	}
	var t corev1.PodTemplateSpec
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("decoding a ControllerRevision's template: %w", err)
	}
	return &t, nil
}
