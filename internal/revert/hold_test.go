package revert_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reroll/reroll/internal/envtrim"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/revert"
)

// template is a whole pod template, as the API server returns it.
func template() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}}}}
}

// summarized returns the managedFields that the cache's transform leaves on
// a written workload: the one entry of plan.SummaryManager, at written.
func summarized(written time.Time) []metav1.ManagedFieldsEntry {
	at := metav1.NewTime(written)
	return []metav1.ManagedFieldsEntry{{Manager: plan.SummaryManager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &at}}
}

// TestHold_SharesTheEntryOfTheCachesSummary: a cached copy of a written
// workload carries one managedFields entry, which holds both the time of
// its last write (plan.WrittenAt) and the Sums; holding again replaces the
// Sums, never adds an entry.
func TestHold_SharesTheEntryOfTheCachesSummary(t *testing.T) {
	written := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	full := template()
	want := revert.SumsOf(full)
	cached := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(written.Add(-time.Hour)), ManagedFields: summarized(written)}}
	revert.Hold(cached, want)
	if got := revert.Held(cached, envtrim.Keep(full.DeepCopy())); got != want {
		t.Fatalf("Held of the trimmed copy = %+v, want the held %+v", got, want)
	}
	if n := len(cached.ManagedFields); n != 1 {
		t.Errorf("the cached copy has %d managedFields entries, want the summary alone: %+v", n, cached.ManagedFields)
	}
	if got := plan.WrittenAt(cached); !got.Equal(written) {
		t.Errorf("WrittenAt = %v, want the summary's %v", got, written)
	}
	other := revert.Sums{Full: "0123456789abcdef", Rest: "fedcba9876543210"}
	revert.Hold(cached, other)
	if got := revert.HeldIn(cached); got != other || len(cached.ManagedFields) != 1 {
		t.Errorf("held again: %+v in %d entries, want %+v in one", got, len(cached.ManagedFields), other)
	}

	// A workload with no write to summarize: the Sums get an entry of
	// their own, with no time.
	unwritten := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(written)}}
	revert.Hold(unwritten, want)
	if got := revert.HeldIn(unwritten); got != want {
		t.Errorf("HeldIn without a summary = %+v, want %+v", got, want)
	}
	if e := unwritten.ManagedFields; len(e) != 1 || e[0].Manager != revert.HeldManager || e[0].Time != nil {
		t.Errorf("the held entry %+v must be one of %s, with no time (plan.WrittenAt skips it)", e, revert.HeldManager)
	}
}

// TestHeldIn_TrustsTheSummaryOnlyOnTheKindsTheCacheTrims: the summary's
// entry is as untrusted as the held one on a kind the cache does not trim,
// and on a whole template read from the API server.
func TestHeldIn_TrustsTheSummaryOnlyOnTheKindsTheCacheTrims(t *testing.T) {
	written := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	forged := revert.Sums{Full: "0000000000000000", Rest: "0000000000000000"}
	small := envtrim.Keep(template())
	// The positive control: on a cached Deployment the summary's Sums
	// count.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: summarized(written)}}
	revert.Hold(d, forged)
	if got := revert.Held(d, small); got != forged {
		t.Fatalf("Held on a Deployment = %+v, want the held %+v", got, forged)
	}
	// The same entry on a whole template read from the API server.
	if got, want := revert.Held(d, template()), revert.SumsOf(template()); got != want {
		t.Errorf("Held of a whole template = %+v, want computed %+v", got, want)
	}
	for name, obj := range map[string]metav1.Object{
		"a custom resource": &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}},
		"a Job":             &batchv1.Job{},
	} {
		t.Run(name, func(t *testing.T) {
			obj.SetManagedFields(summarized(written))
			revert.Hold(obj, forged)
			if got := revert.HeldIn(obj); got != (revert.Sums{}) {
				t.Errorf("HeldIn = %+v, want none", got)
			}
		})
	}
}
