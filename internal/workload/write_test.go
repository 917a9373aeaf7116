package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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
