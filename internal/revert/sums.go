package revert

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/envtrim"
)

// Sums are the fingerprints of one full pod template that revert detection
// and the automatic undo compare, computed before the manager's cache
// trims the template (envtrim.Keep) and held on the cached copy (Hold).
type Sums struct {
	// Full is the template's Fingerprint.
	Full string
	// Rest is the first 16 hex characters of the SHA-256 of the JSON
	// encoding of what envtrim.Keep drops from the template (the template
	// with what Keep keeps emptied).
	Rest string
}

// trimmedTag starts the input of a Trimmed fingerprint, so that none can
// equal a Fingerprint.
const trimmedTag = "reroll.dev/template/trimmed\n"

// SumsOf returns the Sums of t, a full pod template (read from the API
// server, a ReplicaSet, a revision). t is not changed.
//
// The template is encoded once: Full hashes its JSON, and Rest hashes the
// same bytes with the members of what envtrim.Keep keeps cut out
// (restOf), which are the bytes encoding/json writes of the rest
// (restTemplate). The cache's transform runs this on every event of a
// workload, and a second encoding cost as much as the first (issue #36).
func SumsOf(t *corev1.PodTemplateSpec) Sums {
	// The rest has no env, so it is the same whether or not long env
	// values are digests.
	b := encodeJSON(fingerprinted(t))
	defer jsonBuffers.Put(b)
	fullSum := sha256.Sum256(b.Bytes())
	r := restBuffers.Get().(*[]byte)
	defer restBuffers.Put(r)
	var restSum [sha256.Size]byte
	if rest, ok := restOf((*r)[:0], b.Bytes()); ok {
		*r = rest
		restSum = sha256.Sum256(rest)
	} else {
		// Not reached: encoding/json writes what restOf reads.
		rt := restTemplate(t)
		restSum = sumJSON(&rt)
	}
	return Sums{Full: hex.EncodeToString(fullSum[:8]), Rest: hex.EncodeToString(restSum[:8])}
}

// restBuffers are the buffers SumsOf writes the rest's JSON into.
var restBuffers = sync.Pool{New: func() any { return new([]byte) }}

// restTemplate returns the template whose JSON encoding Sums.Rest hashes:
// t without what envtrim.Keep keeps, from shallow copies that leave it
// out (no deep copy of the template).
func restTemplate(t *corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	rest := *t
	rest.Annotations = nil
	rest.Spec.Volumes, rest.Spec.ImagePullSecrets = nil, nil
	rest.Spec.InitContainers = withoutKept(t.Spec.InitContainers)
	rest.Spec.Containers = withoutKept(t.Spec.Containers)
	if n := len(t.Spec.EphemeralContainers); n > 0 {
		rest.Spec.EphemeralContainers = make([]corev1.EphemeralContainer, n)
		for i := range t.Spec.EphemeralContainers {
			c := t.Spec.EphemeralContainers[i]
			c.Env, c.EnvFrom, c.VolumeMounts = nil, nil, nil
			rest.Spec.EphemeralContainers[i] = c
		}
	}
	// JSON, not the cheaper protobuf: a record's After digests Rest, and
	// protobuf encodes every new empty field a newer API library adds,
	// where JSON leaves it out (omitempty), as Fingerprint relies on.
	return rest
}

// withoutKept returns shallow copies of cs without what envtrim.Keep keeps
// of a container but its name; nil for none.
func withoutKept(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		c := cs[i]
		c.Env, c.EnvFrom, c.VolumeMounts = nil, nil, nil
		out[i] = c
	}
	return out
}

