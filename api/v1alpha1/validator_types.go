package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Validator lists rules that new content of ConfigMaps or Secrets of its
// namespace must pass before any workload rolls for it. A change whose new
// content fails a rule rolls nothing: Reroll holds its change set before
// the first wave (hold reason "invalid") and records a Warning Event
// InvalidContent on the object and on each held workload. The rules are
// compiled when the Validator is written; one that does not compile, or
// whose CEL cost exceeds the budget, sets Ready=False and is not used.
// internal/validate evaluates the rules; docs/validation.md describes them.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=reroll,shortName=val
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.kind`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Validator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ValidatorSpec   `json:"spec"`
	Status ValidatorStatus `json:"status,omitempty"`
}

// ObjectKind is the kind of object a Validator checks.
// +kubebuilder:validation:Enum=ConfigMap;Secret
type ObjectKind string

const (
	// KindConfigMap selects ConfigMaps; data and binaryData both count.
	KindConfigMap ObjectKind = "ConfigMap"
	// KindSecret selects Secrets; their values are never quoted in a
	// finding.
	KindSecret ObjectKind = "Secret"
)

// ValidatorSpec selects objects of the Validator's namespace and lists the
// rules their content must pass. An object is selected when its name is
// listed in names or its labels match selector.
//
// +kubebuilder:validation:XValidation:rule="(has(self.names) && size(self.names) > 0) || has(self.selector)",message="set names or selector"
type ValidatorSpec struct {
	// Kind of the objects checked: ConfigMap or Secret.
	Kind ObjectKind `json:"kind"`

	// Names of the objects checked.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	Names []string `json:"names,omitempty"`

	// Selector checks every object of the kind whose labels match it. An
	// empty selector ({}) selects every object of the kind.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Rules the content must pass, each under a name unique in the
	// Validator. Findings name the rule.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Rules []ValidationRule `json:"rules"`
}

// Format is how a key's value is parsed.
// +kubebuilder:validation:Enum=JSON;YAML;TOML;Properties;Dotenv;PEMCertificate;PEMPrivateKey;URL
type Format string

const (
	// FormatJSON: one JSON value (RFC 8259).
	FormatJSON Format = "JSON"
	// FormatYAML: one YAML document, as sigs.k8s.io/yaml reads it.
	FormatYAML Format = "YAML"
	// FormatTOML: a TOML document.
	FormatTOML Format = "TOML"
	// FormatProperties: Java properties (java.util.Properties.load).
	FormatProperties Format = "Properties"
	// FormatDotenv: KEY=value lines as dotenv files hold them.
	FormatDotenv Format = "Dotenv"
	// FormatPEMCertificate: one or more PEM "CERTIFICATE" blocks, each an
	// X.509 certificate that is valid now (and, with notExpiringWithin,
	// still then).
	FormatPEMCertificate Format = "PEMCertificate"
	// FormatPEMPrivateKey: a PEM private key (PKCS #1, PKCS #8 or SEC 1).
	FormatPEMPrivateKey Format = "PEMPrivateKey"
	// FormatURL: an absolute URL with a scheme and a host.
	FormatURL Format = "URL"
)

// AdmissionAction is what the content admission webhook does when a write of a
// selected object fails the rule.
// +kubebuilder:validation:Enum=Off;Warn;Deny
type AdmissionAction string

const (
	// AdmissionOff checks nothing at write time; Reroll's own gate still
	// holds the rollout.
	AdmissionOff AdmissionAction = "Off"
	// AdmissionWarn returns an admission warning; the write goes through.
	AdmissionWarn AdmissionAction = "Warn"
	// AdmissionDeny refuses the write with the rule's message.
	AdmissionDeny AdmissionAction = "Deny"
)

// ValidationRule is one named rule: checks of the whole object
// (requiredKeys, forbiddenKeys, maxSize), a check of one key (key with
// format and/or schema), or a CEL expression. A rule may combine the
// object checks; a key check and an expression each make a rule of their
// own.
//
// +kubebuilder:validation:XValidation:rule="has(self.requiredKeys) || has(self.forbiddenKeys) || has(self.maxSize) || has(self.key) || has(self.expression)",message="set at least one check: requiredKeys, forbiddenKeys, maxSize, key or expression"
// +kubebuilder:validation:XValidation:rule="!(has(self.key) && has(self.expression))",message="key and expression make two rules"
// +kubebuilder:validation:XValidation:rule="!has(self.key) || has(self.format) || has(self.schema)",message="key needs a format or a schema"
// +kubebuilder:validation:XValidation:rule="(!has(self.format) && !has(self.schema) && !has(self.notExpiringWithin)) || has(self.key)",message="format, schema and notExpiringWithin need key"
type ValidationRule struct {
	// Name of the rule, shown in Events, conditions and the CLI.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Name string `json:"name"`

	// RequiredKeys must all be present.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	RequiredKeys []string `json:"requiredKeys,omitempty"`

	// ForbiddenKeys must all be absent.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	ForbiddenKeys []string `json:"forbiddenKeys,omitempty"`

	// MaxSize bounds the object's content: the sum of its keys' and
	// values' lengths in bytes, e.g. "256Ki".
	// +optional
	MaxSize *resource.Quantity `json:"maxSize,omitempty"`

	// Key is the key whose value format and schema check.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`

	// Optional, when true, passes a key check when the key is absent. By
	// default an absent key fails it.
	// +optional
	Optional bool `json:"optional,omitempty"`

	// Format the key's value must parse as. With a schema and no format,
	// JSON.
	// +optional
	Format Format `json:"format,omitempty"`

	// Schema is a JSON Schema (draft 2020-12) the parsed value must pass;
	// the format must be JSON, YAML or TOML. References ($ref) resolve
	// within the schema only.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Schema *apiextensionsv1.JSON `json:"schema,omitempty"`

	// NotExpiringWithin, with format PEMCertificate, fails a certificate
	// that expires within this duration from now, e.g. "168h".
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	NotExpiringWithin *metav1.Duration `json:"notExpiringWithin,omitempty"`

	// Expression is a CEL expression that must evaluate to true. It sees
	// data, a map from each key to its value as a string, and the
	// functions json(string), yaml(string) and toml(string), which parse a
	// value, e.g. yaml(data['app.yaml']).replicas <= 10. Its estimated
	// cost must stay within the per-expression budget (as Kubernetes'
	// CRD validation rules).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Expression string `json:"expression,omitempty"`

	// Message describes a failed expression in findings; by default the
	// expression itself.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// Admission is what Reroll's content admission webhook (the chart's
	// validation.admission) does when a write of a selected object fails
	// this rule: Off (default: nothing; Reroll's gate still holds the
	// rollout), Warn (an admission warning; the write goes through) or Deny
	// (the write is refused with the rule's message).
	// +optional
	// +kubebuilder:default=Off
	Admission AdmissionAction `json:"admission,omitempty"`
}

// ValidatorStatus is what Reroll last saw of the Validator.
type ValidatorStatus struct {
	// ObservedGeneration is the generation of the spec the conditions
	// describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (every rule compiled within the cost budget:
	// reason Compiled; or InvalidRule, with the rule and why).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ValidatorList is a list of Validators.
//
// +kubebuilder:object:root=true
type ValidatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Validator `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Validator{}, &ValidatorList{})
}
