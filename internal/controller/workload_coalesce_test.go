package controller

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWorkloadReconciler_BurstAcrossObjectsRollsOnce: a workload's two
// ConfigMaps and its Secret are written one after another; the changes are
// held back and one rollout answers all three. The window is far longer
// than the three writes take on a loaded machine, so nothing here depends
// on timing; that a later change restarts the window, and max-wait, are
// checked with a fake clock in TestDebouncer.
func TestWorkloadReconciler_BurstAcrossObjectsRollsOnce(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	startReroll(t, ns, Options{CoalesceWindow: 20 * time.Second, CoalesceMaxWait: 10 * time.Minute})
	create(t, configMap(ns, "cfg", map[string]string{"k": "0"}))
	create(t, secret(ns, "creds", map[string]string{"k": "0"}))
	create(t, configMap(ns, "more", map[string]string{"k": "0"}))
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{envFromSource("ConfigMap", "cfg"), envFromSource("Secret", "creds"), envFromSource("ConfigMap", "more")}
	}))
	create(t, d)
	recorded(t, d)

	update(t, configMap(ns, "cfg", nil), func(cm *corev1.ConfigMap) { cm.Data["k"] = "1" })
	update(t, secret(ns, "creds", nil), func(s *corev1.Secret) { s.Data["k"] = []byte("1") })
	update(t, configMap(ns, "more", nil), func(cm *corev1.ConfigMap) { cm.Data["k"] = "1" })

	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	note := rolledEvents(t, ns, "web")[0]
	for _, id := range []string{"ConfigMap/cfg", "Secret/creds", "ConfigMap/more"} {
		g.Expect(note).To(gomega.ContainSubstring(id + " changed keys k"))
	}
	g.Consistently(func() []string { return rolledEvents(t, ns, "web") }).Should(gomega.HaveLen(1))
	g.Expect(get(t, d).Spec.Template.Annotations).To(gomega.HaveKey("reroll.dev/config-hash"))
}

// TestWorkloadReconciler_ManyWritersRollOncePerMaxWait: 8 writers patch
// one Secret without pause for a while; its Deployment rolls at most once
// per --coalesce-max-wait, plus the burst's end. Before, each rollout's own
// write reconciled the Deployment at once, which rolled again for the
// writes made meanwhile (25 and 56 rollouts in 60 s, with a max-wait of
// 10 s).
func TestWorkloadReconciler_ManyWritersRollOncePerMaxWait(t *testing.T) {
	t.Parallel()
	g := newT(t)
	ns := newNamespace(t)
	const (
		writers  = 8
		duration = 12 * time.Second
		maxWait  = 3 * time.Second
		window   = 500 * time.Millisecond
	)
	startReroll(t, ns, Options{CoalesceWindow: window, CoalesceMaxWait: maxWait})
	create(t, secret(ns, "creds", map[string]string{"k": "0"}))
	d := deployment(ns, "web", autoOn, podSpec(func(s *corev1.PodSpec) {
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{envFromSource("Secret", "creds")}
	}))
	create(t, d)
	recorded(t, d)

	var wg sync.WaitGroup
	var writes atomic.Int64
	var mu sync.Mutex
	var stamps []time.Time // when each write was accepted
	end := time.Now().Add(duration)
	for w := range writers {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				patch := []byte(fmt.Sprintf(`{"stringData":{"k":"%d-%d"}}`, w, i))
				if err := k8s.Patch(t.Context(), secret(ns, "creds", nil), client.RawPatch(types.MergePatchType, patch)); err == nil {
					writes.Add(1)
					mu.Lock()
					stamps = append(stamps, time.Now())
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	// The last burst ends within max-wait; then nothing more rolls.
	g.Eventually(func() []string { return rolledEvents(t, ns, "web") }).ShouldNot(gomega.BeEmpty())
	g.Consistently(func() int { return len(rolledEvents(t, ns, "web")) }, 2*maxWait).Should(gomega.BeNumerically(">", 0))
	rolled := len(rolledEvents(t, ns, "web"))
	// A loaded machine may pause every writer longer than the window: each
	// such quiet gap ends a burst, and may add one rollout.
	slices.SortFunc(stamps, time.Time.Compare)
	gaps := 0
	for i := 1; i < len(stamps); i++ {
		if stamps[i].Sub(stamps[i-1]) >= window {
			gaps++
		}
	}
	bound := int(math.Ceil(float64(duration)/float64(maxWait))) + 1 + gaps
	t.Logf("%d writes, %d quiet gaps, %d rollouts, at most %d allowed", writes.Load(), gaps, rolled, bound)
	g.Expect(writes.Load()).To(gomega.BeNumerically(">", 10*writers), "the writers wrote continuously")
	g.Expect(rolled).To(gomega.BeNumerically(">=", 2), "a stream of changes longer than max-wait rolls more than once")
	g.Expect(rolled).To(gomega.BeNumerically("<=", bound))
}
