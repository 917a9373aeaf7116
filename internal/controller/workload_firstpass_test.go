package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/idlegc"
)

func TestWorkloadReconciler_FirstPassEndsOnceEveryWorkloadIsLookedAt(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	create(t, configMap(ns, "cfg", map[string]string{"a": "1"}))
	const n = 20
	for i := range n {
		create(t, deployment(ns, fmt.Sprintf("web-%d", i), autoOn, podSpec(envFrom("cfg"))))
	}

	// One worker per kind: the pass can end only after the reconcile of the
	// last queued workload has returned.
	pass := idlegc.NewFirstPass()
	startReroll(t, ns, Options{FirstPass: pass, MaxConcurrentReconciles: 1})
	g.Eventually(pass.Done()).Within(2 * time.Minute).Should(gomega.BeClosed())

	// Every workload was recorded on first sight before the pass ended.
	var list appsv1.DeploymentList
	g.Expect(k8s.List(t.Context(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	g.Expect(list.Items).To(gomega.HaveLen(n))
	for _, d := range list.Items {
		g.Expect(d.Annotations).To(gomega.HaveKey(ObservedAnnotation), d.Name)
	}
}
