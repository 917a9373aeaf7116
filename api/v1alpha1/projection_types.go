package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Projection keeps fields of one object, its target, equal to values read
// from ConfigMaps and Secrets in its own namespace, or to a keyed digest of
// them. Reroll reads the sources and writes the target as the
// ServiceAccount spec.serviceAccountName (impersonation), with server-side
// apply under the field manager "reroll-projection/<name>", and only the fields
// listed in spec.fields.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=reroll,shortName=proj
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Last write",type=date,JSONPath=`.status.lastWriteTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Projection struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProjectionSpec   `json:"spec"`
	Status ProjectionStatus `json:"status,omitempty"`
}

// ProjectionSpec says what to read, where to write it, and as whom. A
// ${name} in a template that names no source is refused by the controller
// (Ready=False, InvalidSpec): a CEL rule for it exceeds the API server's
// cost budget.
//
// +kubebuilder:validation:XValidation:rule="self.fields.all(f, !has(f.source) || self.sources.exists(s, s.name == f.source))",message="fields[].source must name an entry of sources"
// +kubebuilder:validation:XValidation:rule="self.fields.all(f, !has(f.digestOf) || f.digestOf.all(n, self.sources.exists(s, s.name == n)))",message="fields[].digestOf must name entries of sources"
type ProjectionSpec struct {
	// ServiceAccountName is the ServiceAccount of the Projection's namespace
	// that Reroll impersonates to read the sources and write the target, so
	// the namespace's own RBAC decides what may be copied where. Empty means
	// Reroll's default (--projection-service-account, chart value
	// projections.defaultServiceAccount).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Sources are the ConfigMap and Secret keys that fields read, each
	// under a name unique in the Projection.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Sources []Source `json:"sources"`

	// Target is the object whose fields are written, in the Projection's
	// namespace. It cannot be changed: create another Projection instead.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="target is immutable; create another Projection"
	Target Target `json:"target"`

	// Fields are the fields of the target that are written, each at a path
	// unique in the Projection.
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Fields []Field `json:"fields"`

	// Prune, when true, removes the fields this Projection wrote from the
	// target when the Projection is deleted. By default they stay as they
	// are.
	// +optional
	Prune bool `json:"prune,omitempty"`

	// Interval is how often the target is read again to catch a field that
	// another writer changed (and the sources, for changes Reroll's watch of
	// ConfigMaps and Secrets does not see). Each check costs one GET of the
	// target and one of each source.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// Source is one key of a ConfigMap or a Secret in the Projection's namespace.
//
// +kubebuilder:validation:XValidation:rule="has(self.secretKeyRef) != has(self.configMapKeyRef)",message="set exactly one of secretKeyRef and configMapKeyRef"
type Source struct {
	// Name is how fields refer to this source: fields[].source,
	// fields[].digestOf, and ${name} in fields[].template.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Name string `json:"name"`

	// SecretKeyRef selects a key of a Secret.
	// +optional
	SecretKeyRef *KeySelector `json:"secretKeyRef,omitempty"`

	// ConfigMapKeyRef selects a key of a ConfigMap (data or binaryData).
	// +optional
	ConfigMapKeyRef *KeySelector `json:"configMapKeyRef,omitempty"`
}

// KeySelector selects one key of a ConfigMap or Secret, as a pod's
// env[].valueFrom does.
type KeySelector struct {
	// Name of the ConfigMap or Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`

	// Key within the object's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`

	// Optional, when true, lets the object or the key be absent: the
	// fields that need the value are then not written (and removed if this
	// Projection wrote them), and a digest counts the absence. When false,
	// an absent source stops the Projection with Ready=False.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// Target names the object whose fields are written.
type Target struct {
	// APIVersion of the target, e.g. "goharbor.io/v1beta1".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`

	// Kind of the target, e.g. "HarborCluster".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`

	// Name of the target, in the Projection's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Encoding is how a source's value is written.
// +kubebuilder:validation:Enum=String;Base64
type Encoding string

const (
	// EncodingString writes the value as it is; it must be valid UTF-8.
	EncodingString Encoding = "String"
	// EncodingBase64 writes the standard base64 encoding of the value.
	EncodingBase64 Encoding = "Base64"
)

// Field is one field of the target and its value: exactly one of source,
// template and digestOf.
//
// +kubebuilder:validation:XValidation:rule="[has(self.source), has(self.template), has(self.digestOf)].exists_one(x, x)",message="set exactly one of source, template and digestOf"
// +kubebuilder:validation:XValidation:rule="!has(self.encoding) || has(self.source)",message="encoding applies to source only"
// +kubebuilder:validation:XValidation:rule="!self.path.matches('^(apiVersion|kind|status)([.\\\\[]|$)')",message="path may not be apiVersion, kind or status"
// +kubebuilder:validation:XValidation:rule="!self.path.startsWith('metadata') || self.path.matches('^metadata[.](annotations|labels)\\\\[\"[^\"]+\"\\\\]$')",message="in metadata, path may only be an annotation or a label: metadata.annotations[\"<key>\"]"
type Field struct {
	// Path of the field in the target: names separated by dots, with
	// ["..."] for a name that holds dots or slashes, e.g.
	// spec.storage.s3.accessKey or
	// spec.template.metadata.annotations["example.com/restartedAt"]. Only
	// objects (maps) are traversed; list items cannot be addressed. Missing
	// parents are created.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][-A-Za-z0-9_]*([.][A-Za-z_][-A-Za-z0-9_]*|\["[^"]+"\])*$`
	Path string `json:"path"`

	// Source writes the value of the named source.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Source string `json:"source,omitempty"`

	// Encoding of a source's value: String (default) or Base64.
	// +optional
	Encoding Encoding `json:"encoding,omitempty"`

	// Template writes a string in which each ${name} is replaced with the
	// value of the named source, as Flux's post-build substitution does.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Template *string `json:"template,omitempty"`

	// DigestOf writes a keyed digest (HMAC-SHA-256 under Reroll's key, 32
	// hex characters) of the named sources' values: it changes whenever one
	// of them does and reveals nothing about them. This is the signal for
	// operators that read a Secret without watching it.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	DigestOf []string `json:"digestOf,omitempty"`
}

// ProjectionStatus is what Reroll last did and saw.
type ProjectionStatus struct {
	// ObservedGeneration is the generation of the spec the conditions
	// describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (the Projection works: reason Projected, or why
	// not) and Synced (the target holds the sources' current values:
	// reason Written or UpToDate, or why not).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastWriteTime is when Reroll last wrote the target.
	// +optional
	LastWriteTime *metav1.Time `json:"lastWriteTime,omitempty"`

	// SourcesDigest is a keyed digest (HMAC-SHA-256 under Reroll's key, 32
	// hex characters) of every source's value at the last write; it tells
	// that the sources changed without revealing them.
	// +optional
	SourcesDigest string `json:"sourcesDigest,omitempty"`

	// Fields are the paths Reroll wrote at the last write; a path that
	// another field manager owns afterwards was rewritten.
	// +optional
	// +listType=atomic
	Fields []string `json:"fields,omitempty"`

	// Conflict records the rewrites by another field manager seen within
	// the current window; past the limit the Projection stops writing.
	// +optional
	Conflict *Conflict `json:"conflict,omitempty"`
}

// Conflict counts how often another field manager rewrote a projected
// field within a time window.
type Conflict struct {
	// Manager is the field manager that last rewrote the field (from the
	// target's managedFields); empty when the field was removed.
	Manager string `json:"manager"`
	// Path is the field it rewrote.
	Path string `json:"path"`
	// Count is the number of rewrites seen since WindowStart.
	Count int32 `json:"count"`
	// WindowStart is when the first rewrite of the window was seen.
	WindowStart metav1.Time `json:"windowStart"`
	// StoppedGeneration, when set, is the generation at which the
	// Projection stopped writing; editing the spec resumes it.
	// +optional
	StoppedGeneration int64 `json:"stoppedGeneration,omitempty"`
}

// ProjectionList is a list of Projections.
//
// +kubebuilder:object:root=true
type ProjectionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Projection `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Projection{}, &ProjectionList{})
}
