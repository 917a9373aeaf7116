package projection

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func TestRender(t *testing.T) {
	values := map[string]sourceValue{
		"user":   {value: []byte("alice"), present: true},
		"pass":   {value: []byte("s3cr3t"), present: true},
		"binary": {value: []byte{0xff, 0x00}, present: true},
		"absent": {},
	}
	cases := map[string]struct {
		field   rerollv1alpha1.Field // the field to render
		want    string               // its value
		ok      bool                 // whether it is written
		wantErr string               // part of the error; empty for none
	}{
		"source as string":   {field: rerollv1alpha1.Field{Source: "pass"}, want: "s3cr3t", ok: true},
		"source as base64":   {field: rerollv1alpha1.Field{Source: "binary", Encoding: rerollv1alpha1.EncodingBase64}, want: "/wA=", ok: true},
		"binary as string":   {field: rerollv1alpha1.Field{Source: "binary"}, wantErr: "not UTF-8"},
		"absent source":      {field: rerollv1alpha1.Field{Source: "absent"}},
		"unknown source":     {field: rerollv1alpha1.Field{Source: "nope"}, wantErr: "no source"},
		"template":           {field: rerollv1alpha1.Field{Template: ptr.To("s3://${user}:${pass}@host/$x/${")}, want: "s3://alice:s3cr3t@host/$x/${", ok: true},
		"template absent":    {field: rerollv1alpha1.Field{Template: ptr.To("${user}-${absent}")}},
		"template unknown":   {field: rerollv1alpha1.Field{Template: ptr.To("${nope}")}, wantErr: "nope"},
		"digest":             {field: rerollv1alpha1.Field{DigestOf: []string{"pass"}}, want: keyedDigest(testKey, values, []string{"pass"}), ok: true},
		"digest of unknown":  {field: rerollv1alpha1.Field{DigestOf: []string{"nope"}}, wantErr: "nope"},
		"digest with absent": {field: rerollv1alpha1.Field{DigestOf: []string{"absent"}}, want: keyedDigest(testKey, values, []string{"absent"}), ok: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok, err := render(c.field, values, testKey)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("render() error = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want || ok != c.ok {
				t.Fatalf("render() = %q, %v, %v; want %q, %v", got, ok, err, c.want, c.ok)
			}
		})
	}
}

func TestKeyedDigest(t *testing.T) {
	v := func(s string) sourceValue { return sourceValue{value: []byte(s), present: true} }
	base := keyedDigest(testKey, map[string]sourceValue{"a": v("x"), "b": v("y")}, []string{"a", "b"})
	cases := map[string]struct {
		key    []byte                 // HMAC key
		values map[string]sourceValue // source values
		names  []string               // digested names
		same   bool                   // whether the digest equals base
	}{
		"same input":               {key: testKey, values: map[string]sourceValue{"a": v("x"), "b": v("y")}, names: []string{"a", "b"}, same: true},
		"order and duplicates":     {key: testKey, values: map[string]sourceValue{"a": v("x"), "b": v("y")}, names: []string{"b", "a", "b"}, same: true},
		"a value changed":          {key: testKey, values: map[string]sourceValue{"a": v("x"), "b": v("z")}, names: []string{"a", "b"}},
		"bytes moved across":       {key: testKey, values: map[string]sourceValue{"a": v("xy"), "b": v("")}, names: []string{"a", "b"}},
		"another key":              {key: []byte("another key of thirty-two bytes!"), values: map[string]sourceValue{"a": v("x"), "b": v("y")}, names: []string{"a", "b"}},
		"absent differs from \"\"": {key: testKey, values: map[string]sourceValue{"a": v("x"), "b": {}}, names: []string{"a", "b"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := keyedDigest(c.key, c.values, c.names)
			if len(got) != digestLength {
				t.Fatalf("digest %q has %d characters, want %d", got, len(got), digestLength)
			}
			if (got == base) != c.same {
				t.Fatalf("digest %q vs %q: same = %v, want %v", got, base, got == base, c.same)
			}
		})
	}
}

// A Projection's digests are bound to it: the same values in two
// Projections give unrelated digests. The keys were computed outside Go:
//
//	printf 'reroll.dev/projection\0team-a\0harbor-s3\0' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$(printf 0123456789abcdef0123456789abcdef | xxd -p -c 64)
func TestPlaceKey_BindsDigestsToTheProjection(t *testing.T) {
	cases := map[string]struct {
		// namespace and name are the Projection's; want is its key in hex.
		namespace, name, want string
	}{
		"team-a": {namespace: "team-a", name: "harbor-s3", want: "c49a0456b7f1e279ac236e4ade4232a07aac0a785418ca4e5c22748711dd96d9"},
		"team-b": {namespace: "team-b", name: "harbor-s3", want: "0d2383fd326df2ba6108601f487da0a7ae028613c00c42c5da6c271edc0c6365"},
	}
	values := map[string]sourceValue{"pass": {value: []byte("correct-horse"), present: true}}
	digests := map[string]bool{}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			k := placeKey(testKey, c.namespace, c.name)
			if got := hex.EncodeToString(k); got != c.want {
				t.Fatalf("placeKey = %s, want %s", got, c.want)
			}
			digests[keyedDigest(k, values, []string{"pass"})] = true
		})
	}
	if len(digests) != 2 {
		t.Fatalf("the same value in two Projections gave %d distinct digests, want 2", len(digests))
	}
}

