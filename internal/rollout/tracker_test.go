package rollout

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// laggingCache is a client.Reader whose List ran before the cache held
// the rollout's patch and whose Get runs after: the moment between the two
// reads of Tracker.Count.
type laggingCache struct {
	client.Reader
	current *appsv1.Deployment
}

func (c laggingCache) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.current.DeepCopyInto(obj.(*appsv1.Deployment))
	return nil
}

func (c laggingCache) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

// The safety bench saw 21 rollouts under a bound of 20: a rollout written
// but missing from the list, whose cached copy then caught up before the
// in-flight check, was counted by neither.
func TestRollouts_CountsARolloutTheCacheShowsBetweenItsReads(t *testing.T) {
	g := gomega.NewWithT(t)
	now := time.Date(2026, 11, 22, 19, 0, 0, 0, time.UTC)
	kind := workload.Deployment{}
	p, ok := ProgressOf(kind)
	g.Expect(ok).To(gomega.BeTrue())
	tr := NewTracker(0, digest.Key{}, nil, func() time.Time { return now })
	tr.Add(Kind{Kind: kind, Progress: p})

	before := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "b-uid", ResourceVersion: "10", Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0)}}
	stamp := now.Add(-time.Second).Format(time.RFC3339)
	tr.Started(kind, before, plan.Sign(digest.Key{}, "b-uid", plan.RolledAtAnnotation, stamp), 10*time.Minute)
	// The cache now holds the patch: stamped, a generation ahead of the
	// status.
	after := before.DeepCopy()
	after.ResourceVersion, after.Generation = "11", 2
	after.Annotations = map[string]string{plan.RolledAtAnnotation: plan.Sign(digest.Key{}, "b-uid", plan.RolledAtAnnotation, stamp)}
	after.Status.ObservedGeneration = 1

	self := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "self", UID: "self-uid"}}
	r, err := tr.Count(t.Context(), laggingCache{current: after}, self, now, now, nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(r.Running).To(gomega.Equal(1), "the rollout counts although the list missed it")
	g.Expect(r.RunningInNamespace).To(gomega.Equal(1))
	g.Expect(tr.inflight).To(gomega.BeEmpty(), "the cache caught up: the in-flight entry goes")

	// Once its status reports it complete, it no longer counts.
	tr.Started(kind, before, plan.Sign(digest.Key{}, "b-uid", plan.RolledAtAnnotation, stamp), 10*time.Minute)
	done := after.DeepCopy()
	done.Status.ObservedGeneration = 2
	r, err = tr.Count(t.Context(), laggingCache{current: done}, self, now, now, nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(r.Running).To(gomega.BeZero())
}

// An opt-in pin waiting for a slot writes nothing on its workload, so the
// cache's index cannot find it: the Tracker's notes wake it, oldest first,
// each once, after the changes waiting (none here).
func TestRollouts_AFreedSlotWakesTheOldestOptInPins(t *testing.T) {
	g := gomega.NewWithT(t)
	kind := workload.Deployment{}
	p, ok := ProgressOf(kind)
	g.Expect(ok).To(gomega.BeTrue())
	wake := make(chan event.GenericEvent, WakeBuffer)
	tr := NewTracker(0, digest.Key{}, nil, time.Now)
	tr.Add(Kind{Kind: kind, Progress: p, Wake: wake})
	d := func(name string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")}}
	}
	for _, name := range []string{"a", "b", "a", "c", "d"} {
		tr.WaitOptIn(kind, d(name))
	}
	woken := func() []string {
		var out []string
		for {
			select {
			case e := <-wake:
				out = append(out, e.Object.GetName())
			default:
				return out
			}
		}
	}
	g.Expect(tr.WakeOldest(t.Context(), laggingCache{})).To(gomega.Succeed())
	g.Expect(woken()).To(gomega.Equal([]string{"a", "b", "c"}), "the three oldest, a noted once")
	g.Expect(tr.WakeOldest(t.Context(), laggingCache{})).To(gomega.Succeed())
	g.Expect(woken()).To(gomega.Equal([]string{"d"}))
	g.Expect(tr.WakeOldest(t.Context(), laggingCache{})).To(gomega.Succeed())
	g.Expect(woken()).To(gomega.BeEmpty(), "each is woken once; one that still waits is noted again")
}
