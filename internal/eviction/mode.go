package eviction

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Annotations on a workload that choose how it restarts.
const (
	// RestartAnnotation chooses how a workload restarts when data it
	// consumes changes: "template" (the default: Reroll changes the pod
	// template, and the workload's controller rolls it) or "evict" (Reroll
	// evicts the pods through the Eviction API, for workloads whose
	// template an operator owns).
	RestartAnnotation = "reroll.dev/restart"
	// MaxUnavailableAnnotation is how many of the workload's pods a restart
	// by eviction may leave unavailable at once: a number or a percentage
	// of the desired pods, rounded down, at least 1. Default 1.
	MaxUnavailableAnnotation = "reroll.dev/max-unavailable"
)

// Values of RestartAnnotation.
const (
	RestartTemplate = "template"
	RestartEvict    = "evict"
)

// Mode is a workload's choice of restart, from its annotations.
type Mode struct {
	// Evict is set for a restart by eviction.
	Evict bool
	// MaxUnavailable is MaxUnavailableAnnotation resolved against the
	// desired pods; at least 1.
	MaxUnavailable int
}

// ParseMode reads RestartAnnotation and MaxUnavailableAnnotation from a
// workload's annotations; desired is its number of desired pods, for a
// percentage. A malformed value yields the default for it and an error
// naming the annotation.
func ParseMode(annotations map[string]string, desired int) (Mode, []error) {
	m := Mode{MaxUnavailable: 1}
	var problems []error
	switch v := annotations[RestartAnnotation]; v {
	case "", RestartTemplate:
	case RestartEvict:
		m.Evict = true
	default:
		problems = append(problems, fmt.Errorf("annotation %s: %q is neither %q nor %q", RestartAnnotation, v, RestartTemplate, RestartEvict))
	}
	if v, ok := annotations[MaxUnavailableAnnotation]; ok {
		n, err := intstr.GetScaledValueFromIntOrPercent(ptrTo(intstr.Parse(v)), desired, false)
		switch {
		case err != nil:
			problems = append(problems, fmt.Errorf("annotation %s: %w", MaxUnavailableAnnotation, err))
		case n < 0:
			problems = append(problems, fmt.Errorf("annotation %s: %q is negative", MaxUnavailableAnnotation, v))
		default:
			m.MaxUnavailable = max(n, 1)
		}
	}
	return m, problems
}

func ptrTo[T any](v T) *T { return &v }
