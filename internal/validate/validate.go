package validate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/santhosh-tekuri/jsonschema/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	rerollv1 "github.com/reroll/reroll/api/v1alpha1"
)

const (
	// MaxObjectBytes is the most content (keys and values, in bytes) that
	// Evaluate reads from one object: 1 MiB, the API server's limit for a
	// ConfigMap's or a Secret's data. A larger object (possible only in a
	// file given to `kubectl reroll validate`) fails every Validator that
	// selects it, unread.
	MaxObjectBytes = 1 << 20

	// EvaluationTimeout bounds the CEL expressions of one Evaluate call in
	// time, on top of the cost budget; an expression still running then
	// fails.
	EvaluationTimeout = time.Second
)

// Reasons of a Validator's Ready condition (condition reasons, not Events) and
// of a CompileError.
const (
	// CondCompiled: every rule compiled within the cost budget.
	CondCompiled = "Compiled"
	// CondInvalidRule: a rule does not compile (a CEL syntax or type
	// error, a schema that is not a schema, a format that cannot take a
	// schema).
	CondInvalidRule = "InvalidRule"
	// CondCostExceeded: a CEL expression's estimated cost exceeds
	// PerCallLimit, or the Validator's expressions together exceed
	// PerEvaluationLimit.
	CondCostExceeded = "CostBudgetExceeded"
)

// Object is the content of one ConfigMap or Secret, as Evaluate reads it.
type Object struct {
	// Kind is ConfigMap or Secret; a Secret's values are never quoted.
	Kind rerollv1.ObjectKind
	// Namespace and Name of the object.
	Namespace, Name string
	// Labels of the object, for a Validator's selector.
	Labels map[string]string
	// Data maps each key to its value: a ConfigMap's data and binaryData,
	// a Secret's data (decoded, as the API returns it).
	Data map[string][]byte
}

// FromConfigMap returns the content of cm, data and binaryData together.
func FromConfigMap(cm *corev1.ConfigMap) Object {
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return Object{Kind: rerollv1.KindConfigMap, Namespace: cm.Namespace, Name: cm.Name, Labels: cm.Labels, Data: data}
}

// FromSecret returns the content of s: its data, with stringData laid over
// it as the API server does on write (a file given to the CLI may hold
// stringData).
func FromSecret(s *corev1.Secret) Object {
	data := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		data[k] = v
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return Object{Kind: rerollv1.KindSecret, Namespace: s.Namespace, Name: s.Name, Labels: s.Labels, Data: data}
}

// size is the object's content in bytes: each key's and value's length.
func (o Object) size() int {
	n := 0
	for k, v := range o.Data {
		n += len(k) + len(v)
	}
	return n
}

// sensitive reports whether values must never be quoted.
func (o Object) sensitive() bool { return o.Kind != rerollv1.KindConfigMap }

// Finding is one failed check of one object.
type Finding struct {
	// Validator is the name of the Validator that holds the rule (in the
	// object's namespace).
	Validator string `json:"validator"`
	// Rule is the rule's name.
	Rule string `json:"rule"`
	// Key is the key the check read; empty for a check of the whole object
	// or an expression.
	Key string `json:"key,omitempty"`
	// Message says what is wrong, without quoting a Secret's value.
	Message string `json:"message"`
	// Admission is the rule's admission action (Off, Warn or Deny).
	Admission rerollv1.AdmissionAction `json:"admission"`
}

// String is the finding in one line: `Validator/rule: key "k": message`.
func (f Finding) String() string {
	if f.Key == "" {
		return fmt.Sprintf("%s/%s: %s", f.Validator, f.Rule, f.Message)
	}
	return fmt.Sprintf("%s/%s: key %q %s", f.Validator, f.Rule, f.Key, f.Message)
}

// CompileError is why a Validator's rules do not compile: the rule, and a
// Reason for the Ready condition (CondInvalidRule or CondCostExceeded).
type CompileError struct {
	// Rule is the name of the rule that failed; empty for the Validator as
	// a whole (its selector, or its total cost).
	Rule string
	// Reason is CondInvalidRule or CondCostExceeded.
	Reason string
	// Err says why.
	Err error
}

func (e *CompileError) Error() string {
	if e.Rule == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("rule %s: %v", e.Rule, e.Err)
}

func (e *CompileError) Unwrap() error { return e.Err }

