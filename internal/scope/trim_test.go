package scope

import (
	"encoding/json"
	"fmt"
	"reflect"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/compact"
	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/envtrim"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/pingc"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// testKey is an installation key as Reroll makes one (32 bytes), not the
// zero Key.
func testKey(t *testing.T) digest.Key {
	t.Helper()
	k, err := digest.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// richTemplate is a pod template with most of what a production workload
// carries: several containers and an init container, images, resources,
// probes, ports, commands, env (a literal, a ConfigMap key, a Secret key),
// envFrom, volumes (ConfigMap, Secret, projected, CSI, emptyDir) and
// pod-level scheduling fields.
func richTemplate() corev1.PodTemplateSpec {
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 5}
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"prometheus.io/scrape": "true", "configmap.reloader.stakater.com/reload": "web-files"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "registry.example/init:2", Command: []string{"sh", "-c", "true"},
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-secret"}}}}}},
			Containers: []corev1.Container{
				{Name: "web", Image: "registry.example/web:1", Args: []string{"--port=8080"}, Resources: res, LivenessProbe: probe, ReadinessProbe: probe,
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
					Env: []corev1.EnvVar{{Name: "MODE", Value: "prod"},
						{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "level"}}},
						{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}}},
					EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web"}, {Name: "tls", MountPath: "/tls"}, {Name: "all", MountPath: "/all"}}},
				{Name: "sidecar", Image: "registry.example/proxy:3", Resources: res,
					VolumeMounts: []corev1.VolumeMount{{Name: "vault", MountPath: "/mnt/secrets"}, {Name: "scratch", MountPath: "/tmp"}}},
			},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-files"}}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls"}}},
				{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}, Items: []corev1.KeyToPath{{Key: "a", Path: "a"}}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}}}}}},
				{Name: "vault", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io", VolumeAttributes: map[string]string{"secretProviderClass": "vault-db"}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			ServiceAccountName:            "web",
			ImagePullSecrets:              []corev1.LocalObjectReference{{Name: "registry"}},
			NodeSelector:                  map[string]string{"pool": "general"},
			Tolerations:                   []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			DNSPolicy:                     corev1.DNSClusterFirst,
			SchedulerName:                 corev1.DefaultSchedulerName,
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
		},
	}
}

