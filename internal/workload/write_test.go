package workload

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMetadataPatch(t *testing.T) {
	base := func() *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.ResourceVersion = "42"
		d.Annotations = map[string]string{"reroll.dev/auto": "true", "old": "1"}
		d.Labels = map[string]string{"app": "web"}
		d.Spec.Template.Labels = map[string]string{"app": "web"}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}}
		return d
	}
	cases := map[string]struct {
		// obj is the stored object (base unless set); change makes the
		// desired one from a copy of base; guard is PatchGuarded's.
		obj    client.Object
		change func(client.Object)
		guard  bool
		// want is the patch; same and ok are metadataPatch's.
		want     string
		same, ok bool
	}{
		"a record: metadata annotations set and removed, no guard": {
			change: func(o client.Object) {
				a := o.GetAnnotations()
				a["reroll.dev/observed"] = `{"ConfigMap/cfg":{"a":"01"}}`
				delete(a, "old")
			},
			want: `{"metadata":{"annotations":{"old":null,"reroll.dev/observed":"{\"ConfigMap/cfg\":{\"a\":\"01\"}}"}}}`, ok: true},
		"a record, guarded (PatchGuarded): with the resourceVersion": {
			change: func(o client.Object) { o.GetAnnotations()["reroll.dev/observed"] = "{}" },
			guard:  true,
			want:   `{"metadata":{"annotations":{"reroll.dev/observed":"{}"},"resourceVersion":"42"}}`, ok: true},
		"a rollout by annotation: the pod template's annotations, guarded by the resourceVersion": {
			change: func(o client.Object) {
				d := o.(*appsv1.Deployment)
				d.Annotations["reroll.dev/observed"] = "{}"
				d.Spec.Template.Annotations = map[string]string{"reroll.dev/config-hash": "abc"}
			},
			want: `{"metadata":{"annotations":{"reroll.dev/observed":"{}"},"resourceVersion":"42"},"spec":{"template":{"metadata":{"annotations":{"reroll.dev/config-hash":"abc"}}}}}`, ok: true},
		"labels of both": {
			change: func(o client.Object) {
				d := o.(*appsv1.Deployment)
				d.Labels["reroll.dev/managed"] = "true"
				delete(d.Spec.Template.Labels, "app")
			},
			want: `{"metadata":{"labels":{"reroll.dev/managed":"true"},"resourceVersion":"42"},"spec":{"template":{"metadata":{"labels":{"app":null}}}}}`, ok: true},
		"nothing differs": {
			change: func(client.Object) {}, same: true, ok: true},
		"an empty map and no map are the same": {
			obj:    func() client.Object { d := base(); d.Spec.Template.Annotations = map[string]string{}; return d }(),
			change: func(client.Object) {}, same: true, ok: true},
		"the status only: nothing a patch of the object writes": {
			change: func(o client.Object) { o.(*appsv1.Deployment).Status.Replicas = 3 }, same: true, ok: true},
		"an env var (env-vars strategy): not this patch's to write": {
			change: func(o client.Object) { o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Env[0].Value = "2" }},
		"a spec field besides the maps: not this patch's to write": {
			change: func(o client.Object) {
				o.GetAnnotations()["x"] = "y"
				o.(*appsv1.Deployment).Spec.Paused = true
			}},
		"a StatefulSet's rollout by annotation": {
			obj: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}, Spec: appsv1.StatefulSetSpec{ServiceName: "web"}},
			change: func(o client.Object) {
				o.(*appsv1.StatefulSet).Spec.Template.Annotations = map[string]string{"reroll.dev/config-hash": "abc"}
			},
			want: `{"metadata":{"resourceVersion":"7"},"spec":{"template":{"metadata":{"annotations":{"reroll.dev/config-hash":"abc"}}}}}`, ok: true},
		"a StatefulSet's spec field besides the maps: not this patch's to write": {
			obj: &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{ServiceName: "web"}},
			change: func(o client.Object) {
				o.SetAnnotations(map[string]string{"x": "y"})
				o.(*appsv1.StatefulSet).Spec.ServiceName = "other"
			}},
		"a DaemonSet's record": {
			obj:    &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}},
			change: func(o client.Object) { o.SetLabels(map[string]string{"reroll.dev/managed": "true"}) },
			guard:  true,
			want:   `{"metadata":{"labels":{"reroll.dev/managed":"true"},"resourceVersion":"9"}}`, ok: true},
		"a DaemonSet's spec field besides the maps: not this patch's to write": {
			obj: &appsv1.DaemonSet{},
			change: func(o client.Object) {
				o.(*appsv1.DaemonSet).Spec.Template.Spec.NodeName = "node-1"
			}},
		"a metadata field besides the maps: not this patch's to write": {
			change: func(o client.Object) {
				o.GetAnnotations()["x"] = "y"
				o.SetFinalizers([]string{"example.com/keep"})
			}},
		"a pod template larger than the reused buffers: compared whole": {
			obj: func() client.Object {
				d := base()
				d.Spec.Template.Spec.Containers[0].Env[0].Value = strings.Repeat("v", 100<<10)
				return d
			}(),
			change: func(o client.Object) { o.GetAnnotations()["x"] = "y" },
			want:   `{"metadata":{"annotations":{"x":"y"}}}`, ok: true},
		"a pod template larger than the reused buffers, changed at its end: not this patch's to write": {
			obj: func() client.Object {
				d := base()
				d.Spec.Template.Spec.Containers[0].Env[0].Value = strings.Repeat("v", 100<<10)
				return d
			}(),
			change: func(o client.Object) {
				e := &o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Env[0]
				e.Value = e.Value[:len(e.Value)-1] + "w"
			}},
		"another kind: not this patch's to write": {
			obj:    &batchv1.Job{},
			change: func(o client.Object) { o.SetAnnotations(map[string]string{"x": "y"}) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := tc.obj
			if obj == nil {
				obj = base()
			}
			desired := obj.DeepCopyObject().(client.Object)
			if _, isDeployment := obj.(*appsv1.Deployment); isDeployment && tc.obj == nil {
				desired = base()
			}
			tc.change(desired)
			data, same, ok := metadataPatch(obj, desired, tc.guard)
			if string(data) != tc.want || same != tc.same || ok != tc.ok {
				t.Fatalf("metadataPatch = %s, same %t, ok %t; want %s, same %t, ok %t", data, same, ok, tc.want, tc.same, tc.ok)
			}
		})
	}
}

