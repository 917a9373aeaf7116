package digest

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDataWrittenAt(t *testing.T) {
	at := func(s int) *metav1.Time {
		tm := metav1.NewTime(time.Date(2026, 11, 25, 10, 0, s, 0, time.UTC))
		return &tm
	}
	entry := func(manager, subresource string, s int, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Subresource: subresource, Time: at(s), FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	cases := map[string]struct {
		entries []metav1.ManagedFieldsEntry // the object's managedFields
		want    *metav1.Time                // nil: the zero time
	}{
		"no entries":             {},
		"the writer of data":     {entries: []metav1.ManagedFieldsEntry{entry("kubectl", "", 10, `{"f:data":{"f:a":{}}}`)}, want: at(10)},
		"binaryData counts":      {entries: []metav1.ManagedFieldsEntry{entry("kubectl", "", 11, `{"f:binaryData":{"f:b":{}}}`)}, want: at(11)},
		"a Secret's stringData":  {entries: []metav1.ManagedFieldsEntry{entry("kubectl", "", 12, `{"f:stringData":{"f:b":{}}}`)}, want: at(12)},
		"the latest data writer": {entries: []metav1.ManagedFieldsEntry{entry("a", "", 10, `{"f:data":{}}`), entry("b", "", 20, `{"f:data":{}}`)}, want: at(20)},
		"a label-only manager does not count": {
			entries: []metav1.ManagedFieldsEntry{entry("a", "", 10, `{"f:data":{}}`), entry("labeler", "", 30, `{"f:metadata":{"f:labels":{"f:team":{}}}}`)}, want: at(10)},
		"an annotation named data does not count": {entries: []metav1.ManagedFieldsEntry{entry("a", "", 30, `{"f:metadata":{"f:annotations":{"f:data":{}}}}`)}},
		"a subresource does not count":            {entries: []metav1.ManagedFieldsEntry{entry("a", "status", 30, `{"f:data":{}}`)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := DataWrittenAt(tc.entries)
			want := time.Time{}
			if tc.want != nil {
				want = tc.want.Time
			}
			if !got.Equal(want) {
				t.Errorf("DataWrittenAt = %s, want %s", got, want)
			}
		})
	}
}
