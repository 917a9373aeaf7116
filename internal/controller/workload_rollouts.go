package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// rolloutIndex is the field index of the concurrent rollout bound on every
// kind that reports progress: "running" for a workload whose rollout Reroll
// started (plan.RolledAtAnnotation) and whose status does not report it
// complete; "pending" for one with a deferred change
// (plan.PendingAnnotation); "waiting" when that change waits for a slot.
// The running set is derived from the objects alone, so a restarted Reroll
// counts exactly what runs.
const rolloutIndex = "reroll.dev/rollout"

// Values of rolloutIndex.
const (
	rolloutRunning = "running"
	rolloutPending = "pending"
	rolloutWaiting = "waiting"
)

// rollouts counts the rollouts Reroll started across every kind, for the
// concurrent rollout bound. Its lock makes count, decide and write one step
// for bounded workloads, so that concurrent reconciles cannot both take the
// last slot. inflight holds the rollouts written but not yet seen in the
// cache; each entry goes once the cache shows its stamp (an in-memory bridge
// over the cache's lag, never the truth after a restart).
type rollouts struct {
	mu       sync.Mutex
	kinds    []progressKind
	inflight map[types.UID]inflight
	// timeout is --rollout-timeout.
	timeout time.Duration
	// key verifies the signed state annotations (plan.Sign).
	key digest.Key
	// reader is the manager's cache, for the metrics.
	reader client.Reader
	now    func() time.Time
}

// progressKind is a kind whose status reports rollout progress; wake
// carries requests to reconcile its workloads (see wakeOldest).
type progressKind struct {
	kind     workload.Kind
	progress workload.Progresser
	wake     chan event.GenericEvent
}

// wakeBuffer is the room for wake-ups per kind; a wake-up that does not fit
// is dropped (the workload is decided again on its Recheck anyway).
const wakeBuffer = 256

// wakeCount is how many of the oldest waiting workloads a freed slot wakes:
// more than one, in case the oldest is held by its Namespace's bound.
const wakeCount = 3

type inflight struct {
	kind workload.Kind
	key  client.ObjectKey
	// before is the resourceVersion the rollout's patch was guarded by:
	// once the cache holds another, it holds the patch (or a later write).
	before string
	until  time.Time
}

func newRollouts(timeout time.Duration, key digest.Key, reader client.Reader, now func() time.Time) *rollouts {
	return &rollouts{inflight: map[types.UID]inflight{}, timeout: timeout, key: key, reader: reader, now: now}
}

// progressOf returns k's Progresser when the bound counts its rollouts: the
// built-in kinds and Argo Rollouts.
func progressOf(k workload.Kind) (workload.Progresser, bool) {
	if u, ok := k.(workload.Unstructured); ok && !u.ArgoRollout {
		return nil, false
	}
	p, ok := k.(workload.Progresser)
	return p, ok
}

// indexRollout is the rolloutIndex function of kind k. Only state Reroll
// signed under key counts: a forged rolled-at or pending (a tenant's, or an
// older Reroll's) is in no index, so it neither fills the bound nor queues
// ahead of anyone.
func indexRollout(k workload.Progresser, key digest.Key) func(client.Object) []string {
	return func(obj client.Object) []string {
		var out []string
		a, uid := obj.GetAnnotations(), string(obj.GetUID())
		if _, ok := plan.RolledAt(key, uid, a); ok && !k.Progress(obj).Done {
			out = append(out, rolloutRunning)
		}
		if _, ok := plan.Verified(key, uid, plan.PendingAnnotation, a); ok {
			out = append(out, rolloutPending)
			if plan.PendingReason(key, uid, a) == plan.DeferMaxConcurrent {
				out = append(out, rolloutWaiting)
			}
		}
		return out
	}
}

