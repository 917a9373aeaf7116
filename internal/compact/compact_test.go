package compact

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// meta is the metadata of each fixture: every field the cache keeps.
func meta(name string) metav1.ObjectMeta {
	at := metav1.NewTime(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	return metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "42", Generation: 3,
		CreationTimestamp: at, Labels: map[string]string{"app": name}, Annotations: map[string]string{"reloader.stakater.com/auto": "true"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Thing", Name: "owner", UID: "o"}},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "reroll.dev/last-written", APIVersion: "full rest", Operation: metav1.ManagedFieldsOperationUpdate, Time: &at}}}
}

// template is a trimmed pod template.
var template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"reroll.dev/config-hash": "abc"}},
	Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "A", Value: "1"}},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
		Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}}}}}

func TestFrom_ExpandGivesBackTheObject(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 27, 9, 1, 0, 0, time.UTC))
	cases := map[string]client.Object{
		// spec, status and conditions of each kind.
		"deployment": &appsv1.Deployment{ObjectMeta: meta("web"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Paused: true,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: template, ProgressDeadlineSeconds: ptr.To[int32](600)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 1, AvailableReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: at, LastTransitionTime: at}}}},
		"statefulset": &appsv1.StatefulSet{ObjectMeta: meta("db"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Template: template,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, CurrentRevision: "db-1", UpdateRevision: "db-2", UpdatedReplicas: 1}},
		"daemonset": &appsv1.DaemonSet{ObjectMeta: meta("agent"), Spec: appsv1.DaemonSetSpec{Template: template,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 3, DesiredNumberScheduled: 4, NumberAvailable: 4, UpdatedNumberScheduled: 2}},
	}
	for name, obj := range cases {
		t.Run(name, func(t *testing.T) {
			want := obj.DeepCopyObject()
			c, ok := From(obj.DeepCopyObject())
			if !ok {
				t.Fatal("not compacted")
			}
			w := c.(*Workload)
			if !reflect.DeepEqual(&w.ObjectMeta, want.(metav1.ObjectMetaAccessor).GetObjectMeta()) {
				t.Errorf("metadata %+v", w.ObjectMeta)
			}
			for what, got := range map[string]any{"Expand": Expand(w), "DeepCopyObject": w.DeepCopyObject()} {
				if !equality.Semantic.DeepEqual(got, want) {
					t.Errorf("%s gives\n%+v\nwant\n%+v", what, got, want)
				}
			}
			// A decoded copy is the caller's.
			a := Expand(w).(client.Object)
			a.GetLabels()["app"] = "changed"
			a.GetManagedFields()[0].APIVersion = "changed"
			if !equality.Semantic.DeepEqual(Expand(w), want) {
				t.Error("changing a decoded copy changed the compact form")
			}
			// Idempotent.
			if again, _ := From(w); again != w {
				t.Error("From of a Workload returned another object")
			}
		})
	}
}

func TestFrom_KeepsOtherKinds(t *testing.T) {
	for name, obj := range map[string]any{"job": &batchv1.Job{}, "cronjob": &batchv1.CronJob{}, "pod": &corev1.Pod{}, "string": "x"} {
		if _, ok := From(obj); ok {
			t.Errorf("%s: compacted", name)
		}
	}
	j := &batchv1.Job{}
	if Expand(j) != client.Object(j) {
		t.Error("Expand of a Job returned another object")
	}
}

func TestNoCopyFor(t *testing.T) {
	var lo client.ListOptions
	lo.ApplyOptions([]client.ListOption{NoCopyFor(&batchv1.JobList{})})
	if lo.UnsafeDisableDeepCopy == nil || !*lo.UnsafeDisableDeepCopy {
		t.Error("a JobList is not listed without copies")
	}
	for _, l := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.StatefulSetList{}, &appsv1.DaemonSetList{}} {
		var lo client.ListOptions
		lo.ApplyOptions([]client.ListOption{NoCopyFor(l)})
		if lo.UnsafeDisableDeepCopy != nil {
			t.Errorf("%T listed without copies", l)
		}
	}
}
