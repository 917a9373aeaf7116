package eviction

import (
	"fmt"
	"strconv"
	"strings"

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
		if n, err := parseMaxUnavailable(v, desired); err != nil {
			problems = append(problems, fmt.Errorf("annotation %s: %w; using the default of 1", MaxUnavailableAnnotation, err))
		} else {
			m.MaxUnavailable = max(n, 1)
		}
	}
	return m, problems
}

// parseMaxUnavailable resolves a MaxUnavailableAnnotation value against
// desired pods. 0 and 0% are refused: they would evict nothing, yet a
// restart needs at least one pod at a time. A percentage above 100% and a
// value longer than 16 bytes are refused as meaningless.
func parseMaxUnavailable(v string, desired int) (int, error) {
	if len(v) > 16 {
		return 0, fmt.Errorf("value of %d bytes is longer than the limit of 16", len(v))
	}
	iv := intstr.Parse(strings.TrimSpace(v))
	raw := iv.IntValue()
	if iv.Type == intstr.String {
		pct, ok := strings.CutSuffix(iv.StrVal, "%")
		p, err := strconv.Atoi(pct)
		if !ok || err != nil {
			return 0, fmt.Errorf("%q is neither a number nor a percentage", v)
		}
		if p > 100 {
			return 0, fmt.Errorf("%q is above 100%%", v)
		}
		raw = p
	}
	switch {
	case raw < 0:
		return 0, fmt.Errorf("%q is negative", v)
	case raw == 0:
		return 0, fmt.Errorf("%q would evict no pod", v)
	}
	return intstr.GetScaledValueFromIntOrPercent(&iv, desired, false)
}