// fullObjects are workloads as the API server returns them, in the states
// whose readers the trim must not change: a Deployment settled, one whose
// rollout exceeded its progress deadline, one paused and in progress with
// a condition of another controller's type; a StatefulSet rolling with a
// partition and one OnDelete; a DaemonSet rolling and one OnDelete.
func fullObjects() map[string]client.Object {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "42", Generation: 3,
			Labels:      map[string]string{"team": "a"},
			Annotations: map[string]string{"reroll.dev/auto": "true", eviction.RestartAnnotation: "evict"}}
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	now := metav1.NewTime(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	deployment := func(name string, conds []appsv1.DeploymentCondition, paused bool, updated int32) *appsv1.Deployment {
		m := meta(name)
		if name != "deployment-settled" {
			delete(m.Annotations, eviction.RestartAnnotation)
		}
		return &appsv1.Deployment{ObjectMeta: m,
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: sel, Template: richTemplate(), Paused: paused,
				Strategy:        appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
				MinReadySeconds: 5, RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600)},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 3, UpdatedReplicas: updated, ReadyReplicas: 3, AvailableReplicas: 3,
				TerminatingReplicas: ptr.To[int32](0), CollisionCount: ptr.To[int32](1), Conditions: conds}}
	}
	available := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastUpdateTime: now, LastTransitionTime: now}
	progressed := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "web-5d8f" has successfully progressed.`, LastUpdateTime: now, LastTransitionTime: now}
	exceeded := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-6c9a" has timed out progressing.`, LastUpdateTime: now, LastTransitionTime: now}
	reconciling := appsv1.DeploymentCondition{Type: "Reconciling", Status: corev1.ConditionTrue, Reason: "Scaling", Message: "waiting for the autoscaler"}
	sts := func(name string, strategy appsv1.StatefulSetUpdateStrategy, current string) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: meta(name),
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: sel, Template: richTemplate(), UpdateStrategy: strategy,
				ServiceName: "web", PodManagementPolicy: appsv1.ParallelPodManagement, RevisionHistoryLimit: ptr.To[int32](10), MinReadySeconds: 3,
				VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}},
				PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
				Ordinals:                             &appsv1.StatefulSetOrdinals{Start: 1}},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 2, ReadyReplicas: 2, CurrentReplicas: 1, UpdatedReplicas: 1, AvailableReplicas: 2,
				CurrentRevision: current, UpdateRevision: "web-2", CollisionCount: ptr.To[int32](0)}}
	}
	ds := func(name string, strategy appsv1.DaemonSetUpdateStrategy, updated int32) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{ObjectMeta: meta(name),
			Spec: appsv1.DaemonSetSpec{Selector: sel, Template: richTemplate(), UpdateStrategy: strategy, MinReadySeconds: 2, RevisionHistoryLimit: ptr.To[int32](10)},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 3, DesiredNumberScheduled: 4, CurrentNumberScheduled: 4, NumberReady: 4, NumberAvailable: 4,
				UpdatedNumberScheduled: updated, CollisionCount: ptr.To[int32](2)}}
	}
	return map[string]client.Object{
		// settled: every replica updated and available, restart by eviction
		"deployment-settled": deployment("deployment-settled", []appsv1.DeploymentCondition{available, progressed}, false, 3),
		// failed: kstatus says Failed, Progress says Failed
		"deployment-deadline-exceeded": deployment("deployment-deadline-exceeded", []appsv1.DeploymentCondition{available, exceeded}, false, 1),
		// paused, in progress, with a Reconciling condition whose message kstatus reports
		"deployment-paused-reconciling": deployment("deployment-paused-reconciling", []appsv1.DeploymentCondition{available, reconciling}, true, 2),
		// rolling with a partition (kstatus reads it)
		"statefulset-partition": sts("statefulset-partition", appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}, "web-1"),
		// OnDelete: Reroll restarts it by eviction
		"statefulset-ondelete": sts("statefulset-ondelete", appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}, "web-2"),
		// rolling, half updated
		"daemonset-rolling": ds("daemonset-rolling", appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0))}}, 2),
		// OnDelete, all updated
		"daemonset-ondelete": ds("daemonset-ondelete", appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}, 4),
	}
}

// kindOf returns the workload kind adapter of obj.
func kindOf(obj client.Object) workload.Kind {
	switch obj.(type) {
	case *appsv1.Deployment:
		return workload.Deployment{}
	case *appsv1.StatefulSet:
		return workload.StatefulSet{}
	}
	return workload.DaemonSet{}
}

// cached returns obj as a read of the manager's cache returns it:
// Transform applied to a copy, which the cache holds as a
// compact.Workload, copied as the cache reader copies it
// (DeepCopyObject).
func cached(t *testing.T, obj client.Object) client.Object {
	t.Helper()
	out, err := Transform(testKey(t), nil)(obj.DeepCopyObject())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.(*compact.Workload); !ok {
		t.Fatalf("the cache holds a %T, not a compact.Workload", out)
	}
	return out.(runtime.Object).DeepCopyObject().(client.Object)
}

// unstructuredOf converts obj for kstatus, with its apiVersion and kind set
// as changeset.Sets does.
func unstructuredOf(t *testing.T, obj client.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind(kindOf(obj).Name()))
	return u
}

// readings is every value that a reader of the workload cache takes from
// one workload, to compare a trimmed copy with the full object.
type readings struct {
	Progress     *workload.Progress
	KStatus      status.Status
	KMessage     string
	Health       delivery.State
	Signal       string
	DesiredPods  int
	OnDelete     bool
	Actions      [2]workload.Action
	Paused       bool
	Selector     *metav1.LabelSelector
	Sums         revert.Sums
	After        map[string]string
	References   []reference.Reference
	Template     map[string]string
	OptIn        annotation.OptIn
	GCNames      pingc.Names
	PinConfig    []string
	PinSecrets   []string
	Trigger      string
	CSI          []reference.Reference
	Annotations  map[string]string
	Labels       map[string]string
	Generation   int64
	ResourceVers string
}

