package delivery

import (
	"fmt"
	"strconv"
	"strings"
)

// Position is where a workload rolls in a change set: first its
// Namespace's place in the order (the Namespace's WaveAnnotation, which
// only the operator sets), then its own wave within that place (the
// workload's WaveAnnotation). A workload's own wave never moves it before
// a workload of an earlier Namespace.
type Position struct {
	// Place is the Namespace's wave; 0 for a Namespace without one.
	Place int
	// Wave is the workload's own wave; 0 when it sets none.
	Wave int
}

// Less reports whether p rolls before q.
func (p Position) Less(q Position) bool {
	if p.Place != q.Place {
		return p.Place < q.Place
	}
	return p.Wave < q.Wave
}

// String is p in words, for Events: "wave -1", or "namespace wave -1, wave 2"
// when the Namespace has a place other than 0.
func (p Position) String() string {
	if p.Place == 0 {
		return "wave " + strconv.Itoa(p.Wave)
	}
	return fmt.Sprintf("namespace wave %d, wave %d", p.Place, p.Wave)
}

// Order is what the operator and the workloads say of the order of
// rollouts, gathered from the cache: the input of Scope, Tracked and First.
//
// Only the operator lets a namespace take part in change sets across
// namespaces, with WaveAnnotation on its Namespace: updating a Namespace is
// a cluster-scoped permission that Kubernetes' admin and edit roles do not
// grant to a namespace's tenants. Every other namespace keeps its change
// sets to itself (Scope), and the waves of its workloads order only its own
// rollouts. So a tenant's workload neither holds nor halts a rollout in a
// namespace it cannot write.
type Order struct {
	// Places are the waves of the watched Namespaces that carry
	// WaveAnnotation (a malformed value counts as 0), by name.
	Places map[string]int
	// Lowest is, for each namespace where a workload sets WaveAnnotation,
	// the lowest such wave, or 0 when none is below 0.
	Lowest map[string]int
}

// Shared reports whether the operator placed namespace in the order: its
// workloads take part in change sets across namespaces.
func (o Order) Shared(namespace string) bool {
	_, ok := o.Places[namespace]
	return ok
}

// Scope is the scope of the change sets of namespace's workloads: "" when
// it is shared (copies in every shared namespace are one set), else the
// namespace itself (see digest.Key.ChangeSetID).
func (o Order) Scope(namespace string) string {
	if o.Shared(namespace) {
		return ""
	}
	return namespace
}

// Tracked reports whether a rollout in namespace must take part in its
// change sets because of waves: the namespace is shared, or one of its
// workloads sets a wave. A wave elsewhere changes nothing here.
func (o Order) Tracked(namespace string) bool {
	if o.Shared(namespace) {
		return true
	}
	_, ok := o.Lowest[namespace]
	return ok
}

// First is the lowest position that a member of a change set of
// namespace's workloads can have: a member there has no earlier wave to
// wait for and rolls at once. For a shared namespace, the lowest place of
// any shared namespace, and the lowest workload wave of the namespaces in
// that place; else place 0 and the namespace's own lowest workload wave.
func (o Order) First(namespace string) Position {
	if !o.Shared(namespace) {
		return Position{Wave: o.Lowest[namespace]}
	}
	first := true
	var p Position
	for ns, place := range o.Places {
		q := Position{Place: place, Wave: o.Lowest[ns]}
		if first || q.Less(p) {
			p, first = q, false
		}
	}
	return p
}

// PositionOf is the position of a workload with annotations in namespace,
// whose Namespace has nsAnnotations: the Namespace's WaveAnnotation as its
// place, and its own WaveAnnotation as its wave (the Namespace's no longer
// stands in for it). A malformed value is an error and counts as 0.
func PositionOf(annotations, nsAnnotations map[string]string) (Position, error) {
	var p Position
	var err error
	if _, ok := nsAnnotations[WaveAnnotation]; ok {
		if p.Place, err = Wave(nil, nsAnnotations); err != nil {
			err = fmt.Errorf("namespace %w", err)
		}
	}
	if _, ok := annotations[WaveAnnotation]; ok {
		var werr error
		if p.Wave, werr = Wave(annotations, nil); werr != nil && err == nil {
			err = werr
		}
	}
	return p, err
}

// NamespaceWave reads a Namespace's WaveAnnotation for Order.Places: its
// value, and whether it is set; a malformed value counts as 0.
func NamespaceWave(nsAnnotations map[string]string) (int, bool) {
	v, ok := nsAnnotations[WaveAnnotation]
	if !ok {
		return 0, false
	}
	w, err := Wave(map[string]string{WaveAnnotation: strings.TrimSpace(v)}, nil)
	if err != nil {
		return 0, true
	}
	return w, true
}