// Validator is a compiled Validator: its selection and its rules, ready to
// evaluate. It is safe for concurrent use.
type Validator struct {
	// Namespace and Name of the Validator.
	Namespace, Name string
	// Kind of the objects it checks.
	Kind rerollv1.ObjectKind
	// Cost is the estimated worst-case CEL cost of all its expressions on
	// one object.
	Cost uint64

	names    map[string]bool
	selector labels.Selector // nil: names only
	rules    []rule

	// namespaces selects the namespaces of a ClusterValidator; nil for a
	// Validator, which checks its own namespace only.
	namespaces labels.Selector
}

// ClusterValidatorPrefix starts the Name of a compiled ClusterValidator
// (and so its findings' Validator), to tell it from a Validator of the
// object's namespace.
const ClusterValidatorPrefix = "ClusterValidator/"

// CompileCluster compiles a ClusterValidator: its namespace selector, and
// its selection and rules as Compile does. The result is named
// ClusterValidatorPrefix + name and selects objects of any namespace that
// SelectsNamespace accepts; the caller checks the namespace (Evaluate does
// not see namespaces' labels).
func CompileCluster(cv *rerollv1.ClusterValidator) (*Validator, error) {
	ns, err := metav1.LabelSelectorAsSelector(&cv.Spec.NamespaceSelector)
	if err != nil {
		return nil, &CompileError{Reason: CondInvalidRule, Err: fmt.Errorf("namespaceSelector: %w", err)}
	}
	out, err := Compile(&rerollv1.Validator{ObjectMeta: metav1.ObjectMeta{Name: ClusterValidatorPrefix + cv.Name}, Spec: cv.Spec.ValidatorSpec})
	if err != nil {
		return nil, err
	}
	out.namespaces = ns
	return out, nil
}

// SelectsNamespace reports whether the Validator checks objects of a
// namespace with these labels: for a ClusterValidator, its namespace
// selector; for a Validator, always (Selects checks that the namespace is
// its own).
func (v *Validator) SelectsNamespace(nsLabels map[string]string) bool {
	return v.namespaces == nil || v.namespaces.Matches(labels.Set(nsLabels))
}

// rule is one compiled rule.
type rule struct {
	name      string
	admission rerollv1.AdmissionAction

	required, forbidden []string
	maxSize             int64 // < 0: none

	key      string
	optional bool
	format   rerollv1.Format // "" with no key check
	schema   *jsonschema.Schema
	within   time.Duration

	expression string
	message    string
	program    cel.Program
	cost       uint64 // estimated worst case
}

// Compile compiles v's selector and rules. A *CompileError says which rule
// failed and why, with the Reason for the Ready condition.
func Compile(v *rerollv1.Validator) (*Validator, error) {
	out := &Validator{Namespace: v.Namespace, Name: v.Name, Kind: v.Spec.Kind, names: map[string]bool{}}
	if out.Kind != rerollv1.KindConfigMap && out.Kind != rerollv1.KindSecret {
		return nil, &CompileError{Reason: CondInvalidRule, Err: fmt.Errorf("kind %q is neither ConfigMap nor Secret", v.Spec.Kind)}
	}
	for _, n := range v.Spec.Names {
		out.names[n] = true
	}
	if v.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(v.Spec.Selector)
		if err != nil {
			return nil, &CompileError{Reason: CondInvalidRule, Err: fmt.Errorf("selector: %w", err)}
		}
		out.selector = sel
	}
	seen := map[string]bool{}
	for _, spec := range v.Spec.Rules {
		if seen[spec.Name] {
			return nil, &CompileError{Rule: spec.Name, Reason: CondInvalidRule, Err: errors.New("the name is used by another rule")}
		}
		seen[spec.Name] = true
		r, err := compileRule(spec)
		if err != nil {
			return nil, err
		}
		out.Cost += r.cost
		out.rules = append(out.rules, r)
	}
	if out.Cost > PerEvaluationLimit {
		return nil, &CompileError{Reason: CondCostExceeded, Err: fmt.Errorf(
			"the expressions' estimated cost together, %d, exceeds the budget of one object's evaluation, %d", out.Cost, PerEvaluationLimit)}
	}
	return out, nil
}