func read(t *testing.T, obj client.Object) readings {
	t.Helper()
	k := kindOf(obj)
	var r readings
	if p, ok := k.(workload.Progresser); ok {
		pr := p.Progress(obj)
		r.Progress = &pr
	}
	u := unstructuredOf(t, obj)
	res, err := status.Compute(u)
	if err != nil {
		t.Fatal(err)
	}
	r.KStatus, r.KMessage = res.Status, res.Message
	rolled := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	r.Health, r.Signal = delivery.Health(u, rolled, 10*time.Minute, rolled.Add(5*time.Minute))
	r.DesiredPods = workload.DesiredPods(obj)
	r.OnDelete = workload.OnDelete(obj)
	r.Actions = [2]workload.Action{workload.ActionOf(k, obj, false), workload.ActionOf(k, obj, true)}
	if p, ok := k.(workload.Pausable); ok {
		r.Paused = p.Paused(obj)
	}
	tmpl, err := k.PodTemplate(obj)
	if err != nil {
		t.Fatal(err)
	}
	r.Sums = revert.Held(obj, tmpl)
	// The record of each change Reroll makes (apply.recordPatch):
	// before's Fingerprint, after's Trimmed fingerprint.
	r.After = map[string]string{}
	for what, change := range changes {
		desired := obj.DeepCopyObject().(client.Object)
		change(desired)
		after, _ := k.PodTemplate(desired)
		r.After[what] = r.Sums.Trimmed(after)
	}
	r.References = reference.FromPodTemplate(tmpl)
	r.Template = tmpl.Annotations
	r.OptIn, _ = annotation.DefaultConfig().Parse(obj.GetAnnotations(), tmpl.Annotations)
	r.GCNames = pingc.NamesOf(&tmpl.Spec)
	r.PinConfig, r.PinSecrets = pin.Referenced(&tmpl.Spec)
	if c := trigger.EnvVarContainer(tmpl, reference.Reference{Kind: reference.ConfigMap, Name: "shared", Containers: []string{"sidecar"}}); c != nil {
		r.Trigger = c.Name
	}
	r.CSI = reference.SecretProviderClasses(tmpl)
	switch o := obj.(type) {
	case *appsv1.Deployment:
		r.Selector = o.Spec.Selector
	case *appsv1.StatefulSet:
		r.Selector = o.Spec.Selector
	case *appsv1.DaemonSet:
		r.Selector = o.Spec.Selector
	}
	r.Annotations, r.Labels = obj.GetAnnotations(), obj.GetLabels()
	r.Generation, r.ResourceVers = obj.GetGeneration(), obj.GetResourceVersion()
	return r
}

func TestTransform_ReadersSeeTheSameWorkloadTrimmedAsFull(t *testing.T) {
	for name, full := range fullObjects() {
		t.Run(name, func(t *testing.T) {
			want := read(t, full)
			got := read(t, cached(t, full))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("readers of the trimmed copy see\n%+v\nof the full object\n%+v", got, want)
			}
		})
	}
}

