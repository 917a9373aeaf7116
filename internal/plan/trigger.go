package plan

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/trigger"
)

// Deferred names a trigger value that needs data the cache does not hold;
// the apply step computes it before it sets the trigger.
type Deferred string

// DeferredWaveHash is Wave's hash, which hashes values: DecideChange leaves
// it to Decide, which reads Trigger.Wave's objects through View.WaveHash
// and sets Trigger.Value to digest.WaveHash of their consumed values.
const DeferredWaveHash Deferred = "wave-hash"

// ErrDeferred is returned by Trigger.Set while a Deferred value is not
// computed: a trigger must never be written with an empty value.
var ErrDeferred = errors.New("trigger value not computed yet")

// Trigger is the change to a pod template that makes the workload roll.
// Exactly one of Annotation, Env and ReloadedFrom is set.
type Trigger struct {
	// Annotation is the pod template annotation to set to Value
	// (reroll.dev/config-hash, pod-reloader.cs.sap.com/config-hash,
	// wave.pusher.com/config-hash).
	Annotation string
	Value      string
	// Deferred, when set, means Value is computed by Decide; Wave
	// then lists the references whose values it hashes, each in Namespace
	// unless the reference names its own.
	Deferred  Deferred
	Wave      []reference.Reference
	Namespace string
	// WorkloadKind and WorkloadName, with Namespace, are the workload
	// whose Wave hash it is: with --keyed-compat-hashes, the keyed value is
	// bound to it (Options.Compat).
	WorkloadKind, WorkloadName string
	// Env are Reloader's STAKATER_* environment variables (env-vars
	// strategy), one per changed object.
	Env []EnvVar
	// ReloadedFrom is Reloader's last-reloaded-from record (annotations
	// strategy, Reloader's dialect).
	ReloadedFrom *trigger.ReloadedFrom
}

// EnvVar is one env var trigger: Name set to Value on the container that
// reads Ref, chosen as Reloader does (trigger.EnvVarContainer).
type EnvVar struct {
	Ref   reference.Reference
	Name  string
	Value string
}

// Set writes the trigger into t. It returns ErrDeferred when a deferred
// value was not computed, and changes nothing then.
func (tr Trigger) Set(t *corev1.PodTemplateSpec) error {
	if tr.Deferred != "" && tr.Value == "" {
		return fmt.Errorf("%w: %s", ErrDeferred, tr.Deferred)
	}
	switch {
	case tr.Annotation != "":
		trigger.SetAnnotation(t, tr.Annotation, tr.Value)
	case tr.ReloadedFrom != nil:
		trigger.SetLastReloadedFrom(t, *tr.ReloadedFrom)
	default:
		for _, e := range tr.Env {
			if c := trigger.EnvVarContainer(t, e.Ref); c != nil {
				trigger.SetEnv(c, e.Name, e.Value)
			}
		}
	}
	return nil
}