func compileRule(spec rerollv1.ValidationRule) (rule, error) {
	invalid := func(format string, a ...any) error {
		return &CompileError{Rule: spec.Name, Reason: CondInvalidRule, Err: fmt.Errorf(format, a...)}
	}
	r := rule{
		name: spec.Name, admission: spec.Admission,
		required: spec.RequiredKeys, forbidden: spec.ForbiddenKeys, maxSize: -1,
		key: spec.Key, optional: spec.Optional, format: spec.Format,
		expression: spec.Expression, message: spec.Message,
	}
	if r.admission == "" {
		r.admission = rerollv1.AdmissionOff
	}
	if spec.Name == "" {
		return r, invalid("a rule needs a name")
	}
	if spec.MaxSize != nil {
		r.maxSize = spec.MaxSize.Value()
	}
	if spec.Key != "" && spec.Expression != "" {
		return r, invalid("key and expression make two rules")
	}
	if spec.Key == "" && (spec.Format != "" || spec.Schema != nil || spec.NotExpiringWithin != nil) {
		return r, invalid("format, schema and notExpiringWithin need key")
	}
	if spec.Key == "" && spec.Expression == "" && len(spec.RequiredKeys) == 0 && len(spec.ForbiddenKeys) == 0 && spec.MaxSize == nil {
		return r, invalid("set at least one check: requiredKeys, forbiddenKeys, maxSize, key or expression")
	}
	if spec.Key != "" {
		if spec.Format == "" && spec.Schema == nil {
			return r, invalid("key needs a format or a schema")
		}
		if r.format == "" {
			r.format = rerollv1.FormatJSON
		}
		if !slices.Contains(formats, r.format) {
			return r, invalid("unknown format %q", spec.Format)
		}
	}
	if spec.NotExpiringWithin != nil {
		if r.format != rerollv1.FormatPEMCertificate {
			return r, invalid("notExpiringWithin needs format PEMCertificate")
		}
		r.within = spec.NotExpiringWithin.Duration
	}
	if spec.Schema != nil {
		if !parsesToJSON(r.format) {
			return r, invalid("a schema needs format JSON, YAML or TOML, not %s", r.format)
		}
		s, err := compileSchema(spec.Schema.Raw)
		if err != nil {
			return r, invalid("schema: %w", err)
		}
		r.schema = s
	}
	if spec.Expression != "" {
		prg, cost, err := compileExpression(spec.Expression)
		if err != nil {
			var ce *costError
			if errors.As(err, &ce) {
				return r, &CompileError{Rule: spec.Name, Reason: CondCostExceeded, Err: err}
			}
			return r, invalid("expression: %w", err)
		}
		r.program, r.cost = prg, cost
	}
	return r, nil
}

// Selects reports whether the Validator checks o: same kind, same
// namespace (any namespace for a ClusterValidator: see SelectsNamespace),
// and o's name is listed or its labels match the selector.
func (v *Validator) Selects(o Object) bool {
	if o.Kind != v.Kind || (v.namespaces == nil && o.Namespace != v.Namespace) {
		return false
	}
	return v.names[o.Name] || (v.selector != nil && v.selector.Matches(labels.Set(o.Labels)))
}

// Rules returns the names of the Validator's rules, in order.
func (v *Validator) Rules() []string {
	out := make([]string, len(v.rules))
	for i, r := range v.rules {
		out[i] = r.name
	}
	return out
}

// Evaluate checks o against every Validator of vs that selects it (sorted
// by name, then rule order) and returns the findings, empty when o passes.
// now is the time certificates are checked against. The CEL expressions of
// all Validators share one budget of PerEvaluationLimit and the time
// EvaluationTimeout; an expression that cannot run within what is left
// fails (closed) rather than run.
func Evaluate(ctx context.Context, vs []*Validator, o Object, now time.Time) []Finding {
	selected := make([]*Validator, 0, len(vs))
	for _, v := range vs {
		if v != nil && v.Selects(o) {
			selected = append(selected, v)
		}
	}
	if len(selected) == 0 {
		return nil
	}
	sort.Slice(selected, func(i, j int) bool { return selected[i].Name < selected[j].Name })
	ctx, cancel := context.WithTimeout(ctx, EvaluationTimeout)
	defer cancel()
	e := &evaluation{ctx: ctx, obj: o, now: now, budget: PerEvaluationLimit}
	if size := o.size(); size > MaxObjectBytes {
		for _, v := range selected {
			e.findings = append(e.findings, Finding{Validator: v.Name, Rule: "(all)", Admission: strictest(v),
				Message: fmt.Sprintf("content is %d bytes, more than %d, the API server's limit: not read", size, MaxObjectBytes)})
		}
		return e.findings
	}
	for _, v := range selected {
		for _, r := range v.rules {
			e.rule(v.Name, r)
		}
	}
	return e.findings
}

