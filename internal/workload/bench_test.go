package workload

import (
	"bytes"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// fanoutDeployment is a Deployment of the fanout bench profile (hack/bench)
// as the cache holds it once Reroll rolled it: opted in, with Reroll's
// record and template patch, and a trigger in its pod template.
func fanoutDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "sh-1"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench-shared", Name: "sh-1", UID: "5b6b4a0e-8d2f-4c51-9a57-6c2f3e0f9d11", ResourceVersion: "4242", Generation: 2,
			Annotations: map[string]string{"reloader.stakater.com/auto": "true",
				"reroll.dev/observed":       `{"ConfigMap/shared":{"CONFIG":"6b86b273ff34fce1","FEATURE_FLAGS":"d4735e3a265e16ee","GREETING":"4e07408562bedb8b"}}`,
				"reroll.dev/observed-key":   "0a1b2c3d",
				"reroll.dev/template-patch": `{"before":"0011223344556677","after":"8899aabbccddeeff","at":"2026-11-27T08:00:00Z"}`}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"reroll.dev/config-hash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}}}}},
			},
		},
	}
}

// BenchmarkMetadataPatch measures the patch of a fanout rollout (the
// record and the pod template's trigger change) and the comparison of the
// reconcile of Reroll's own write, which finds nothing to write.
func BenchmarkMetadataPatch(b *testing.B) {
	b.Run("a rollout", func(b *testing.B) {
		obj := fanoutDeployment()
		desired := obj.DeepCopy()
		desired.Annotations["reroll.dev/observed"] = `{"ConfigMap/shared":{"CONFIG":"6b86b273ff34fce1","FEATURE_FLAGS":"d4735e3a265e16ee","GREETING":"ef2d127de37b942b"}}`
		desired.Spec.Template.Annotations["reroll.dev/config-hash"] = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
		b.ReportAllocs()
		for b.Loop() {
			if _, same, ok := metadataPatch(obj, desired, true); same || !ok {
				b.Fatalf("same %v, ok %v", same, ok)
			}
		}
	})
	b.Run("nothing to write", func(b *testing.B) {
		obj := fanoutDeployment()
		desired := obj.DeepCopy()
		b.ReportAllocs()
		for b.Loop() {
			if _, same, ok := metadataPatch(obj, desired, false); !same || !ok {
				b.Fatalf("same %v, ok %v", same, ok)
			}
		}
	})
}

// BenchmarkPatchAnswer decodes the answer to a fanout rollout's PATCH, in
// protobuf as the API server sends it: the whole Deployment, as the
// patch asked for before, and its PartialObjectMetadata, as patchMetadata
// asks for (issue #36). The object is fanoutDeployment with the status
// and the managedFields entries the bench's Deployments carry (the
// creator's, the Deployment controller's status, Reroll's).
func BenchmarkPatchAnswer(b *testing.B) {
	d := fanoutDeployment()
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "sh-1-5d8c7b9f6d" has successfully progressed.`},
	}}
	now := metav1.Now()
	d.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:reloader.stakater.com/auto":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:envFrom":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}`)}},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: &now, FieldsType: "FieldsV1", Subresource: "status", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}},"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Progressing\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{}}}`)}},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:reroll.dev/observed":{},"f:reroll.dev/observed-key":{},"f:reroll.dev/template-patch":{}}},"f:spec":{"f:template":{"f:metadata":{"f:annotations":{".":{},"f:reroll.dev/config-hash":{}}}}}}`)}},
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	metav1.AddMetaToScheme(s)
	codec := protobuf.NewSerializer(s, s)
	m := &metav1.PartialObjectMetadata{ObjectMeta: d.ObjectMeta}
	d.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	m.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
	for _, c := range []struct {
		name string
		obj  runtime.Object
		into func() runtime.Object
	}{
		{"whole Deployment", d, func() runtime.Object { return &appsv1.Deployment{} }},
		{"PartialObjectMetadata", m, func() runtime.Object { return &metav1.PartialObjectMetadata{} }},
	} {
		var buf bytes.Buffer
		if err := codec.Encode(c.obj, &buf); err != nil {
			b.Fatal(err)
		}
		data := buf.Bytes()
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := codec.Decode(data, nil, c.into()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "bytes/answer")
		})
	}
}