func TestTransform_DropsWhatNoReaderUses(t *testing.T) {
	for name, full := range fullObjects() {
		t.Run(name, func(t *testing.T) {
			got := cached(t, full)
			// Positive control: the full object carries the fields.
			switch o := full.(type) {
			case *appsv1.Deployment:
				if o.Spec.Strategy.RollingUpdate == nil || o.Spec.RevisionHistoryLimit == nil || o.Status.CollisionCount == nil || o.Status.Conditions[0].Message == "" {
					t.Fatal("the fixture lacks the fields to drop")
				}
			case *appsv1.StatefulSet:
				if len(o.Spec.VolumeClaimTemplates) == 0 || o.Spec.ServiceName == "" || o.Spec.Ordinals == nil {
					t.Fatal("the fixture lacks the fields to drop")
				}
			}
			tm, _ := kindOf(got).PodTemplate(got)
			for _, c := range append(tm.Spec.Containers, tm.Spec.InitContainers...) {
				if c.Image != "" || c.Resources.Limits != nil || c.LivenessProbe != nil || c.Ports != nil || c.Command != nil || c.Args != nil {
					t.Errorf("container %s keeps fields nothing reads: %+v", c.Name, c)
				}
			}
			if tm.Labels != nil || tm.Spec.ServiceAccountName != "" || tm.Spec.NodeSelector != nil || tm.Spec.Tolerations != nil ||
				tm.Spec.SecurityContext != nil || tm.Spec.TerminationGracePeriodSeconds != nil || tm.Spec.DNSPolicy != "" {
				t.Errorf("the template keeps fields nothing reads: %+v", tm)
			}
			switch o := got.(type) {
			case *appsv1.Deployment:
				if o.Spec.Strategy.RollingUpdate != nil || o.Spec.RevisionHistoryLimit != nil || o.Spec.MinReadySeconds != 0 ||
					o.Status.CollisionCount != nil || o.Status.TerminatingReplicas != nil {
					t.Errorf("spec or status fields kept: %+v %+v", o.Spec, o.Status)
				}
				for _, c := range o.Status.Conditions {
					if c.Type == appsv1.DeploymentAvailable && c.Message != "" {
						t.Errorf("condition %s keeps its message", c.Type)
					}
					if c.Type == "Reconciling" && c.Message == "" {
						t.Errorf("condition %s lost the message kstatus reports", c.Type)
					}
				}
			case *appsv1.StatefulSet:
				if o.Spec.VolumeClaimTemplates != nil || o.Spec.ServiceName != "" || o.Spec.PodManagementPolicy != "" || o.Spec.Ordinals != nil ||
					o.Spec.PersistentVolumeClaimRetentionPolicy != nil || o.Spec.RevisionHistoryLimit != nil || o.Status.CollisionCount != nil {
					t.Errorf("spec or status fields kept: %+v %+v", o.Spec, o.Status)
				}
			case *appsv1.DaemonSet:
				if o.Spec.UpdateStrategy.RollingUpdate != nil || o.Spec.RevisionHistoryLimit != nil || o.Status.CollisionCount != nil {
					t.Errorf("spec or status fields kept: %+v %+v", o.Spec, o.Status)
				}
			}
		})
	}
}

