package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// jobJournal is the workload.JobJournal of Reroll: one ConfigMap in Reroll's
// own namespace (Options.JobJournal), with one data entry per Job being
// re-created, keyed "<namespace>.<name>" (a namespace has no dot, so the
// first dot splits the key). It is granted by the chart's and config/rbac's
// Role in that namespace (get and update on its name, create), not by the
// base ClusterRole. The manifest of a Job holds its pod template, which
// is why the journal lives in Reroll's own namespace, not the Job's.
type jobJournal struct {
	configMapStore
}

// configMapStore is one ConfigMap in Reroll's own namespace whose data Reroll
// keeps state in (the Job journal, the records of annotated pods). Every
// write is guarded by resourceVersion.
type configMapStore struct {
	// c writes; r reads from the API server (the ConfigMap may be outside
	// the watched namespaces).
	c   client.Client
	r   client.Reader
	key types.NamespacedName
	// what names the store in errors ("the Job journal").
	what string
}

// data returns the ConfigMap's data; a missing ConfigMap has none.
func (j *configMapStore) data(ctx context.Context) (map[string]string, error) {
	var cm corev1.ConfigMap
	if err := j.r.Get(ctx, j.key, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s: %w", j.what, j.key, err)
	}
	return cm.Data, nil
}

// journalEntry is one Job to re-create.
type journalEntry struct {
	// UID is the Job that was deleted; Job is the one to create.
	UID types.UID    `json:"uid"`
	Job *batchv1.Job `json:"job"`
}

func journalKey(namespace, name string) string { return namespace + "." + name }

// Save implements workload.JobJournal.
func (j *jobJournal) Save(ctx context.Context, fresh *batchv1.Job, old types.UID) error {
	b, err := json.Marshal(journalEntry{UID: old, Job: fresh})
	if err != nil {
		return fmt.Errorf("encoding the journal entry: %w", err)
	}
	return j.update(ctx, func(data map[string]string) { data[journalKey(fresh.Namespace, fresh.Name)] = string(b) })
}

// Done implements workload.JobJournal.
func (j *jobJournal) Done(ctx context.Context, namespace, name string) error {
	return j.update(ctx, func(data map[string]string) { delete(data, journalKey(namespace, name)) })
}

// update applies change to the store's data, creating the ConfigMap when
// it is absent and retrying on conflicts (every write is guarded by
// resourceVersion).
func (j *configMapStore) update(ctx context.Context, change func(map[string]string)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cm corev1.ConfigMap
		err := j.r.Get(ctx, j.key, &cm)
		if apierrors.IsNotFound(err) {
			cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: j.key.Namespace, Name: j.key.Name}, Data: map[string]string{}}
			change(cm.Data)
			if err := j.c.Create(ctx, &cm, client.FieldOwner(FieldManager)); apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), j.key.Name, err)
			} else {
				return err
			}
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		change(cm.Data)
		return j.c.Update(ctx, &cm, client.FieldOwner(FieldManager))
	})
	if err != nil {
		return fmt.Errorf("writing %s %s: %w", j.what, j.key, err)
	}
	return nil
}

// entries reads the journal; a missing ConfigMap is an empty journal.
func (j *jobJournal) entries(ctx context.Context) (map[types.NamespacedName]journalEntry, error) {
	data, err := j.data(ctx)
	if err != nil || data == nil {
		return nil, err
	}
	out := map[types.NamespacedName]journalEntry{}
	for k, v := range data {
		ns, name, ok := strings.Cut(k, ".")
		var e journalEntry
		if !ok || json.Unmarshal([]byte(v), &e) != nil || e.Job == nil {
			continue
		}
		out[types.NamespacedName{Namespace: ns, Name: name}] = e
	}
	return out, nil
}

// recover brings back the Job name if the journal holds it: it creates the
// Job from the journal when no Job of that name exists, and forgets the
// entry once a Job other than the deleted one exists. A Job that still has
// the deleted UID (the crash came before the delete) keeps its own record,
// so its reconcile decides again; the entry is dropped.
func (j *jobJournal) recover(ctx context.Context, name types.NamespacedName, e journalEntry) error {
	var cur batchv1.Job
	err := j.r.Get(ctx, name, &cur)
	if apierrors.IsNotFound(err) {
		fresh := e.Job.DeepCopy()
		fresh.ResourceVersion, fresh.UID = "", ""
		err = j.c.Create(ctx, fresh, client.FieldOwner(FieldManager))
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("re-creating Job %s from the journal: %w", name, err)
		}
		if err == nil {
			ctrl.LoggerFrom(ctx).Info("Re-created Job from the journal", "job", name.String())
			return j.Done(ctx, name.Namespace, name.Name)
		}
		// AlreadyExists: the old Job is still going, or someone created one.
		if err := j.r.Get(ctx, name, &cur); err != nil {
			if apierrors.IsNotFound(err) {
				// Gone between the two calls: try again (the request is
				// requeued with backoff).
				return fmt.Errorf("the Job %s went away while being re-created; trying again", name)
			}
			return err
		}
	} else if err != nil {
		return fmt.Errorf("reading Job %s: %w", name, err)
	}
	if cur.UID == e.UID && cur.DeletionTimestamp != nil {
		return errors.New("the deleted Job " + name.String() + " is still going; re-creating it later")
	}
	return j.Done(ctx, name.Namespace, name.Name)
}

// recoverOne is recover for the Job name when the journal has an entry.
func (j *jobJournal) recoverOne(ctx context.Context, name types.NamespacedName) error {
	all, err := j.entries(ctx)
	if err != nil {
		return err
	}
	e, ok := all[name]
	if !ok {
		return nil
	}
	return j.recover(ctx, name, e)
}

// Start implements manager.Runnable: once this replica leads, it recovers
// every Job in the journal, those whose re-creation a crash or a leader
// change interrupted.
func (j *jobJournal) Start(ctx context.Context) error {
	all, err := j.entries(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading the Job journal")
		return nil
	}
	for name, e := range all {
		if err := j.recover(ctx, name, e); err != nil {
			// The Job's next reconcile (a NotFound) tries again.
			ctrl.LoggerFrom(ctx).Error(err, "Recovering Job from the journal", "job", name.String())
		}
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// leader writes.
func (j *jobJournal) NeedLeaderElection() bool { return true }

var _ manager.LeaderElectionRunnable = (*jobJournal)(nil)