// jsonMergePatch is metadataPatch's patch as encoding/json writes it from
// maps (its former construction): the oracle of
// TestMetadataPatch_WritesWhatEncodingJSONWrites.
func jsonMergePatch(t *testing.T, from, to [4]map[string]string, rv string, guard bool) string {
	t.Helper()
	mapPatch := func(from, to map[string]string) map[string]any {
		p := map[string]any{}
		for k, v := range to {
			if old, ok := from[k]; !ok || old != v {
				p[k] = v
			}
		}
		for k := range from {
			if _, ok := to[k]; !ok {
				p[k] = nil
			}
		}
		return p
	}
	meta, template := map[string]any{}, map[string]any{}
	for i, field := range []string{"annotations", "labels"} {
		if p := mapPatch(from[i], to[i]); len(p) > 0 {
			meta[field] = p
		}
		if p := mapPatch(from[2+i], to[2+i]); len(p) > 0 {
			template[field] = p
		}
	}
	if len(meta) == 0 && len(template) == 0 {
		return ""
	}
	if guard || len(template) > 0 {
		meta["resourceVersion"] = rv
	}
	p := map[string]any{"metadata": meta}
	if len(template) > 0 {
		p["spec"] = map[string]any{"template": map[string]any{"metadata": template}}
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestMetadataPatch_WritesWhatEncodingJSONWrites compares metadataPatch,
// which writes its JSON itself, with encoding/json over 3,000 random
// changes of the four maps, whose keys and values draw on every character
// JSON or encoding/json escapes (quote, backslash, controls, <, >, &,
// U+2028, U+2029, invalid UTF-8) and on plain and multi-byte ones.
func TestMetadataPatch_WritesWhatEncodingJSONWrites(t *testing.T) {
	pieces := []string{"a", "reroll.dev/observed", `"`, `\`, "\x00", "\x01", "\b", "\f", "\n", "\r", "\t", "\x1f", "\x7f",
		"<", ">", "&", "\u2028", "\u2029", "\xff", "\xe2\x80", "é", "日本", "😀", "{}", `{"k":"v"}`, " ", ""}
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	randomMap := func() map[string]string {
		if rng.IntN(4) == 0 {
			return nil
		}
		m := map[string]string{}
		for range rng.IntN(4) {
			m[word()] = word()
		}
		return m
	}
	for i := range 3000 {
		obj := &appsv1.Deployment{}
		obj.ResourceVersion = word()
		obj.Annotations, obj.Labels = randomMap(), randomMap()
		obj.Spec.Template.Annotations, obj.Spec.Template.Labels = randomMap(), randomMap()
		desired := obj.DeepCopy()
		for _, m := range []*map[string]string{&desired.Annotations, &desired.Labels, &desired.Spec.Template.Annotations, &desired.Spec.Template.Labels} {
			switch rng.IntN(3) {
			case 0: // unchanged
			case 1:
				*m = randomMap()
			case 2:
				if *m == nil {
					*m = map[string]string{}
				}
				(*m)[word()] = word()
			}
		}
		guard := rng.IntN(2) == 0
		want := jsonMergePatch(t,
			[4]map[string]string{obj.Annotations, obj.Labels, obj.Spec.Template.Annotations, obj.Spec.Template.Labels},
			[4]map[string]string{desired.Annotations, desired.Labels, desired.Spec.Template.Annotations, desired.Spec.Template.Labels},
			obj.ResourceVersion, guard)
		data, same, ok := metadataPatch(obj, desired, guard)
		if !ok || same != (want == "") || string(data) != want {
			t.Fatalf("case %d: metadataPatch = %q, same %t, ok %t; encoding/json writes %q", i, data, same, ok, want)
		}
		if want != "" && !json.Valid(data) {
			t.Fatalf("case %d: %q is not JSON", i, data)
		}
	}
}
