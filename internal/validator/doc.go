// Package validator runs the Validators (reroll.dev/v1alpha1) in the
// controller: Reconciler compiles each Validator when it is written and
// reports on it (Ready, with the reason a rule does not compile or exceeds
// the cost budget), and Gate answers the workload reconciler's question
// "does the current content of this ConfigMap or Secret pass the rules that
// select it?" before anything rolls for it. ContentAdmission is the content
// admission webhook: the rules with admission Warn or Deny, checked when a
// ConfigMap or Secret is written (served at ContentAdmissionPath; apart from
// the workload admission webhook of internal/webhook). The evaluation itself is
// internal/validate, the same code `kubectl reroll validate` runs.
package validator