func TestTransform_IsIdempotent(t *testing.T) {
	for name, full := range fullObjects() {
		t.Run(name, func(t *testing.T) {
			once := cached(t, full)
			twice := cached(t, once)
			if !equality.Semantic.DeepEqual(once, twice) {
				t.Errorf("a second transform changed the object:\n%+v\n%+v", once, twice)
			}
			// The informer applies it to what it already holds too.
			tr := Transform(testKey(t), nil)
			held, err := tr(full.DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			again, err := tr(held)
			if err != nil {
				t.Fatal(err)
			}
			if again != held {
				t.Errorf("a second transform of the held %T returned another object, %T", held, again)
			}
			if !equality.Semantic.DeepEqual(compact.Expand(again.(client.Object)), once) {
				t.Errorf("a second transform of the held object changed it:\n%+v\n%+v", compact.Expand(again.(client.Object)), once)
			}
		})
	}
}

func TestTransform_HoldsACompactWorkloadThatDecodesToTheTrimmedCopy(t *testing.T) {
	for name, full := range fullObjects() {
		t.Run(name, func(t *testing.T) {
			trimmed, err := trimTransform(testKey(t))(full.DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			held, err := Transform(testKey(t), nil)(full.DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			w, ok := held.(*compact.Workload)
			if !ok {
				t.Fatalf("the cache holds a %T, not a compact.Workload", held)
			}
			// Positive control: the trimmed copy holds a template, a
			// status and the sums, so that equality proves a decoding.
			tm, _ := kindOf(full).PodTemplate(trimmed.(client.Object))
			if len(tm.Spec.Containers) == 0 || revert.HeldIn(trimmed.(metav1.Object)) == (revert.Sums{}) {
				t.Fatal("the trimmed copy holds no containers or no sums: the comparison would prove little")
			}
			for what, got := range map[string]client.Object{"Expand": compact.Expand(w), "DeepCopyObject": w.DeepCopyObject().(client.Object)} {
				if reflect.TypeOf(got) != reflect.TypeOf(full) {
					t.Fatalf("%s gives a %T, want a %T", what, got, full)
				}
				if !equality.Semantic.DeepEqual(got, trimmed) {
					t.Errorf("%s gives\n%+v\nthe trimmed copy is\n%+v", what, got, trimmed)
				}
			}
			// The metadata is read without a decoding, and the sums
			// are trusted on the compact form as on the typed one.
			if w.GetName() != full.GetName() || w.GetGeneration() != full.GetGeneration() || !reflect.DeepEqual(w.GetAnnotations(), trimmed.(client.Object).GetAnnotations()) {
				t.Errorf("the compact form's metadata differs: %+v", w.ObjectMeta)
			}
			if revert.HeldIn(w) != revert.HeldIn(trimmed.(metav1.Object)) {
				t.Errorf("the compact form holds sums %+v, the trimmed copy %+v", revert.HeldIn(w), revert.HeldIn(trimmed.(metav1.Object)))
			}
			// A copy is the caller's: changing it leaves the cache's.
			c := w.DeepCopyObject().(client.Object)
			c.GetAnnotations()["changed"] = "yes"
			ct, _ := kindOf(c).PodTemplate(c)
			ct.Spec.Containers[0].Name = "changed"
			if !equality.Semantic.DeepEqual(compact.Expand(w), trimmed) {
				t.Error("changing a copy changed the compact form")
			}
		})
	}
}

// changes are the changes Reroll makes to a workload before it patches it:
// its record in the metadata annotations, the trigger in the template's
// annotations (the annotations strategy) or as an env var (env-vars), a
// reference renamed (a pin to a versioned copy) and a pause
// (pause-period).
var changes = map[string]func(obj client.Object){
	"record in the metadata annotations": func(obj client.Object) {
		workload.SetAnnotation(obj, "reroll.dev/last-rolled", `{"at":"2026-11-27T10:00:00Z"}`)
	},
	"trigger in the template annotations": func(obj client.Object) {
		tm, _ := kindOf(obj).PodTemplate(obj)
		if tm.Annotations == nil {
			tm.Annotations = map[string]string{}
		}
		tm.Annotations["reroll.dev/restartedAt"] = "2026-11-27T10:00:00Z"
	},
	"trigger as an env var of the second container": func(obj client.Object) {
		tm, _ := kindOf(obj).PodTemplate(obj)
		tm.Spec.Containers[1].Env = append(tm.Spec.Containers[1].Env, corev1.EnvVar{Name: "STAKATER_SHARED_CONFIGMAP", Value: "abc123"})
	},
	"a projected ConfigMap pinned to a copy": func(obj client.Object) {
		tm, _ := kindOf(obj).PodTemplate(obj)
		tm.Spec.Volumes[2].Projected.Sources[0].ConfigMap.Name = "proj-cm-v2"
		tm.Spec.Containers[0].Env[1].ValueFrom.ConfigMapKeyRef.Name = "app-config-v2"
	},
	"paused": func(obj client.Object) {
		if p, ok := kindOf(obj).(workload.Pausable); ok {
			p.SetPaused(obj, !p.Paused(obj))
		}
	},
}

// patched applies to full the strategic merge patch that Reroll builds
// (client.StrategicMergeFrom with its optimistic lock, as workload.Patch)
// from original to original changed by change.
func patched(t *testing.T, full, original client.Object, change func(client.Object)) client.Object {
	t.Helper()
	desired := original.DeepCopyObject().(client.Object)
	change(desired)
	data, err := client.StrategicMergeFrom(original, client.MergeFromWithOptimisticLock{}).Data(desired)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), revert.HeldManager) || strings.Contains(string(data), "managedFields") {
		t.Errorf("the patch carries the held sums: %s", data)
	}
	base, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	out, err := strategicpatch.StrategicMergePatch(base, data, full)
	if err != nil {
		t.Fatalf("applying %s: %v", data, err)
	}
	// Into a zero object: decoding into a copy would keep map keys the
	// patch removed.
	res := reflect.New(reflect.TypeOf(full).Elem()).Interface().(client.Object)
	if err := json.Unmarshal(out, res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTransform_PatchBetweenTrimmedCopiesWritesWhatFullCopiesWrite(t *testing.T) {
	for name, full := range fullObjects() {
		for what, change := range changes {
			t.Run(name+"/"+what, func(t *testing.T) {
				want := patched(t, full, full, change)
				got := patched(t, full, cached(t, full), change)
				if equality.Semantic.DeepEqual(want, full) && what != "paused" {
					t.Fatal("the change changed nothing: the comparison would prove nothing")
				}
				if !equality.Semantic.DeepEqual(got, want) {
					t.Errorf("the patch between trimmed copies gives\n%+v\nbetween full copies\n%+v", got, want)
				}
			})
		}
	}
}

func TestTransform_UndoOverATrimmedCopyWritesTheRevisionWhole(t *testing.T) {
	for name, full := range fullObjects() {
		t.Run(name, func(t *testing.T) {
			k := kindOf(full)
			prevT, _ := k.PodTemplate(full)
			prev := prevT.DeepCopy()
			// The workload after Reroll's rollout: a trigger and a pin.
			rolled := full.DeepCopyObject().(client.Object)
			changes["trigger in the template annotations"](rolled)
			changes["a projected ConfigMap pinned to a copy"](rolled)
			undo := func(obj client.Object) {
				// As apply.Writer.Apply writes an undo.
				cur, _ := k.PodTemplate(obj)
				_ = k.SetPodTemplate(obj, envtrim.Over(cur, prev))
			}
			want := patched(t, rolled, rolled, undo)
			got := patched(t, rolled, cached(t, rolled), undo)
			if equality.Semantic.DeepEqual(want, rolled) {
				t.Fatal("the undo changed nothing: the comparison would prove nothing")
			}
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("the undo over a trimmed copy gives\n%+v\nover the full object\n%+v", got, want)
			}
			wantT, _ := k.PodTemplate(want)
			if !equality.Semantic.DeepEqual(wantT, prev) {
				t.Errorf("the undo does not write the revision back:\n%+v\n%+v", wantT, prev)
			}
		})
	}
}

// benchCreatorFields is the fieldsV1 of the managedFields entry of the
// client that created a fanout Deployment, as the API server writes it.
const benchCreatorFields = `{"f:metadata":{"f:annotations":{".":{},"f:reloader.stakater.com/auto":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:envFrom":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}`

// fanoutDeployment returns Deployment i of the fanout bench profile as the
// API server returns it once synced (defaulted, with the managedFields of
// its creator and of the Deployment controller, the revision annotation and
// the conditions of a Deployment of zero replicas).
func fanoutDeployment(i int) *appsv1.Deployment {
	// The API server dates the creator's entry with the creation, to the
	// second; the Deployment controller writes its revision a second later.
	created := metav1.NewTime(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	revised := metav1.NewTime(created.Add(time.Second))
	name := fmt.Sprintf("app-%04d", i)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench-shared", Name: name, UID: types.UID(fmt.Sprintf("6f1c2a4e-1b7d-4c1e-9a3f-%012d", i)), ResourceVersion: strconv.Itoa(1000 + i), Generation: 1,
			CreationTimestamp: created,
			Annotations:       map[string]string{"reloader.stakater.com/auto": "true", "deployment.kubernetes.io/revision": "1"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1",
				Time: &created, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(benchCreatorFields)}},
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1",
					Time: &revised, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}}}`)}},
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Subresource: "status",
					Time: &revised, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{}}}`)}}}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Strategy:             appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromString("25%"))}},
			RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
					EnvFrom:                []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}},
					TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}},
					RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30), DNSPolicy: corev1.DNSClusterFirst,
					SecurityContext: &corev1.PodSecurityContext{}, SchedulerName: corev1.DefaultSchedulerName}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, LastUpdateTime: revised, LastTransitionTime: revised,
				Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, LastUpdateTime: revised, LastTransitionTime: revised,
				Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", name+"-5d8f7c9b6")}}},
	}
}

