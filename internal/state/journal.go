package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/reroll/reroll/internal/workload"
)

// JobJournal is the workload.JobJournal of Reroll: Entries in Reroll's
// own namespace (--job-journal is their prefix), one signed
// entry per Job being re-created, keyed by the Job's namespace and name,
// whose value is the JSON of journalEntry. The manifest of a Job holds its
// pod template, which is why the journal lives in Reroll's own namespace,
// not the Job's. Reroll re-creates only a Job whose entry it signed and
// whose manifest is of that namespace and name: whoever can write
// ConfigMaps in Reroll's namespace cannot make it create another Job.
type JobJournal struct {
	store *Entries
	// recorder, when set, puts the Warning about an older Reroll's journal
	// on its ConfigMap (reportLegacy).
	recorder record.EventRecorder
	// log, when set, is the logger of the caller's context: the manager
	// starts runnables with a context that carries none.
	log *logr.Logger
}

// NewJobJournal returns the journal kept in entries, whose MaxAge should be
// JobJournalMaxAge. recorder, when not nil, puts the Warning about an
// older Reroll's journal on its ConfigMap; log, when not nil, is the
// logger Start logs with.
func NewJobJournal(entries *Entries, recorder record.EventRecorder, log *logr.Logger) *JobJournal {
	return &JobJournal{store: entries, recorder: recorder, log: log}
}

// ReasonLegacyJournalEntry is a Warning Event on the Job journal
// ConfigMap of an older Reroll (one ConfigMap named --job-journal, one
// data key "<namespace>.<name>" per Job): a Job re-creation it records is
// not resumed.
const ReasonLegacyJournalEntry = "LegacyJournalEntry"

// legacyJobs returns the Jobs whose re-creation the journal of an older
// Reroll records: its data keys, "<namespace>.<name>". Pure: the reasons
// they are not resumed are on reportLegacy.
func legacyJobs(cm *corev1.ConfigMap) []string {
	var out []string
	for k := range cm.Data {
		if ns, name, ok := strings.Cut(k, "."); ok && ns != "" && name != "" {
			out = append(out, ns+"/"+name)
		}
	}
	sort.Strings(out)
	return out
}

// reportLegacy tells, with a log line and a Warning Event on it, which Job
// re-creations the journal ConfigMap of an older Reroll holds (the one
// named like the store's prefix), and resumes none. Those entries are
// unsigned: anyone who could write ConfigMaps in Reroll's namespace could
// have written them, and the one object they could be checked against, the
// Job they were saved from, is already deleted when an entry matters
// (Reroll saves the entry, deletes the Job, then creates the new one). A
// forged manifest (any image, any ServiceAccount of the namespace) would be
// indistinguishable from a real one, so acting on them would reopen what
// the signed per-entry journal closed. The ConfigMap is left for the
// operator, and never read again otherwise (docs/operations.md, "Upgrading").
func (j *JobJournal) reportLegacy(ctx context.Context) {
	var cm corev1.ConfigMap
	key := client.ObjectKey{Namespace: j.store.namespace, Name: j.store.prefix}
	if err := j.store.r.Get(ctx, key, &cm); err != nil {
		if !apierrors.IsNotFound(err) {
			ctrl.LoggerFrom(ctx).Error(err, "Reading the Job journal of an older Reroll", "configMap", key.String())
		}
		return
	}
	for _, job := range legacyJobs(&cm) {
		ctrl.LoggerFrom(ctx).Info("Not resuming a Job re-creation from an older Reroll's unsigned journal; re-create the Job by hand if it is still wanted",
			"job", job, "configMap", key.String())
		if j.recorder != nil {
			j.recorder.Eventf(&cm, corev1.EventTypeWarning, ReasonLegacyJournalEntry,
				"Job %s: its re-creation, recorded here by an older Reroll, is not resumed (the entry is unsigned); re-create the Job from data key %s by hand if it is still wanted, then delete this ConfigMap",
				job, strings.Replace(job, "/", ".", 1))
		}
	}
}

// JobJournalMaxAge is how long a Job journal entry lives: a re-creation
// takes seconds, and one that a day of retries could not finish (or whose
// Reroll stayed down that long) is dropped rather than replayed into what
// the namespace has become since.
const JobJournalMaxAge = 24 * time.Hour

// journalEntry is one Job to re-create.
type journalEntry struct {
	// UID is the Job that was deleted; Job is the one to create.
	UID types.UID    `json:"uid"`
	Job *batchv1.Job `json:"job"`
	// NamespaceUID is the UID of the Job's namespace when the entry was
	// saved: an entry is never replayed into another namespace of the same
	// name (the first was deleted, and its name taken by another team).
	// Empty when Reroll may not read Namespaces (namespace scope); the
	// entry's age (JobJournalMaxAge) is then the only bound.
	NamespaceUID types.UID `json:"namespaceUID,omitempty"`
}

