// Package revert detects another field manager putting back a pod template
// that Reroll changed, as operators that generate a Deployment or
// StatefulSet do (Reloader issues #555 and #627), so that Reroll stops
// patching that template instead of fighting the operator.
//
// The state lives in two annotations on the workload: what Reroll last did
// to the pod template (PatchAnnotation) and, once a revert was seen, who
// reverted it (RevertedAnnotation). A restart of Reroll reads them again,
// so it neither forgets a revert nor restarts the patch war.
package revert
