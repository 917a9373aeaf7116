package digest

import (
	"crypto/sha1" //nolint:gosec // Reloader's hash, recomputed to check it
	"encoding/hex"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"
)

func status(name string, created, written time.Time, versions ...string) csiv1.SecretProviderClassPodStatus {
	s := csiv1.SecretProviderClassPodStatus{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{"a": "b"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "csi", Time: &metav1.Time{Time: written}}}},
		Status: csiv1.SecretProviderClassPodStatusStatus{PodName: "pod", SecretProviderClassName: "spc", Mounted: true, TargetPath: "/x"},
	}
	for i := 0; i+1 < len(versions); i += 2 {
		s.Status.Objects = append(s.Status.Objects, csiv1.SecretProviderClassObject{ID: versions[i], Version: versions[i+1]})
	}
	return s
}

func TestTransform_SecretProviderClassPodStatusKeepsVersionsOnly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := status("a", t0, t0.Add(time.Minute), "k", "1")
	out, err := Transform(&s)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*csiv1.SecretProviderClassPodStatus)
	if got.ManagedFields != nil || got.Labels != nil || got.Status.PodName != "" || got.Status.TargetPath != "" || len(got.Status.Objects) != 1 {
		t.Errorf("transformed status keeps more than versions: %+v", got)
	}
	if w := WrittenAt(got); w != "2026-01-01T00:01:00Z" {
		t.Errorf("WrittenAt = %s, want the managedFields time", w)
	}
	again, _ := Transform(got)
	if w := WrittenAt(again.(*csiv1.SecretProviderClassPodStatus)); w != "2026-01-01T00:01:00Z" {
		t.Errorf("a second transform changed WrittenAt to %s", w)
	}
}

func TestOfSecretProviderClassPodStatus(t *testing.T) {
	t0 := time.Now()
	s := status("a", t0, t0, "secret/b", "2", "secret/a", "1")
	d := OfSecretProviderClassPodStatus(&s)
	if d.Keys["secret/a"] != Value([]byte("1")) || d.Keys["secret/b"] != Value([]byte("2")) || len(d.Keys) != 2 {
		t.Errorf("Keys = %v", d.Keys)
	}
	// Reloader's formula, written out.
	sum := sha1.Sum([]byte("SecretProviderClassName=spc;secret/a=1;secret/b=2")) //nolint:gosec // see import
	if want := hex.EncodeToString(sum[:]); d.ReloaderSHA1 != want {
		t.Errorf("ReloaderSHA1 = %s, want %s", d.ReloaderSHA1, want)
	}
}

func TestLatest(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		items []csiv1.SecretProviderClassPodStatus // the cached statuses
		want  string                               // the name chosen; "" for none
	}{
		"none":                       {want: ""},
		"written last wins":          {items: []csiv1.SecretProviderClassPodStatus{status("old-pod", t0, t0.Add(time.Hour)), status("new-pod", t0.Add(time.Minute), t0.Add(time.Minute))}, want: "old-pod"},
		"same write, newer pod wins": {items: []csiv1.SecretProviderClassPodStatus{status("a", t0, t0.Add(time.Hour)), status("b", t0.Add(time.Minute), t0.Add(time.Hour))}, want: "b"},
		"all equal, name decides":    {items: []csiv1.SecretProviderClassPodStatus{status("b", t0, t0), status("c", t0, t0), status("a", t0, t0)}, want: "c"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Latest(tc.items)
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("Latest = %s, want none", got.Name)
			case tc.want != "" && (got == nil || got.Name != tc.want):
				t.Errorf("Latest = %v, want %s", got, tc.want)
			}
		})
	}
}