// Admission is the strictest admission action among the Validator's rules:
// Deny when one rule denies, else Warn when one warns, else Off (the
// content admission webhook then skips the Validator).
func (v *Validator) Admission() rerollv1.AdmissionAction { return strictest(v) }

// strictest is the strictest admission action among v's rules.
func strictest(v *Validator) rerollv1.AdmissionAction {
	out := rerollv1.AdmissionOff
	for _, r := range v.rules {
		switch r.admission {
		case rerollv1.AdmissionDeny:
			return rerollv1.AdmissionDeny
		case rerollv1.AdmissionWarn:
			out = rerollv1.AdmissionWarn
		}
	}
	return out
}

// evaluation is one Evaluate call's state: the object, the clock, the CEL
// budget left, the findings so far.
type evaluation struct {
	ctx      context.Context
	obj      Object
	now      time.Time
	budget   uint64
	findings []Finding
	strs     map[string]any // the data as strings, for CEL, made once
}

func (e *evaluation) fail(validator string, r rule, key, format string, a ...any) {
	e.findings = append(e.findings, Finding{Validator: validator, Rule: r.name, Key: key, Admission: r.admission, Message: fmt.Sprintf(format, a...)})
}

func (e *evaluation) rule(validator string, r rule) {
	for _, k := range r.required {
		if _, ok := e.obj.Data[k]; !ok {
			e.fail(validator, r, k, "is required but absent")
		}
	}
	for _, k := range r.forbidden {
		if _, ok := e.obj.Data[k]; ok {
			e.fail(validator, r, k, "is forbidden but present")
		}
	}
	if r.maxSize >= 0 {
		if size := e.obj.size(); int64(size) > r.maxSize {
			e.fail(validator, r, "", "content is %d bytes, more than the maximum of %d", size, r.maxSize)
		}
	}
	if r.key != "" {
		e.key(validator, r)
	}
	if r.program != nil {
		e.expression(validator, r)
	}
}

// key runs a rule's key check: the format, then the schema.
func (e *evaluation) key(validator string, r rule) {
	value, ok := e.obj.Data[r.key]
	if !ok {
		if !r.optional {
			e.fail(validator, r, r.key, "is absent (the rule checks it; set optional: true to pass an absent key)")
		}
		return
	}
	doc, msg := checkFormat(r.format, value, e.now, r.within, e.obj.sensitive())
	if msg != "" {
		e.fail(validator, r, r.key, "%s", msg)
		return
	}
	if r.schema != nil {
		for _, m := range schemaErrors(r.schema, doc) {
			e.fail(validator, r, r.key, "%s", m)
		}
	}
}

// expression runs a rule's CEL expression within what is left of the
// budget.
func (e *evaluation) expression(validator string, r rule) {
	if r.cost > e.budget {
		e.fail(validator, r, "", "not evaluated: the expression may cost up to %d and only %d of this object's budget of %d is left", r.cost, e.budget, PerEvaluationLimit)
		return
	}
	if e.strs == nil {
		e.strs = make(map[string]any, len(e.obj.Data))
		for k, v := range e.obj.Data {
			e.strs[k] = string(v)
		}
	}
	ok, cost, err := runExpression(e.ctx, r.program, e.strs)
	e.budget -= min(cost, e.budget)
	switch {
	case err != nil:
		e.fail(validator, r, "", "%s", expressionError(err, e.obj.sensitive()))
	case !ok:
		msg := r.message
		if msg == "" {
			msg = "expression is false: " + r.expression
		}
		e.fail(validator, r, "", "%s", msg)
	}
}

// Summary is findings in one line, for an Event or a log: the first
// findings' String, then how many more.
func Summary(fs []Finding, limit int) string {
	if len(fs) == 0 {
		return ""
	}
	var parts []string
	for i, f := range fs {
		if i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-limit))
			break
		}
		parts = append(parts, f.String())
	}
	return strings.Join(parts, "; ")
}
