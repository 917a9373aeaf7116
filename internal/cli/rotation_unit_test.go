package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/pingc"
	"github.com/reroll/reroll/internal/reference"
)

func TestRotationOf_ShowsEachVersionWithTheWorkloadsAndPodsStillOnIt(t *testing.T) {
	g := gomega.NewWithT(t)
	g.Expect(rotationAnnotation).To(gomega.Equal(pingc.AnnotationRotation), "the plugin reads the record Reroll writes")
	now := time.Date(2026, 11, 26, 23, 40, 0, 0, time.UTC)
	copyOf := func(name string, created time.Time, rec *pingc.Record) metav1.PartialObjectMetadata {
		m := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created),
			Annotations: map[string]string{pin.AnnotationCopyOf: "db"}}}
		if rec != nil {
			m.Annotations[pingc.AnnotationRotation] = rec.Encode()
		}
		return m
	}
	since := now.Add(-5 * time.Minute)
	copies := []metav1.PartialObjectMetadata{
		copyOf("db-0000000001", now.Add(-time.Hour), &pingc.Record{Since: now.Add(-50 * time.Minute), Converged: now.Add(-40 * time.Minute)}),
		copyOf("db-0000000002", now.Add(-50*time.Minute), &pingc.Record{Since: since, Pods: 3, Workloads: 1}),
		copyOf("db-0000000003", now.Add(-5*time.Minute), nil),
		// Another source's copy that the label of a long name shares.
		func() metav1.PartialObjectMetadata {
			m := copyOf("other-0000000004", now, nil)
			m.Annotations[pin.AnnotationCopyOf] = "other"
			return m
		}(),
	}
	pod := func(name, rs, secret string, phase corev1.PodPhase) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}}}}}}
		if rs != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: rs, Controller: ptr.To(true)}}
		}
		return p
	}
	pods := []corev1.Pod{
		pod("api-new-1", "api-new", "db-0000000003", corev1.PodRunning),
		pod("api-new-2", "api-new", "db-0000000003", corev1.PodRunning),
		pod("api-old-1", "api-old", "db-0000000002", corev1.PodRunning),
		pod("debug", "", "db-0000000002", corev1.PodPending),
		pod("done", "", "db-0000000001", corev1.PodSucceeded),
	}
	sets := []metav1.PartialObjectMetadata{
		{ObjectMeta: metav1.ObjectMeta{Name: "api-new", OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "api", Controller: ptr.To(true)}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "api-old", OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "api", Controller: ptr.To(true)}}}},
	}
	r := rotationOf(reference.Secret, "shop", "db", copies, pods, sets)
	g.Expect(r.Object).To(gomega.Equal("Secret/db"))
	g.Expect(r.Versions).To(gomega.HaveLen(3), "only db's copies")
	g.Expect(r.Versions[0]).To(gomega.Equal(rotationVersion{Copy: "db-0000000003", Created: now.Add(-5 * time.Minute), State: versionCurrent,
		Workloads: []string{"Deployment/api"}, Pods: []string{"api-new-1", "api-new-2"}}))
	g.Expect(r.Versions[1]).To(gomega.Equal(rotationVersion{Copy: "db-0000000002", Created: now.Add(-50 * time.Minute), State: versionPrevious, Since: &since,
		Workloads: []string{"Deployment/api", "Pod/debug"}, Pods: []string{"api-old-1", "debug"}}))
	g.Expect(r.Versions[2].State).To(gomega.Equal(versionConverged))
	g.Expect(r.Versions[2].Pods).To(gomega.BeEmpty(), "a finished pod is on no version")

	var out bytes.Buffer
	g.Expect(r.write(&out, false, now)).To(gomega.Succeed())
	g.Expect(out.String()).To(gomega.MatchRegexp(`db-0000000002\s+50m\s+previous\s+5m ago\s+-\s+Deployment/api,Pod/debug\s+2\n`))
	g.Expect(out.String()).To(gomega.MatchRegexp(`db-0000000001\s+60m\s+converged\s+50m ago\s+40m ago\s+-\s+0\n`))

	g.Expect(rotationOf(reference.Secret, "shop", "none", copies, pods, sets).Notes).To(gomega.ConsistOf(gomega.ContainSubstring("has no copies")))
}
