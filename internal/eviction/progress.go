package eviction

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ProgressAnnotation is the metadata annotation, on the workload or on the
// pod owner named by --evict-owner, where Reroll records a restart by
// eviction that is under way. Kept on the object, not in memory, so that a
// restart of Reroll or a change of leader resumes the restart instead of
// starting it over, and never evicts a pod twice.
//
// The value is JSON:
//
//	{"hash":"<config hash>","since":"<RFC 3339 UTC>","pending":[{"name":"web-1","uid":"..."}],"blockedSince":"<RFC 3339 UTC>"}
//
// hash is the configuration hash of the data being rolled out (the value
// reroll.dev/config-hash would take), since is when Reroll saw the change,
// pending lists the pods still to evict, and blockedSince, when set, is
// when a PodDisruptionBudget first refused the eviction now being retried.
const ProgressAnnotation = "reroll.dev/eviction"

// Progress is a restart by eviction under way: ProgressAnnotation decoded.
type Progress struct {
	// Hash is the configuration hash of the data being rolled out
	// (lowercase hex).
	Hash string `json:"hash"`
	// Since is when Reroll saw the change. Pods created after it read the
	// new data and are never evicted.
	Since time.Time `json:"since"`
	// Pending are the pods still to evict, sorted by name. A pod is
	// identified by its UID too, so that a pod re-created under the same
	// name (a StatefulSet's) counts as replaced.
	Pending []PodRef `json:"pending"`
	// BlockedSince is when a PodDisruptionBudget first refused the eviction
	// that is being retried; zero when none is.
	BlockedSince *time.Time `json:"blockedSince,omitempty"`
}

// PodRef names one pod.
type PodRef struct {
	// Name is the pod's name, in the workload's namespace.
	Name string `json:"name"`
	// UID is the pod's UID.
	UID types.UID `json:"uid"`
}

// ParseProgress reads ProgressAnnotation's value. An empty value means no
// restart is under way (nil, no error); a value that is not a record is an
// error naming the annotation.
func ParseProgress(v string) (*Progress, error) {
	if v == "" {
		return nil, nil
	}
	var p Progress
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return nil, fmt.Errorf("annotation %s is not valid JSON: %w", ProgressAnnotation, err)
	}
	if p.Hash == "" || p.Since.IsZero() {
		return nil, fmt.Errorf("annotation %s has no hash or no since", ProgressAnnotation)
	}
	return &p, nil
}

// String encodes p for ProgressAnnotation; nil encodes as "" (no record).
// Times are written in UTC with second precision, as Kubernetes writes
// timestamps.
func (p *Progress) String() string {
	if p == nil {
		return ""
	}
	c := *p
	c.Since = c.Since.UTC().Truncate(time.Second)
	if c.BlockedSince != nil {
		b := c.BlockedSince.UTC().Truncate(time.Second)
		c.BlockedSince = &b
	}
	if c.Pending == nil {
		c.Pending = []PodRef{}
	}
	b, _ := json.Marshal(c) // strings, times and a slice always encode
	return string(b)
}

// Without returns a copy of p without the pods whose UIDs are given, and
// with BlockedSince cleared when any was removed (an eviction went through).
func (p *Progress) Without(uids ...types.UID) *Progress {
	c := *p
	c.Pending = slices.DeleteFunc(slices.Clone(p.Pending), func(r PodRef) bool { return slices.Contains(uids, r.UID) })
	if len(c.Pending) < len(p.Pending) {
		c.BlockedSince = nil
	}
	return &c
}