func TestPaths_RefusesNestedPaths(t *testing.T) {
	_, err := paths([]rerollv1alpha1.Field{{Path: "spec.s3"}, {Path: "spec.s3.key"}})
	if err == nil || !strings.Contains(err.Error(), "inside") {
		t.Fatalf("paths() error = %v, want one saying a path lies inside another", err)
	}
	if _, err := paths([]rerollv1alpha1.Field{{Path: "spec.s3"}, {Path: "spec.s3x"}}); err != nil {
		t.Fatalf("paths() error = %v for siblings", err)
	}
}

func TestNeedsWrite(t *testing.T) {
	target := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"a": "1", "n": int64(2)}}}
	parsed := map[string][]string{"spec.a": {"spec", "a"}, "spec.b": {"spec", "b"}, "spec.n": {"spec", "n"}}
	cases := map[string]struct {
		want    map[string]string // desired values by path
		written []string          // paths written last time
		write   bool              // whether a write is needed
	}{
		"equal":                  {want: map[string]string{"spec.a": "1"}, written: []string{"spec.a"}},
		"differs":                {want: map[string]string{"spec.a": "2"}, written: []string{"spec.a"}, write: true},
		"absent":                 {want: map[string]string{"spec.b": "1"}, write: true},
		"not a string":           {want: map[string]string{"spec.n": "2"}, write: true},
		"a written path dropped": {want: map[string]string{"spec.a": "1"}, written: []string{"spec.a", "spec.b"}, write: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := needsWrite(target, c.want, parsed, c.written); got != c.write {
				t.Fatalf("needsWrite() = %v, want %v", got, c.write)
			}
		})
	}
}

