package podgroup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// PodsAnnotation is the key, in a group's record, of how many pods the
// group ran when no restart was under way (decimal).
const PodsAnnotation = "reroll.dev/pods"

// Observed is what a group's reconcile reads: its pods that opt in, from
// the cache, and its record (nil when none).
type Observed struct {
	Request ctrl.Request
	Pods    []corev1.Pod
	Record  map[string]string
}

// Observe reads group req: its pods that opt in (parsed with cfg), from
// the cache c, whose controller is not of a kind in handled, and its
// record. It returns the error of the list or of the record's read.
func Observe(ctx context.Context, c client.Reader, records Records, handled map[schema.GroupKind]bool, cfg annotation.Config, req ctrl.Request) (Observed, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(req.Namespace)); err != nil {
		return Observed{}, fmt.Errorf("listing pods in %s: %w", req.Namespace, err)
	}
	o := Observed{Request: req}
	for _, p := range list.Items {
		if string(Of(&p, handled)) == req.Name && OptedIn(&p, cfg) {
			o.Pods = append(o.Pods, p)
		}
	}
	rec, err := records.Get(ctx, req.NamespacedName)
	if err != nil {
		return Observed{}, err
	}
	o.Record = rec
	return o, nil
}

// Step is what the writer of a group does.
type Step int

const (
	// Nothing is written (no pods and no record; a plan Deleting,
	// Waiting or Refused).
	Nothing Step = iota
	// Clear removes the record (no pods left, or the group opted out).
	Clear
	// Restart writes the record when it changed, then carries out the
	// restart by eviction (Plan.Eviction).
	Restart
)

// Plan is what Decide decided for a group.
type Plan struct {
	Step Step
	// Owner names the group's controller, "Kind/name", for the log.
	Owner string
	// Outcome is the outcome of the group's plan (plan.Plan.Outcome);
	// Changes its summary and Started the pods whose eviction starts.
	Outcome plan.Outcome
	Changes string
	// Record is the record read; Next the record to write.
	Record, Next map[string]string
	// Eviction is the restart by eviction of the group's pods.
	Eviction eviction.Decision
	// Pods are the group's pods (the Events go to them).
	Pods []corev1.Pod
	// Now is the time of the decision.
	Now time.Time
}

// Decide plans group o at now as it would a workload restarted by
// eviction (first sight records, a change evicts the pods created before
// it, one at a time), with opts (DeferRecord off: the record is always
// written, there is no workload to spare a write of) and the ConfigMaps
// and Secrets of src. It returns the error of plan.DecideRecord. It logs
// what it ignores in the group's annotations and record.
func Decide(ctx context.Context, opts plan.Options, o Observed, src plan.KeyedSource, now time.Time) (Plan, error) {
	if len(o.Pods) == 0 {
		if o.Record == nil {
			return Plan{Step: Nothing}, nil
		}
		return Plan{Step: Clear}, nil
	}
	kind, obj := AsWorkload(o.Request, o.Pods, o.Record)
	owner := kind.GVK.Kind + "/" + obj.GetName()
	log := ctrl.LoggerFrom(ctx).WithValues("owner", owner)
	template := workload.TemplateOfPods(o.Pods)
	opts.DeferRecord = false
	p, err := plan.DecideRecord(opts, plan.NewInput(kind, obj, template, now), src)
	if err != nil {
		return Plan{}, err
	}
	next := maps.Clone(o.Record)
	if next == nil {
		next = map[string]string{}
	}
	for k, v := range p.Annotations {
		next = workload.WithKey(next, k, v)
	}
	switch p.Outcome {
	case plan.NotOptedIn:
		if o.Record == nil {
			return Plan{Step: Nothing}, nil
		}
		return Plan{Step: Clear}, nil
	case plan.Deleting, plan.Waiting, plan.Refused:
		return Plan{Step: Nothing}, nil
	}
	d := decideEviction(log, p, template, o.Pods, o.Record, next, now)
	next = workload.WithKey(next, eviction.ProgressAnnotation, d.Progress.String())
	return Plan{Step: Restart, Owner: owner, Outcome: p.Outcome, Changes: p.Change.Summary(), Record: o.Record, Next: next,
		Eviction: d, Pods: o.Pods, Now: now}, nil
}

// decideEviction decides the restart by eviction of the group's pods after
// p, from the progress in rec; it records in next, the record to write,
// how many pods the group runs outside a restart.
func decideEviction(log logr.Logger, p plan.Plan, template *corev1.PodTemplateSpec, pods []corev1.Pod, rec, next map[string]string, now time.Time) eviction.Decision {
	mode, problems := eviction.ParseMode(template.Annotations, 0)
	if len(problems) > 0 {
		log.Info("Ignoring malformed annotations", "error", errors.Join(problems...).Error())
	}
	progress, err := eviction.ParseProgress(rec[eviction.ProgressAnnotation])
	if err != nil {
		log.Info("Dropping unreadable eviction record", "error", err.Error())
	}
	var change *eviction.Change
	if p.Outcome == plan.Roll && p.Roll.Way == workload.ByEviction {
		change = &eviction.Change{Hash: p.Record.ConfigHash(), At: now}
	}
	in := eviction.Input{Progress: progress, Change: change, MaxUnavailable: mode.MaxUnavailable}
	running := 0
	for i := range pods {
		in.Pods = append(in.Pods, eviction.FromPod(&pods[i]))
		if pods[i].DeletionTimestamp == nil {
			running++
		}
	}
	// The group has no spec.replicas: the pods it runs outside a restart
	// are recorded, and a restart waits for as many to be Ready.
	if progress == nil {
		next[PodsAnnotation] = strconv.Itoa(running)
	}
	in.Desired, _ = strconv.Atoi(next[PodsAnnotation])
	return eviction.Decide(in)
}
