package apply

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/envtrim"
	"github.com/reroll/reroll/internal/plan"
	"github.com/reroll/reroll/internal/workload"
)

// Writer writes the workloads of one kind.
type Writer struct {
	// Client writes to the API server (and reads the Deployment a
	// workloadRef names).
	Client client.Client
	// Kind is the workload kind.
	Kind workload.Kind
	// Journal keeps the manifest of a Job being re-created between its
	// delete and its create (workload.JobJournal); nil keeps it in memory.
	Journal workload.JobJournal
	// Now is the time of the write, for the record of a template change
	// (revert.Patch); nil means time.Now.
	Now func() time.Time
	// OwnWrites, when set, records the write of a settled plan, so that
	// its watch event is not reconciled (OwnWrites).
	OwnWrites *OwnWrites
	// Pinned, when set, is what Copier.Copies made of the plan's Pinning:
	// the pod template's references are renamed in the same write as the
	// trigger (or alone, for an opt-in).
	Pinned *Pinned
}

// Workload writes plan p of obj, the workload as read: metadata, pause,
// and, for Outcome plan.Roll, the rollout of p.Roll.Way. It returns the
// error of the write (a conflict when obj is stale), or workload.ErrShape
// when obj does not fit its way.
func (w Writer) Workload(ctx context.Context, obj client.Object, p plan.Plan) error {
	if w.Pinned == nil && writesNothing(obj, p) {
		// Most reconciles (first sight under --defer-record, the watch
		// event of Reroll's own write, a requeue) find the metadata as the
		// plan wants it: no copy of the workload to compare.
		return nil
	}
	desired := obj.DeepCopyObject().(client.Object)
	for k, v := range p.Annotations {
		workload.SetAnnotation(desired, k, v)
	}
	for k, v := range p.Labels {
		workload.SetLabel(desired, k, v)
	}
	if pz, ok := w.Kind.(workload.Pausable); ok && (p.Pause.Pause || p.Pause.Resume) {
		pz.SetPaused(desired, p.Pause.Pause)
	}
	if err := w.pinTemplate(desired, w.Pinned); err != nil {
		return err
	}
	if p.Undo != nil {
		// The automatic undo of a failed rollout: the previous revision's
		// template, as kubectl rollout undo writes it.
		cur, err := w.Kind.PodTemplate(obj)
		if err != nil {
			return err
		}
		// Over a cached copy, whose template holds only what envtrim.Keep
		// keeps, the patch sets only that (envtrim.Over).
		prev := envtrim.Over(cur, p.Undo.Template)
		if err := w.Kind.SetPodTemplate(desired, prev); err != nil {
			return err
		}
		w.recordPatch(obj, desired)
	}
	write := w.patch
	if len(p.Changes) > 0 || p.Outcome == plan.FirstSight || p.Undo != nil {
		// The record of a change answered: a stale copy of the workload must
		// conflict rather than answer it twice. A first sight: a copy from
		// before the first record must conflict rather than write over a
		// record made since (an object recorded missing would then never
		// count as created).
		// An undo: only over the template it saw fail.
		write = func(ctx context.Context, obj, desired client.Object) error {
			return workload.PatchGuarded(ctx, w.Client, obj, desired)
		}
	}
	if p.Outcome != plan.Roll {
		if w.Pinned != nil {
			// An opt-in's pinning changes the template alone.
			w.recordPatch(obj, desired)
		}
		return write(ctx, obj, desired)
	}
	var err error
	switch p.Roll.Way {
	case workload.ByTemplate:
		err = w.template(obj, desired, p.Roll)
	case workload.ByWorkloadRef:
		err = w.workloadRef(ctx, obj, p.Roll)
	case workload.ByRestartAt:
		err = restartAt(desired, p.Roll)
	case workload.ByJob:
		// From desired: a versioned CronJob's Job reads the copies its
		// jobTemplate is pinned to in this write.
		err = w.job(ctx, desired, p.Roll)
	case workload.ByRecreate:
		// The Job's write step writes desired itself, on the new Job.
		return w.recreate(ctx, obj, desired, write)
	}
	if err != nil {
		return err
	}
	if !p.Settled || p.Roll.Way != workload.ByTemplate || p.Annotations[plan.RecordAnnotation] == obj.GetAnnotations()[plan.RecordAnnotation] {
		// OwnWrites only takes a write that is sent for certain: a new
		// record always is.
		return write(ctx, obj, desired)
	}
	w.OwnWrites.Expect(obj)
	if err := write(ctx, obj, desired); err != nil {
		w.OwnWrites.Failed(obj)
		return err
	}
	w.OwnWrites.Written(obj, desired)
	return nil
}

// writesNothing reports whether plan p leaves obj as it is: it rolls
// nothing, undoes nothing, neither pauses nor resumes, and obj already has
// each of its annotations and labels (absent where the plan removes one,
// its value ""). Workload then has nothing to write, as its patch of the
// same object would find (workload.Patch).
func writesNothing(obj client.Object, p plan.Plan) bool {
	if p.Outcome == plan.Roll || p.Undo != nil || p.Pause.Pause || p.Pause.Resume {
		return false
	}
	return hasAll(obj.GetAnnotations(), p.Annotations) && hasAll(obj.GetLabels(), p.Labels)
}

// hasAll reports whether m holds each key of want with its value, and
// lacks each key whose wanted value is "" (workload.WithKey removes it).
func hasAll(m, want map[string]string) bool {
	for k, v := range want {
		if got, ok := m[k]; v == "" && ok || v != "" && got != v {
			return false
		}
	}
	return true
}

// patch writes desired over obj (workload.Patch).
func (w Writer) patch(ctx context.Context, obj, desired client.Object) error {
	return workload.Patch(ctx, w.Client, obj, desired)
}

func (w Writer) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}
