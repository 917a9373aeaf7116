package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// tracker watches every Deployment, as a user's watch would, and records
// when each one's pod template was changed by Reroll.
type tracker struct {
	mu       sync.Mutex
	rollouts map[string][]time.Time
}

func newTracker(ctx context.Context, cs kubernetes.Interface) (*tracker, error) {
	t := &tracker{rollouts: map[string][]time.Time{}}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Apps().V1().Deployments().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { t.see(nil, obj.(*appsv1.Deployment)) },
		UpdateFunc: func(old, obj any) {
			t.see(old.(*appsv1.Deployment), obj.(*appsv1.Deployment))
		},
	})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("the bench's %v informer did not sync", typ)
		}
	}
	return t, nil
}

func (t *tracker) see(old, d *appsv1.Deployment) {
	now := time.Now()
	key := d.Namespace + "/" + d.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	// Any change of the pod template is a rollout: Reroll's trigger
	// annotation (reroll.dev/config-hash, or Reloader's
	// last-reloaded-from for a workload that opted in with Reloader's
	// annotation) or the env var that Reloader writes by default.
	if old != nil && !equality.Semantic.DeepEqual(old.Spec.Template, d.Spec.Template) {
		t.rollouts[key] = append(t.rollouts[key], now)
	}
}

// lastRollout returns when key was last rolled.
func (t *tracker) lastRollout(key string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.rollouts[key]
	if len(r) == 0 {
		return time.Time{}, false
	}
	return r[len(r)-1], true
}

func (t *tracker) rolloutCount(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.rollouts[key])
}

// rolloutsExcept counts the rollouts of every Deployment not in keys.
func (t *tracker) rolloutsExcept(keys map[string]bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for k, r := range t.rollouts {
		if !keys[k] {
			n += len(r)
		}
	}
	return n
}

// waitRollout waits for the (n+1)th rollout of key and returns when the
// watch showed it.
func (t *tracker) waitRollout(ctx context.Context, key string, n int, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		t.mu.Lock()
		r := t.rollouts[key]
		t.mu.Unlock()
		if len(r) > n {
			return r[n], nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s was not rolled within %s", key, timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}