// Trimmed returns the fingerprint of the template whose envtrim.Keep is
// t's (t may be whole or kept) and whose dropped part is the one s.Rest
// fingerprints: the first 16 hex characters of the SHA-256 of a tag,
// s.Rest and the JSON encoding of envtrim.Keep of t. Two templates have
// the same Trimmed fingerprint when they agree on what Keep keeps and on
// the rest, so Reroll's change of a cached template (which touches only
// what Keep keeps) is fingerprinted from the cached copy alone.
func (s Sums) Trimmed(t *corev1.PodTemplateSpec) string {
	b := encodeJSON(envtrim.View(t))
	defer jsonBuffers.Put(b)
	h := sha256.New()
	h.Write([]byte(trimmedTag))
	h.Write([]byte(s.Rest))
	h.Write(b.Bytes())
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// jsonBuffers are the buffers the fingerprints encode templates into: the
// cache's transform fingerprints every event of a workload, and a buffer
// kept for the next one spares allocating and copying out each encoding.
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeJSON returns a buffer of jsonBuffers holding exactly what
// json.Marshal(v) returns (nothing when v does not encode; a pod template
// always does); the caller puts it back.
func encodeJSON(v any) *bytes.Buffer {
	b := jsonBuffers.Get().(*bytes.Buffer)
	b.Reset()
	if json.NewEncoder(b).Encode(v) != nil {
		// Nothing written; json.Marshal returns nil.
		return b
	}
	// Encode writes Marshal's bytes and a newline.
	b.Truncate(b.Len() - 1)
	return b
}

// sumJSON returns the SHA-256 of json.Marshal(v)'s bytes (see encodeJSON).
func sumJSON(v any) [sha256.Size]byte {
	b := encodeJSON(v)
	defer jsonBuffers.Put(b)
	return sha256.Sum256(b.Bytes())
}

// HeldManager is the manager of the managedFields entry in which the
// manager's cache holds the Sums of a workload's full pod template (Hold),
// as "<Full> <Rest>" in the entry's apiVersion, on a cached copy that has
// no entry of summaryManager. No write of Reroll sends it: Reroll writes
// these workloads only by patches of the difference between two cached
// copies, and both hold the same entry.
const HeldManager = "reroll.dev/template-sums"

// summaryManager is plan.SummaryManager (plan imports this package): the
// manager of the one entry that the cache's transform keeps of a written
// workload's managedFields. Hold holds the Sums in that entry's apiVersion,
// which nothing else reads, so that a cached copy carries one entry, not
// two (about 200 bytes less per cached workload, issue #36).
const summaryManager = "reroll.dev/last-written"

// Hold holds s in obj's managedFields, as "<Full> <Rest>" in an entry's
// apiVersion: in the entry of summaryManager when obj has one (its time
// stays plan.WrittenAt's), else in an entry of HeldManager appended, which
// has no time, so nothing that dates writes by managedFields counts it
// (plan.WrittenAt). It changes obj's entries in place: the cache's
// transform calls it on the entries it has just made. Holding again
// replaces the Sums held.
func Hold(obj metav1.Object, s Sums) {
	held := s.Full + " " + s.Rest
	fields := obj.GetManagedFields()
	for i := range fields {
		if fields[i].Manager == summaryManager || fields[i].Manager == HeldManager {
			fields[i].APIVersion = held
			obj.SetManagedFields(fields)
			return
		}
	}
	obj.SetManagedFields(append(fields, metav1.ManagedFieldsEntry{Manager: HeldManager, APIVersion: held}))
}

// Held returns the Sums of the full pod template of obj, whose template is
// t: the ones Hold keeps on a cached copy whose template envtrim.Keep
// trimmed, else (a workload read from the API server, whose template is
// whole, even if a client wrote an entry of HeldManager) computed from t.
func Held(obj metav1.Object, t *corev1.PodTemplateSpec) Sums {
	return HeldIn(obj).Of(t)
}

// HeldIn returns the Sums that Hold keeps in obj's managedFields (in the
// entry of summaryManager or of HeldManager); zero when there are none,
// or when obj is not a Deployment, StatefulSet or DaemonSet, the only
// kinds whose templates the manager's cache trims (scope.Transform; or
// the compact.Workload it holds one of them as): an
// entry of either manager on any other object, such as a custom resource
// whose template need not hold an image and may look trimmed, was written
// by a client and is not trusted. It is cheap (no
// template is read): plan.NewInput takes them on every reconcile, and Of
// uses them only when needed.
func HeldIn(obj metav1.Object) Sums {
	switch obj.(type) {
	case *appsv1.Deployment, *appsv1.StatefulSet, *appsv1.DaemonSet, *compact.Workload:
	default:
		return Sums{}
	}
	for _, e := range obj.GetManagedFields() {
		if e.Manager != HeldManager && e.Manager != summaryManager {
			continue
		}
		if full, rest, ok := strings.Cut(e.APIVersion, " "); ok {
			return Sums{Full: full, Rest: rest}
		}
	}
	return Sums{}
}

// Of returns the Sums of the full template of t: s, the Sums held with a
// cached copy, when t is trimmed (envtrim.Kept) and s is set; else
// (a template read from the API server, whose template is whole, even if
// a client wrote an entry of either manager) computed from t.
func (s Sums) Of(t *corev1.PodTemplateSpec) Sums {
	if s.Full != "" && envtrim.Kept(t) {
		return s
	}
	return SumsOf(t)
}
