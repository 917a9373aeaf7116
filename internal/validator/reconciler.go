package validator

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	rerollv1 "github.com/reroll/reroll/api/v1alpha1"
	"github.com/reroll/reroll/internal/validate"
)

// ConditionReady is the Validator's condition: True (reason Compiled) when
// every rule compiled within the cost budget, else False with the reason
// (validate.CondInvalidRule, validate.CondCostExceeded) and the rule.
const ConditionReady = "Ready"

// Reconciler compiles each Validator when its spec changes and writes its
// Ready condition and observedGeneration. A Validator that does not
// compile is not used by the Gate.
type Reconciler struct {
	Client client.Client
	// Gate drops its compiled copy of a deleted Validator.
	Gate *Gate
}

// SetupWithManager registers the Validator controller with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("validator").
		// The spec decides the condition; Reroll's own status writes do not.
		For(&rerollv1.Validator{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// Reroll's rules for Validators: read them, write their status.
// +kubebuilder:rbac:groups=reroll.dev,resources=validators,verbs=get;list;watch
// +kubebuilder:rbac:groups=reroll.dev,resources=validators/status,verbs=patch

// Reconcile compiles the Validator and records the outcome on it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	v := &rerollv1.Validator{}
	return reconcileOne(ctx, r.Client, r.Gate, req, "Validator", v, &v.Status, func() (*validate.Validator, error) { return validate.Compile(v) })
}

// reconcileOne is the reconcile of a Validator or a ClusterValidator (what),
// read into v, whose status is status: it drops the Gate's compiled copy
// of one being deleted, else compiles it (compile) and patches its Ready
// condition and observedGeneration. It returns the error of reading or of
// patching the status (a missing object is no error).
func reconcileOne(ctx context.Context, c client.Client, gate *Gate, req ctrl.Request, what string, v client.Object,
	status *rerollv1.ValidatorStatus, compile func() (*validate.Validator, error)) (ctrl.Result, error) {
	if err := c.Get(ctx, req.NamespacedName, v); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if v.GetDeletionTimestamp() != nil {
		if gate != nil {
			gate.forget(v.GetUID())
		}
		return ctrl.Result{}, nil
	}
	name := req.Name
	if req.Namespace != "" {
		name = req.String()
	}
	compiled, err := compile()
	cond := readyCondition(ctx, what, name, v.GetGeneration(), compiled, err)
	orig := v.DeepCopyObject().(client.Object)
	meta.SetStatusCondition(&status.Conditions, cond)
	status.ObservedGeneration = v.GetGeneration()
	if err := c.Status().Patch(ctx, v, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing the status of %s %s: %w", what, name, err)
	}
	return ctrl.Result{}, nil
}

// readyCondition is the Ready condition of a Validator or ClusterValidator
// (what, named name) at generation, from what compiling it returned.
func readyCondition(ctx context.Context, what, name string, generation int64, c *validate.Validator, err error) metav1.Condition {
	cond := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: validate.CondCompiled,
		ObservedGeneration: generation}
	if err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, validate.CondInvalidRule
		var ce *validate.CompileError
		if errors.As(err, &ce) {
			cond.Reason = ce.Reason
		}
		cond.Message = err.Error() + "; none of this " + what + "'s rules is used until it is fixed"
		ctrl.LoggerFrom(ctx).Info("Validator does not compile", "kind", what, "validator", name, "reason", cond.Reason, "error", err.Error())
		return cond
	}
	cond.Message = fmt.Sprintf("%d rules compiled, estimated worst-case CEL cost %d of %d", len(c.Rules()), c.Cost, validate.PerEvaluationLimit)
	return cond
}

// ClusterReconciler is Reconciler for ClusterValidators: it compiles each
// when its spec changes and writes its Ready condition and
// observedGeneration.
type ClusterReconciler struct {
	Client client.Client
	// Gate drops its compiled copy of a deleted ClusterValidator.
	Gate *Gate
}

// SetupWithManager registers the ClusterValidator controller with mgr.
func (r *ClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("clustervalidator").
		// The spec decides the condition; Reroll's own status writes do not.
		For(&rerollv1.ClusterValidator{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// Reroll's rules for ClusterValidators: read them, write their status.
// +kubebuilder:rbac:groups=reroll.dev,resources=clustervalidators,verbs=get;list;watch
// +kubebuilder:rbac:groups=reroll.dev,resources=clustervalidators/status,verbs=patch

// Reconcile compiles the ClusterValidator and records the outcome on it.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	v := &rerollv1.ClusterValidator{}
	return reconcileOne(ctx, r.Client, r.Gate, req, "ClusterValidator", v, &v.Status, func() (*validate.Validator, error) { return validate.CompileCluster(v) })
}