// count returns the bound's counts for self, whose pending change dates
// from since: the running rollouts (cache and in-flight, within their
// deadlines) and the older changes waiting for a slot. The caller holds mu.
func (t *rollouts) count(ctx context.Context, c client.Reader, self client.Object, since, now time.Time) (plan.Rollouts, error) {
	var r plan.Rollouts
	seen := map[types.UID]bool{}
	ns := self.GetNamespace()
	err := t.each(ctx, c, rolloutRunning, func(pk progressKind, obj client.Object) {
		seen[obj.GetUID()] = true
		if obj.GetUID() == self.GetUID() || !t.running(pk, obj, now) {
			return
		}
		r.Running++
		if obj.GetNamespace() == ns {
			r.RunningInNamespace++
		}
	})
	if err != nil {
		return r, err
	}
	for uid, f := range t.inflight {
		if seen[uid] || uid == self.GetUID() {
			continue
		}
		obj := f.kind.New()
		err := c.Get(ctx, f.key, obj)
		if err == nil && obj.GetResourceVersion() != f.before {
			// The cache caught up. It may have done so after the list
			// above, which then missed the rollout: count it from what the
			// cache holds now.
			delete(t.inflight, uid)
			if p, ok := progressOf(f.kind); ok && slices.Contains(indexRollout(p, t.key)(obj), rolloutRunning) && t.running(progressKind{kind: f.kind, progress: p}, obj, now) {
				r.Running++
				if f.key.Namespace == ns {
					r.RunningInNamespace++
				}
			}
			continue
		}
		if apierrors.IsNotFound(err) || !now.Before(f.until) {
			// The workload is gone, or the deadline passed.
			delete(t.inflight, uid)
			continue
		}
		if err != nil {
			return r, fmt.Errorf("reading %s %s: %w", f.kind.Name(), f.key, err)
		}
		r.Running++
		if f.key.Namespace == ns {
			r.RunningInNamespace++
		}
	}
	self2 := self.GetNamespace() + "/" + self.GetName()
	err = t.each(ctx, c, rolloutWaiting, func(_ progressKind, obj client.Object) {
		if obj.GetUID() == self.GetUID() {
			return
		}
		other := plan.PendingSince(t.key, string(obj.GetUID()), obj.GetAnnotations(), now)
		if other.Before(since) || (other.Equal(since) && obj.GetNamespace()+"/"+obj.GetName() < self2) {
			r.Ahead++
			if obj.GetNamespace() == ns {
				r.AheadInNamespace++
			}
		}
	})
	return r, err
}

// running reports whether a rollout indexed as running is within its
// deadline.
func (t *rollouts) running(pk progressKind, obj client.Object, now time.Time) bool {
	at, ok := plan.RolledAt(t.key, string(obj.GetUID()), obj.GetAnnotations())
	return ok && now.Before(at.Add(plan.RolloutDeadline(pk.progress.Progress(obj), t.timeout)))
}

// each calls f for every workload of every counted kind with index value
// v, from the cache without copies: f must not change what it is given.
func (t *rollouts) each(ctx context.Context, c client.Reader, v string, f func(progressKind, client.Object)) error {
	for _, pk := range t.kinds {
		list := pk.kind.NewList()
		if err := c.List(ctx, list, client.MatchingFields{rolloutIndex: v}, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("listing %s by %s: %w", pk.kind.Name(), rolloutIndex, err)
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				f(pk, obj)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// wakeOldest asks for a reconcile of the wakeCount oldest workloads waiting
// for a slot, so that a freed slot is taken at once rather than at their
// next Recheck.
func (t *rollouts) wakeOldest(ctx context.Context, c client.Reader) error {
	type waiting struct {
		pk    progressKind
		key   client.ObjectKey
		since time.Time
	}
	var all []waiting
	now := t.now()
	// Reads the cache only: no need for mu.
	err := t.each(ctx, c, rolloutWaiting, func(pk progressKind, obj client.Object) {
		all = append(all, waiting{pk, client.ObjectKeyFromObject(obj), plan.PendingSince(t.key, string(obj.GetUID()), obj.GetAnnotations(), now)})
	})
	if err != nil {
		return err
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].since.Equal(all[j].since) {
			return all[i].since.Before(all[j].since)
		}
		return all[i].key.String() < all[j].key.String()
	})
	for _, w := range all[:min(wakeCount, len(all))] {
		obj := w.pk.kind.New()
		obj.SetNamespace(w.key.Namespace)
		obj.SetName(w.key.Name)
		select {
		case w.pk.wake <- event.GenericEvent{Object: obj}:
		default:
		}
	}
	return nil
}

// finished passes the update of a workload whose rollout, stamped by
// Reroll (signed under key), the status now reports complete: its reconcile
// frees the slot.
func finished(p workload.Progresser, key digest.Key) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if _, ok := plan.RolledAt(key, string(e.ObjectNew.GetUID()), e.ObjectNew.GetAnnotations()); !ok {
				return false
			}
			return !p.Progress(e.ObjectOld).Done && p.Progress(e.ObjectNew).Done
		},
	}
}

