package revert

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/reroll/reroll/internal/envtrim"
)

// apiTemplate is a pod template as the API server returns it: defaulted
// fields, an image and resources that the cache does not keep.
func apiTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "1"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "web:1",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
				EnvFrom:   []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
		},
	}
}

func TestSums_TellTemplatesApartFromTheirTrimmedCopies(t *testing.T) {
	base := apiTemplate()
	s := SumsOf(base)
	if s.Full != Fingerprint(base) {
		t.Fatalf("Full = %s, want the Fingerprint %s", s.Full, Fingerprint(base))
	}
	if got := s.Trimmed(envtrim.Keep(base.DeepCopy())); got != s.Trimmed(base) {
		t.Errorf("the trimmed copy's fingerprint %s differs from the full template's %s", got, s.Trimmed(base))
	}
	cases := map[string]struct {
		change func(*corev1.PodTemplateSpec) // a change of the template
		same   bool                          // its fingerprints stay the same
	}{
		"no change":                     {change: func(*corev1.PodTemplateSpec) {}, same: true},
		"an image the cache drops":      {change: func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "web:2" }},
		"a label the cache drops":       {change: func(t *corev1.PodTemplateSpec) { t.Labels["tier"] = "front" }},
		"a pod field the cache drops":   {change: func(t *corev1.PodTemplateSpec) { t.Spec.ServiceAccountName = "other" }},
		"an annotation the cache keeps": {change: func(t *corev1.PodTemplateSpec) { t.Annotations["a"] = "2" }},
		"a reference the cache keeps":   {change: func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name = "cfg-2" }},
		"an env var the cache keeps": {change: func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_CFG_CONFIGMAP", Value: "abc"}}
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			changed := base.DeepCopy()
			c.change(changed)
			cs := SumsOf(changed)
			// Each the way Reroll computes it: from the changed template's
			// own Sums and its trimmed copy.
			same := cs.Trimmed(envtrim.Keep(changed.DeepCopy())) == s.Trimmed(base)
			if same != c.same || (cs.Full == s.Full) != c.same {
				t.Errorf("trimmed fingerprints equal = %v, full %v; want %v", same, cs.Full == s.Full, c.same)
			}
		})
	}
}

func TestHeld_TrustsHeldSumsOnlyWithATrimmedTemplate(t *testing.T) {
	full := apiTemplate()
	want := SumsOf(full)
	cached := &appsv1.Deployment{}
	Hold(cached, want)
	if e := cached.ManagedFields[0]; e.Time != nil || e.Manager != HeldManager {
		t.Fatalf("the held entry %+v must have no time (plan.WrittenAt skips it)", e)
	}
	if got := Held(cached, envtrim.Keep(full.DeepCopy())); got != want {
		t.Errorf("Held of a trimmed copy = %+v, want the held %+v", got, want)
	}
	// A workload read from the API server with an entry a client forged:
	// its template is whole, so its Sums are computed.
	forged := &appsv1.Deployment{}
	Hold(forged, Sums{Full: "0000000000000000", Rest: "0000000000000000"})
	if got := Held(forged, full); got != want {
		t.Errorf("Held of a full template = %+v, want computed %+v", got, want)
	}
	if got := Held(&appsv1.Deployment{}, full); got != want {
		t.Errorf("Held without an entry = %+v, want %+v", got, want)
	}
}

func TestDetect_TrimmedRecord(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	before := apiTemplate()
	after := before.DeepCopy()
	after.Annotations["reroll.dev/restartedAt"] = "now"
	s := SumsOf(before)
	p := &Patch{Before: s.Full, After: s.Trimmed(after), Trimmed: true, At: at}
	cases := map[string]struct {
		current string    // the current template's Fingerprint
		now     time.Time // when it is checked
		want    bool
	}{
		"the template before put back within the window is a revert": {current: Fingerprint(before), now: at.Add(time.Minute), want: true},
		"the template after is no revert":                            {current: Fingerprint(after), now: at.Add(time.Minute)},
		"the template before put back later is no revert":            {current: Fingerprint(before), now: at.Add(Window + time.Second)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Detect(p, c.current, c.now); got != c.want {
				t.Errorf("Detect = %v, want %v", got, c.want)
			}
		})
	}
	if !p.IsAfter(SumsOf(after), envtrim.Keep(after.DeepCopy())) || p.IsAfter(s, before) {
		t.Error("IsAfter does not tell the template after from the one before")
	}
	round, err := ParsePatch(p.String())
	if err != nil || !round.Trimmed {
		t.Errorf("the record does not keep its form: %+v %v", round, err)
	}
}

// BenchmarkSumsOf measures what the cache transform adds per event of a
// Deployment (compare BenchmarkFingerprint in internal/plan).
func BenchmarkSumsOf(b *testing.B) {
	t := apiTemplate()
	b.ReportAllocs()
	for b.Loop() {
		_ = SumsOf(t)
	}
}

func BenchmarkFingerprintFull(b *testing.B) {
	t := apiTemplate()
	b.ReportAllocs()
	for b.Loop() {
		_ = Fingerprint(t)
	}
}

func BenchmarkKeptAndTrimmed(b *testing.B) {
	t := envtrim.Keep(apiTemplate())
	s := SumsOf(apiTemplate())
	b.Run("Kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = envtrim.Kept(t)
		}
	})
	b.Run("Trimmed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = s.Trimmed(t)
		}
	})
}

// TestHeld_TrustsNoEntryOnAKindTheCacheDoesNotTrim: a custom resource's
// template need not hold an image, so a tenant's template can look trimmed;
// an entry of HeldManager that the tenant wrote on it is not trusted.
func TestHeld_TrustsNoEntryOnAKindTheCacheDoesNotTrim(t *testing.T) {
	small := envtrim.Keep(apiTemplate())
	want := SumsOf(small)
	forgedSums := Sums{Full: "0000000000000000", Rest: "0000000000000000"}
	// The positive control: on a Deployment the held entry is trusted.
	d := &appsv1.Deployment{}
	Hold(d, forgedSums)
	if got := Held(d, small); got != forgedSums {
		t.Fatalf("Held on a Deployment = %+v, want the held %+v", got, forgedSums)
	}
	for name, obj := range map[string]metav1.Object{
		"a custom resource": &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}},
		"a Job":             &batchv1.Job{},
	} {
		t.Run(name, func(t *testing.T) {
			Hold(obj, forgedSums)
			if got := HeldIn(obj); got != (Sums{}) {
				t.Errorf("HeldIn = %+v, want none", got)
			}
			if got := Held(obj, small); got != want {
				t.Errorf("Held = %+v, want computed %+v", got, want)
			}
		})
	}
}
