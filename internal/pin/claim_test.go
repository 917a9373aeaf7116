package pin

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNeedsClaim_OnlyACopyNotWrittenForAMinute(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 20, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }
	cases := map[string]struct {
		// created and written are how long ago the copy was created and
		// written (managedFields).
		created time.Duration
		written []time.Duration
		// want is NeedsClaim's answer.
		want bool
	}{
		"created a second ago":                         {created: time.Second},
		"created an hour ago, never written":           {created: time.Hour, want: true},
		"created an hour ago, claimed ten seconds ago": {created: time.Hour, written: []time.Duration{10 * time.Second}},
		"created an hour ago, written two minutes ago": {created: time.Hour, written: []time.Duration{2 * time.Minute}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := &metav1.ObjectMeta{CreationTimestamp: *at(tc.created)}
			for _, w := range tc.written {
				m.ManagedFields = append(m.ManagedFields, metav1.ManagedFieldsEntry{Time: at(w)})
			}
			if got := NeedsClaim(m, now); got != tc.want {
				t.Errorf("NeedsClaim = %v, want %v", got, tc.want)
			}
		})
	}
}
