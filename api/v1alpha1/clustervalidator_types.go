package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterValidator is the cluster-scoped variant of Validator, for a
// platform team: its rules apply to the ConfigMaps or Secrets it selects
// (by name or label selector, as a Validator's) in every namespace whose
// labels match spec.namespaceSelector. It holds the rollout of content
// that fails a rule, and acts at write time, exactly as a Validator of
// each of those namespaces would; findings name it
// "ClusterValidator/<name>". Being cluster-scoped, only a ClusterRole can
// grant the right to write one: a namespace's admins cannot.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=reroll,shortName=cval
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.kind`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterValidator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterValidatorSpec `json:"spec"`
	Status ValidatorStatus      `json:"status,omitempty"`
}

// ClusterValidatorSpec is a ValidatorSpec and the namespaces it applies
// in. (The ValidatorSpec's validation, names or selector, applies.)
type ClusterValidatorSpec struct {
	// NamespaceSelector selects the namespaces whose objects are checked,
	// by the namespaces' labels; {} selects every namespace.
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// ValidatorSpec selects the objects in those namespaces and lists the
	// rules, as a Validator's spec.
	ValidatorSpec `json:",inline"`
}

// ClusterValidatorList is a list of ClusterValidators.
//
// +kubebuilder:object:root=true
type ClusterValidatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterValidator `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterValidator{}, &ClusterValidatorList{})
}