// namespaceUID returns the UID of namespace: "" when Reroll may not read
// Namespaces, NotFound when it is gone.
func (j *JobJournal) namespaceUID(ctx context.Context, namespace string) (types.UID, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := j.store.r.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		if apierrors.IsForbidden(err) {
			return "", nil
		}
		return "", err
	}
	return ns.UID, nil
}

// Save implements workload.JobJournal.
func (j *JobJournal) Save(ctx context.Context, fresh *batchv1.Job, old types.UID) error {
	nsUID, err := j.namespaceUID(ctx, fresh.Namespace)
	if err != nil {
		return fmt.Errorf("reading namespace %s for the journal entry: %w", fresh.Namespace, err)
	}
	b, err := json.Marshal(journalEntry{UID: old, Job: fresh, NamespaceUID: nsUID})
	if err != nil {
		return fmt.Errorf("encoding the journal entry: %w", err)
	}
	return j.store.Put(ctx, types.NamespacedName{Namespace: fresh.Namespace, Name: fresh.Name}, string(b))
}

// Done implements workload.JobJournal.
func (j *JobJournal) Done(ctx context.Context, namespace, name string) error {
	return j.store.Delete(ctx, types.NamespacedName{Namespace: namespace, Name: name})
}

// decode reads the entry of the Job name; false when it is unreadable or
// not a manifest of that Job.
func decodeEntry(name types.NamespacedName, v string) (journalEntry, bool) {
	var e journalEntry
	if json.Unmarshal([]byte(v), &e) != nil || e.Job == nil || e.Job.Namespace != name.Namespace || e.Job.Name != name.Name {
		return journalEntry{}, false
	}
	return e, true
}

// recover brings back the Job name if the journal holds it: it creates the
// Job from the journal when no Job of that name exists, and forgets the
// entry once a Job other than the deleted one exists. A Job that still has
// the deleted UID (the crash came before the delete) keeps its own record,
// so its reconcile decides again; the entry is dropped.
//
// An entry saved in an earlier namespace of the same name, and one whose
// create the API server refuses as invalid (it never will accept it), are
// dropped with a log line.
func (j *JobJournal) recover(ctx context.Context, name types.NamespacedName, e journalEntry) error {
	log := ctrl.LoggerFrom(ctx)
	if e.NamespaceUID != "" {
		uid, err := j.namespaceUID(ctx, name.Namespace)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading namespace %s for the journal entry: %w", name.Namespace, err)
		}
		if uid != e.NamespaceUID {
			log.Info("Dropping a journal entry saved in an earlier namespace of the same name", "job", name.String(),
				"savedNamespaceUID", e.NamespaceUID, "namespaceUID", uid)
			return j.Done(ctx, name.Namespace, name.Name)
		}
	}
	var cur batchv1.Job
	err := j.store.r.Get(ctx, name, &cur)
	if apierrors.IsNotFound(err) {
		fresh := e.Job.DeepCopy()
		fresh.ResourceVersion, fresh.UID = "", ""
		err = j.store.c.Create(ctx, fresh, client.FieldOwner(workload.FieldManager))
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			log.Error(err, "Dropping a journal entry whose Job the API server refuses; re-create the Job by hand if it is still wanted", "job", name.String())
			return j.Done(ctx, name.Namespace, name.Name)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("re-creating Job %s from the journal: %w", name, err)
		}
		if err == nil {
			ctrl.LoggerFrom(ctx).Info("Re-created Job from the journal", "job", name.String())
			return j.Done(ctx, name.Namespace, name.Name)
		}
		// AlreadyExists: the old Job is still going, or someone created one.
		if err := j.store.r.Get(ctx, name, &cur); err != nil {
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

// Recover brings back the Job name when the journal has an entry for it
// (recover): it reads that entry alone. The reconcile of a Job that is not
// found calls it.
func (j *JobJournal) Recover(ctx context.Context, name types.NamespacedName) error {
	v, ok, err := j.store.Get(ctx, name)
	if err != nil || !ok {
		return err
	}
	e, ok := decodeEntry(name, v)
	if !ok {
		return j.Done(ctx, name.Namespace, name.Name)
	}
	return j.recover(ctx, name, e)
}

// Start implements manager.Runnable: once this replica leads, it recovers
// every Job in the journal, those whose re-creation a crash or a leader
// change interrupted.
func (j *JobJournal) Start(ctx context.Context) error {
	if j.log != nil {
		ctx = ctrl.LoggerInto(ctx, *j.log)
	}
	j.reportLegacy(ctx)
	// The names only; each entry's value (up to a Job's manifest) is read
	// and let go one at a time.
	names, err := j.store.Names(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Reading the Job journal")
		return nil
	}
	for _, name := range names {
		if err := j.Recover(ctx, name); err != nil {
			// The Job's next reconcile (a NotFound) tries again.
			ctrl.LoggerFrom(ctx).Error(err, "Recovering Job from the journal", "job", name.String())
		}
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// leader writes.
func (j *JobJournal) NeedLeaderElection() bool { return true }

var _ manager.LeaderElectionRunnable = (*JobJournal)(nil)