func TestRewritten(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType, raw string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}}
	}
	cases := map[string]struct {
		managed []metav1.ManagedFieldsEntry // the target's managedFields
		written []string                    // paths Reroll wrote
		path    string                      // the rewritten path; empty for none
		manager string                      // who owns it now
	}{
		"ours": {
			managed: []metav1.ManagedFieldsEntry{entry(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:a":{}}}`)},
			written: []string{"spec.a"},
		},
		"shared with the same value": {
			managed: []metav1.ManagedFieldsEntry{
				entry("argocd-controller", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:a":{}}}`),
				entry(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:a":{}}}`),
			},
			written: []string{"spec.a"},
		},
		"taken over": {
			managed: []metav1.ManagedFieldsEntry{entry("argocd-controller", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:a":{}}}`)},
			written: []string{"spec.a"},
			path:    "spec.a", manager: "argocd-controller",
		},
		"removed": {
			managed: []metav1.ManagedFieldsEntry{entry(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:b":{}}}`)},
			written: []string{"spec.b", "spec.a"},
			path:    "spec.a",
		},
		"an update by our name is not ours": {
			managed: []metav1.ManagedFieldsEntry{entry(FieldManager, metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:a":{}}}`)},
			written: []string{"spec.a"},
			path:    "spec.a", manager: FieldManager,
		},
		"nothing written yet": {
			managed: []metav1.ManagedFieldsEntry{entry("helm", metav1.ManagedFieldsOperationUpdate, `{"f:spec":{"f:a":{}}}`)},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetManagedFields(c.managed)
			path, manager, found := rewritten(u, FieldManager, c.written)
			if found != (c.path != "") || path != c.path || manager != c.manager {
				t.Fatalf("rewritten() = %q, %q, %v; want %q, %q", path, manager, found, c.path, c.manager)
			}
		})
	}
}

func TestCountRewrite(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limits := ConflictLimits{Rewrites: 3, Window: 10 * time.Minute}
	prev := &rerollv1alpha1.Conflict{Manager: "flux", Path: "spec.a", Count: 2, WindowStart: metav1.NewTime(t0)}
	cases := map[string]struct {
		prev  *rerollv1alpha1.Conflict // the record so far
		now   time.Time                // when this rewrite is seen
		count int32                    // the count after it
		start time.Time                // the window's start after it
	}{
		"first":         {now: t0, count: 1, start: t0},
		"within window": {prev: prev, now: t0.Add(9 * time.Minute), count: 3, start: t0},
		"after window":  {prev: prev, now: t0.Add(11 * time.Minute), count: 1, start: t0.Add(11 * time.Minute)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := countRewrite(c.prev, "spec.a", "argocd", c.now, limits)
			if got.Count != c.count || !got.WindowStart.Time.Equal(c.start) || got.Manager != "argocd" {
				t.Fatalf("countRewrite() = %+v, want count %d from %s by argocd", got, c.count, c.start)
			}
		})
	}
	if prev.Count != 2 {
		t.Fatalf("countRewrite changed its input: %+v", prev)
	}
}

func TestRetryAfter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		missingFor time.Duration // how long the target has been missing
		want       time.Duration // the wait before the next read
	}{
		"just now":     {missingFor: 0, want: 2 * time.Second},
		"for a minute": {missingFor: time.Minute, want: time.Minute},
		"for an hour":  {missingFor: time.Hour, want: 5 * time.Minute},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := retryAfter(t0.Add(-c.missingFor), t0, 5*time.Minute); got != c.want {
				t.Fatalf("retryAfter() = %s, want %s", got, c.want)
			}
		})
	}
}

func TestCheckTemplates(t *testing.T) {
	spec := func(template string) rerollv1alpha1.ProjectionSpec {
		return rerollv1alpha1.ProjectionSpec{
			Sources: []rerollv1alpha1.Source{{Name: "host"}, {Name: "port"}},
			Fields:  []rerollv1alpha1.Field{{Path: "spec.a", Source: "host"}, {Path: "spec.url", Template: &template}},
		}
	}
	cases := map[string]struct {
		template string // the template of spec.url
		wantErr  string // part of the error; empty for none
	}{
		"known names":       {template: "https://${host}:${port}"},
		"no placeholder":    {template: "plain $host {port}"},
		"an unknown name":   {template: "${host}:${nope}", wantErr: "${nope}"},
		"not a placeholder": {template: "${1x} ${}"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := checkTemplates(spec(c.template))
			if (err != nil) != (c.wantErr != "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("checkTemplates() = %v, want an error containing %q", err, c.wantErr)
			}
		})
	}
}

func TestRedaction_NeverQuotesValues(t *testing.T) {
	const value = "s3cr3t-value"
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "example.com", Kind: "Widget"}, "w", fieldpath.ErrorList{
		fieldpath.Invalid(fieldpath.NewPath("spec", "storage", "accessKey"), value, "must be 20 characters"),
	})
	denied := apierrors.NewInternalError(errors.New("admission webhook denied the request: " + value))
	cases := map[string]struct {
		got  string // the text that reaches status, Events or logs
		want string // part of it that must be there
	}{
		"refused field":     {got: refusal(invalid), want: "spec.storage.accessKey (FieldValueInvalid)"},
		"redacted invalid":  {got: redacted{invalid}.Error(), want: "Invalid (HTTP 422"},
		"redacted webhook":  {got: redacted{denied}.Error(), want: "InternalError (HTTP 500"},
		"wrapped redaction": {got: fmt.Errorf("applying: %w", redacted{denied}).Error(), want: "message withheld"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if strings.Contains(c.got, value) || !strings.Contains(c.got, c.want) {
				t.Fatalf("%q: want %q in it and no value", c.got, c.want)
			}
		})
	}
	if !errors.Is(redacted{invalid}, invalid) || !apierrors.IsInvalid(redacted{invalid}) {
		t.Fatal("redacted hides the error from errors.Is and apierrors")
	}
}

// TestCheckInterval: the security review found `interval: 1ms` accepted,
// each check costing a GET of the target and the sources. A shorter
// interval is read as the minimum.
func TestCheckInterval(t *testing.T) {
	cases := map[string]struct {
		// spec is spec.interval; min is Options.MinInterval.
		spec *metav1.Duration
		min  time.Duration
		// want is how often the Projection is checked.
		want time.Duration
	}{
		"1ms is read as the minimum":  {spec: &metav1.Duration{Duration: time.Millisecond}, min: 30 * time.Second, want: 30 * time.Second},
		"a longer interval is kept":   {spec: &metav1.Duration{Duration: 5 * time.Minute}, min: 30 * time.Second, want: 5 * time.Minute},
		"the minimum itself is kept":  {spec: &metav1.Duration{Duration: 30 * time.Second}, min: 30 * time.Second, want: 30 * time.Second},
		"none is ten minutes":         {spec: nil, min: 30 * time.Second, want: 10 * time.Minute},
		"zero is none":                {spec: &metav1.Duration{}, min: 30 * time.Second, want: 10 * time.Minute},
		"a negative interval is none": {spec: &metav1.Duration{Duration: -time.Second}, min: 30 * time.Second, want: 10 * time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := checkInterval(tc.spec, tc.min); got != tc.want {
				t.Errorf("checkInterval(%v, %v) = %v, want %v", tc.spec, tc.min, got, tc.want)
			}
		})
	}
}
