package projection

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
)

// The third security review (H1): a 4,096-character template holds 1,024
// ${a}, each replaced by the whole source value, so a 1 MiB value rendered
// 1 GiB. The size is now computed from the template and the values' lengths
// and refused before anything is rendered.
func TestDesired_RefusesAnAmplifyingTemplateBeforeAllocating(t *testing.T) {
	mib := strings.Repeat("x", 1<<20)
	values := map[string]sourceValue{"a": {value: []byte(mib), present: true}}
	many := rerollv1alpha1.Field{Path: "spec.a", Template: ptr.To(strings.Repeat("${a}", 1024))}
	one := rerollv1alpha1.Field{Path: "spec.a", Template: ptr.To("${a}")}

	// Positive control: one placeholder over the same value renders it, and
	// the measurement sees the allocation of its 1 MiB.
	var out map[string]string
	var err error
	grew := allocated(func() { out, err = desired([]rerollv1alpha1.Field{one}, values, testKey) })
	if err != nil || len(out["spec.a"]) != 1<<20 {
		t.Fatalf("one placeholder: desired() = %d bytes, %v; want 1 MiB, no error", len(out["spec.a"]), err)
	}
	if grew < 1<<20 {
		t.Fatalf("rendering 1 MiB allocated %d bytes: the measurement sees nothing", grew)
	}

	grew = allocated(func() { out, err = desired([]rerollv1alpha1.Field{many}, values, testKey) })
	var tl *tooLarge
	if !errors.As(err, &tl) || out != nil {
		t.Fatalf("1,024 placeholders over 1 MiB: desired() = %d values, %v; want a *tooLarge error", len(out), err)
	}
	if !strings.Contains(err.Error(), "field spec.a") || !strings.Contains(err.Error(), "1073741824 bytes") {
		t.Errorf("error %q should name the field and the size", err)
	}
	if grew > 1<<20 {
		t.Errorf("refusing allocated %d bytes, want under 1 MiB", grew)
	}
}

// allocated returns the bytes f allocated on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestCheckSizes(t *testing.T) {
	big := strings.Repeat("v", 700<<10) // 700 KiB
	values := map[string]sourceValue{
		"big":    {value: []byte(big), present: true},
		"small":  {value: []byte("s"), present: true},
		"absent": {},
	}
	cases := map[string]struct {
		fields  []rerollv1alpha1.Field // the Projection's fields
		wantErr string                 // part of the error; empty for none
	}{
		"a 700 KiB value as it is fits":                 {fields: []rerollv1alpha1.Field{{Path: "a", Source: "big"}}},
		"a 700 KiB value in Base64 fits (933 KiB)":      {fields: []rerollv1alpha1.Field{{Path: "a", Source: "big", Encoding: rerollv1alpha1.EncodingBase64}}},
		"twice the value in one template is too large":  {fields: []rerollv1alpha1.Field{{Path: "a", Template: ptr.To("${big}${big}")}}, wantErr: "field a: its value would be 1433600 bytes"},
		"two fields of 700 KiB each fit the total":      {fields: []rerollv1alpha1.Field{{Path: "a", Source: "big"}, {Path: "b", Source: "big"}}},
		"three fields of 700 KiB exceed the total":      {fields: []rerollv1alpha1.Field{{Path: "a", Source: "big"}, {Path: "b", Source: "big"}, {Path: "c", Source: "big"}}, wantErr: "2150400 bytes together"},
		"placeholders over small values count the text": {fields: []rerollv1alpha1.Field{{Path: "a", Template: ptr.To(strings.Repeat("${small}", 512))}}},
		"an absent source counts nothing":               {fields: []rerollv1alpha1.Field{{Path: "a", Template: ptr.To(strings.Repeat("${absent}", 400))}}},
		"a digest counts its length":                    {fields: []rerollv1alpha1.Field{{Path: "a", DigestOf: []string{"big", "big"}}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := checkSizes(c.fields, values)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("checkSizes() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("checkSizes() = %v, want an error containing %q", err, c.wantErr)
			}
		})
	}
}

// renderedSize must be the length render returns, or the bound checks
// another size than the one allocated.
func TestRenderedSize_IsTheLengthRendered(t *testing.T) {
	values := map[string]sourceValue{
		"user":   {value: []byte("alice"), present: true},
		"binary": {value: []byte{0xff, 0x00, 0x01, 0x02}, present: true},
		"empty":  {value: []byte{}, present: true},
	}
	fields := map[string]rerollv1alpha1.Field{
		"source":                       {Source: "user"},
		"source as base64":             {Source: "binary", Encoding: rerollv1alpha1.EncodingBase64},
		"template with text around":    {Template: ptr.To("s3://${user}:${empty}@host/$x/${")},
		"template of repeated sources": {Template: ptr.To("${user}${user}-${user}")},
		"template without placeholder": {Template: ptr.To("plain")},
		"digest":                       {DigestOf: []string{"user", "binary"}},
	}
	for name, f := range fields {
		t.Run(name, func(t *testing.T) {
			got, ok, err := render(f, values, testKey)
			if err != nil || !ok {
				t.Fatalf("render() = %q, %v, %v", got, ok, err)
			}
			if n := renderedSize(f, values); n != int64(len(got)) {
				t.Fatalf("renderedSize() = %d, render() wrote %d bytes", n, len(got))
			}
		})
	}
}