// BenchmarkTransform_FanoutDeployment measures the transform of one
// Deployment of the fanout bench profile as the API server returns it
// (fanoutDeployment): what each event of a workload costs, with the
// compact form (compact) and without (trimmed: the trim alone).
func BenchmarkTransform_FanoutDeployment(b *testing.B) {
	d := fanoutDeployment(1)
	for _, form := range []string{"compact", "trimmed"} {
		b.Run(form, func(b *testing.B) {
			tr := Transform(digest.Key{}, nil)
			if form == "trimmed" {
				tr = trimTransform(digest.Key{})
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr(d.DeepCopy()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExpand_FanoutDeployment measures the copy of one cached
// Deployment of the fanout bench profile that each read of the cache
// makes: the decoding of the compact form (compact), which each event
// handler that reads a spec makes too, and the deep copy of the trimmed
// typed object (trimmed) that the cache made before it.
func BenchmarkExpand_FanoutDeployment(b *testing.B) {
	for _, form := range []string{"compact", "trimmed"} {
		b.Run(form, func(b *testing.B) {
			tr := Transform(digest.Key{}, nil)
			if form == "trimmed" {
				tr = trimTransform(digest.Key{})
			}
			held, err := tr(fanoutDeployment(1))
			if err != nil {
				b.Fatal(err)
			}
			o := held.(runtime.Object)
			b.ReportAllocs()
			for b.Loop() {
				_ = o.DeepCopyObject()
			}
		})
	}
}

// heldHeap returns the live heap, in bytes per object, that n objects
// made by each and kept take (runtime.MemStats.HeapAlloc after a
// collection, before and after).
func heldHeap(n int, each func(i int) any) float64 {
	held := make([]any, n)
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	for i := range held {
		held[i] = each(i)
	}
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	goruntime.KeepAlive(held)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// BenchmarkTransform_HeapPerCachedDeployment reports the live heap that
// the cache holds per Deployment of the fanout bench profile, in the
// compact form (B/compact) and as the trimmed typed object that the cache
// held before it (B/trimmed), over 2,000 objects (the profile's 2,050
// Deployments, rounded). Run with -benchtime=1x: each iteration measures
// anew.
func BenchmarkTransform_HeapPerCachedDeployment(b *testing.B) {
	const n = 2000
	full := make([]*appsv1.Deployment, n)
	for i := range full {
		full[i] = fanoutDeployment(i)
	}
	k := digest.Key{}
	for b.Loop() {
		for form, tr := range map[string]toolscache.TransformFunc{"compact": Transform(k, nil), "trimmed": trimTransform(k)} {
			per := heldHeap(n, func(i int) any {
				out, err := tr(full[i].DeepCopy())
				if err != nil {
					b.Fatal(err)
				}
				return out
			})
			b.ReportMetric(per, "B/"+form)
		}
	}
}

func TestTransform_TakesWorkloadsFromTheBlocksWhileOn(t *testing.T) {
	var blocks compact.Blocks
	blocks.SetOn(true)
	tr := Transform(digest.Key{}, &blocks)
	var got [2]*compact.Workload
	for i := range got {
		out, err := tr(fanoutDeployment(i))
		if err != nil {
			t.Fatal(err)
		}
		w, ok := out.(*compact.Workload)
		if !ok {
			t.Fatalf("the transform returned %T, want a *compact.Workload", out)
		}
		got[i] = w
	}
	if uintptr(unsafe.Pointer(got[1])) != uintptr(unsafe.Pointer(got[0]))+unsafe.Sizeof(compact.Workload{}) {
		t.Error("two Deployments transformed while the blocks are on are not next to each other in one array")
	}
}
