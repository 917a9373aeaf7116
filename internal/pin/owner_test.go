package pin

import (
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOwnerReference_IsNoControllerAndBlocksNothing(t *testing.T) {
	g := gomega.NewWithT(t)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u1"}}
	ref := OwnerReference(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	g.Expect(ref.APIVersion).To(gomega.Equal("apps/v1"))
	g.Expect(ref.Kind).To(gomega.Equal("Deployment"))
	g.Expect(ref.Name).To(gomega.Equal("web"))
	g.Expect(string(ref.UID)).To(gomega.Equal("u1"))
	g.Expect(*ref.Controller).To(gomega.BeFalse())
	g.Expect(*ref.BlockOwnerDeletion).To(gomega.BeFalse())
}

func TestAddOwner_AddsEachWorkloadOnce(t *testing.T) {
	g := gomega.NewWithT(t)
	c := configMap("ns", "app-0123456789", nil)
	web := OwnerReference(&metav1.ObjectMeta{Name: "web", UID: "u1"}, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	api := OwnerReference(&metav1.ObjectMeta{Name: "api", UID: "u2"}, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	g.Expect(AddOwner(c, web)).To(gomega.BeTrue())
	g.Expect(AddOwner(c, api)).To(gomega.BeTrue())
	g.Expect(AddOwner(c, web)).To(gomega.BeFalse())
	g.Expect(c.OwnerReferences).To(gomega.Equal([]metav1.OwnerReference{web, api}))
}