// started notes a rollout stamped rolledAt (the annotation's signed value)
// and written over obj (as read,
// before the write), until the cache shows the write. The caller holds mu.
func (t *rollouts) started(k workload.Kind, obj client.Object, rolledAt string, deadline time.Duration) {
	// rolledAt is the signed value the plan wrote.
	at, ok := plan.RolledAt(t.key, string(obj.GetUID()), map[string]string{plan.RolledAtAnnotation: rolledAt})
	if !ok {
		return
	}
	t.inflight[obj.GetUID()] = inflight{kind: k, key: client.ObjectKeyFromObject(obj), before: obj.GetResourceVersion(), until: at.Add(deadline)}
}

// Metrics of the bound, computed from the cache at each scrape.
var (
	rolloutsRunningDesc = prometheus.NewDesc("reroll_rollouts_running",
		"Rollouts Reroll started that count against --max-concurrent-rollouts: not yet reported complete by the workload's status, within their deadline.", nil, nil)
	rolloutsWaitingDesc = prometheus.NewDesc("reroll_rollouts_waiting",
		"Workloads with a deferred change (reroll.dev/pending): outside their window, waiting for the previous rollout, a free slot or the end of a pause period.", nil, nil)
	oldestWaitingDesc = prometheus.NewDesc("reroll_rollouts_oldest_waiting_seconds",
		"Age in seconds of the oldest deferred change; 0 when none waits.", nil, nil)
)

// Describe implements prometheus.Collector.
func (t *rollouts) Describe(ch chan<- *prometheus.Desc) {
	ch <- rolloutsRunningDesc
	ch <- rolloutsWaitingDesc
	ch <- oldestWaitingDesc
}

// Collect implements prometheus.Collector; a cache that cannot be read
// yields no samples.
func (t *rollouts) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	running, waiting := 0, 0
	seen := map[types.UID]bool{}
	var oldest time.Time
	err := errors.Join(
		t.each(ctx, t.reader, rolloutRunning, func(pk progressKind, obj client.Object) {
			seen[obj.GetUID()] = true
			if t.running(pk, obj, now) {
				running++
			}
		}),
		t.each(ctx, t.reader, rolloutPending, func(_ progressKind, obj client.Object) {
			waiting++
			if s := plan.PendingSince(t.key, string(obj.GetUID()), obj.GetAnnotations(), now); oldest.IsZero() || s.Before(oldest) {
				oldest = s
			}
		}))
	if err != nil {
		ctrl.Log.WithName("metrics").Error(err, "Reading the rollouts for the metrics")
		return
	}
	age := 0.0
	if !oldest.IsZero() {
		age = now.Sub(oldest).Seconds()
	}
	for uid, f := range t.inflight {
		if !seen[uid] && now.Before(f.until) {
			running++
		}
	}
	ch <- prometheus.MustNewConstMetric(rolloutsRunningDesc, prometheus.GaugeValue, float64(running))
	ch <- prometheus.MustNewConstMetric(rolloutsWaitingDesc, prometheus.GaugeValue, float64(waiting))
	ch <- prometheus.MustNewConstMetric(oldestWaitingDesc, prometheus.GaugeValue, age)
}

// register adds t to controller-runtime's metrics registry. A second
// manager in one process (tests) keeps the first collector.
func (t *rollouts) register() error { return registerCollector(t) }

// registerCollector adds c to controller-runtime's metrics registry. A
// second manager in one process (tests) keeps the first collector.
func registerCollector(c prometheus.Collector) error {
	err := ctrlmetrics.Registry.Register(c)
	if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
		return nil
	}
	return err
}

// namespaceAnnotations returns the annotations of namespace, read from the
// cache (metadata only), for the Namespace's rollout window and bound. It
// reads nothing when Reroll may not watch Namespaces (an install limited to
// Roles in its namespaces; see canWatchNamespaces) and returns nil when the
// Namespace is gone.
func (r *WorkloadReconciler) namespaceAnnotations(ctx context.Context, namespace string) (map[string]string, error) {
	if !r.readNamespaces {
		return nil, nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading namespace %s for its rollout window and bound: %w", namespace, err)
	}
	return ns.GetAnnotations(), nil
}

// canWatchNamespaces reports whether Reroll may list and watch Namespaces
// cluster-wide, which reading their annotations from the cache needs.
func canWatchNamespaces(ctx context.Context, c client.Client) (bool, error) {
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Resource: "namespaces"},
		}}
		if err := c.Create(ctx, review); err != nil {
			return false, fmt.Errorf("checking permission to %s namespaces: %w", verb, err)
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}
