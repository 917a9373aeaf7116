package main

import (
	"testing"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	csiv1 "sigs.k8s.io/secrets-store-csi-driver/apis/v1"

	rerollv1alpha1 "github.com/reroll/reroll/api/v1alpha1"
)

// The manager's scheme is client-go's, which its package builds when it is
// loaded, not a second copy of every built-in type (issue #36), and it
// knows the types Reroll adds.
func TestNewScheme_IsClientGosWithRerollsTypes(t *testing.T) {
	g := gomega.NewWithT(t)
	scheme, err := newScheme()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	// Positive control: the built-in, CSI and Reroll types are all known.
	for _, obj := range []runtime.Object{&appsv1.Deployment{}, &csiv1.SecretProviderClassPodStatus{}, &rerollv1alpha1.Projection{}} {
		_, _, err := scheme.ObjectKinds(obj)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "%T", obj)
	}
	g.Expect(scheme).To(gomega.BeIdenticalTo(clientgoscheme.Scheme))
}
