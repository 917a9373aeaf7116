package plan

import (
	corev1 "k8s.io/api/core/v1"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/reference"
)

// View is what Decide may read of one workload's surroundings beyond
// Input: the controller backs it by its cache, its memory and, for the few
// reads the cache cannot answer, the API server. Decide calls each method
// only when the decision needs it (a revert suspected, a restart by
// eviction under way, a workload in a change set), so a reconcile costs no
// more requests than those reads. Methods return the errors of their reads
// as they are; Decide fails with them.
type View interface {
	// KeyedSource holds the ConfigMaps, Secrets and SecretProviderClasses.
	KeyedSource
	// HeldSince returns when a first-sight rollout of changes made at
	// changed was first held for the coalescing window; the first call
	// remembers changed.
	HeldSince(changed time.Time) time.Time
	// Notification returns where the notification of the plan with key
	// is, and the error of a POST that failed.
	Notification(key string) (NotifyState, error)
	// Pods returns the workload's pods, from the cache, for a restart by
	// eviction.
	Pods() ([]eviction.Pod, error)
	// Current returns nil when the workload in Input is the API server's
	// current version, and a conflict error otherwise (one uncached read):
	// pods are evicted and a restart reported done only from the current
	// record.
	Current() error
	// Latest returns the workload's annotations and field managers as the
	// API server holds them (one uncached read: managedFields are not
	// cached), asked only when a revert of Reroll's template change is
	// suspected.
	Latest() (annotations map[string]string, managers []metav1.ManagedFieldsEntry, err error)
	// Order returns the order of rollouts: the waves of Namespaces and
	// workloads.
	Order() (delivery.Order, error)
	// Halts returns the halt records by change set ID (shared, read-only).
	Halts() (map[string]*delivery.Halt, error)
	// Member returns the workload as a member of its change sets, with
	// record rec: its bake time and, once rolled, its health.
	Member(rec delivery.Record) (delivery.Member, error)
	// Members returns the other workloads of change set id whose record
	// Reroll signed, with their health.
	Members(id string) ([]delivery.Member, error)
	// WaveHash returns Wave's hash of the values refs consume (each in
	// namespace unless it names its own), read from the API server (the
	// cache holds no values): asked only when a Wave workload rolls
	// (DeferredWaveHash).
	WaveHash(namespace string, refs []reference.Reference) (string, error)
	// Validity checks the new content of the changed ConfigMaps and Secrets
	// against the Validators that select them (and, in a namespace that
	// shares change sets, their copies with the same content in the other
	// shared namespaces): asked only for a plan that rolls. The zero
	// Validity when validation is off.
	Validity(changes []Diff) (Validity, error)
	// Revision returns the workload's earlier pod template whose
	// revert.Fingerprint is fingerprint, as kubectl rollout undo restores
	// it: a Deployment's from its ReplicaSets (the pod-template-hash label
	// removed), a StatefulSet's or DaemonSet's from its
	// ControllerRevisions; nil when none is kept, or the kind keeps none
	// Reroll reads (the other kinds). Asked only to undo a failed rollout
	// of a versioned workload (one uncached list).
	Revision(fingerprint string) (*corev1.PodTemplateSpec, error)
}

// Validity is what the Validators say of a plan's new content.
type Validity struct {
	// Failed names each object whose new content fails a rule, with a
	// summary of the findings (never a Secret's value).
	Failed []string
	// Awaited names the copies in other shared namespaces that a Validator
	// checks and that do not hold the new content yet.
	Awaited []string
}

// KeyedSource is a Source that can also digest ConfigMaps and Secrets
// under an older key.
type KeyedSource interface {
	Source
	// Older returns the Source whose digests are made under k, one of the
	// installation key's older keys (digest.Key.Older): asked only for a
	// record made under k.
	Older(k digest.Key) Source
}

// Coalescing is where a workload is in the debounce of the changes of the
// objects it consumes (--coalesce-window).
type Coalescing struct {
	// Held is set while a burst of changes of the workload's objects is
	// inside its coalescing window and this reconcile is not the one the
	// debounce started at the burst's end: the debounce reconciles the
	// workload once the burst is over.
	Held bool
	// BurstEnded is set when the debounce started this reconcile: nothing
	// holds the workload's rollout again.
	BurstEnded bool
	// Window is the coalescing window; MaxWait bounds how long a burst
	// holds a workload back (at least Window).
	Window, MaxWait time.Duration
}

// DeliveryInput is what safe delivery (waves, bake time, the circuit
// breaker; internal/delivery) needs beyond the View.
type DeliveryInput struct {
	// Options are safe delivery's options; First is set by Decide from
	// the order of rollouts.
	Options delivery.Options
}

// RestartInput is how a workload's pods restart beyond the trigger its
// plan writes.
type RestartInput struct {
	// Mode is how they restart: Evict for a --evict-owner kind, an
	// OnDelete StatefulSet or DaemonSet, or reroll.dev/restart: evict
	// (eviction.ParseMode). Problems are its malformed annotations.
	Mode     eviction.Mode
	Problems []error
	// Desired is how many pods the workload keeps (workload.DesiredPods).
	Desired int
	// HighestOrdinalFirst evicts a StatefulSet's pods from the highest
	// ordinal down.
	HighestOrdinalFirst bool
	// TemplateInObject is set when the pod template lives in the workload
	// itself, the only case where Reroll can tell who put it back.
	TemplateInObject bool
	// JobTemplate is set when the pod template is a CronJob's jobTemplate
	// (workload.JobTemplate): versioned config pins it, though no pod
	// restarts for it.
	JobTemplate bool
	// HistoryUnread is set when the garbage collection of copies does not
	// read the kind's older revisions (workload.HistoryUnread: an OpenShift
	// DeploymentConfig, a --workload kind): versioned config does not pin
	// it, so that no copy an older revision names is ever collected.
	HistoryUnread bool
}

// NotifyState is where the notification of one plan (Plan.Key) is.
type NotifyState int

// The states of a notification.
const (
	// NotifyNone: not handed to the endpoint yet (or another key's is).
	NotifyNone NotifyState = iota
	// NotifyPending: on its way.
	NotifyPending
	// NotifyAccepted: the endpoint accepted it; the record may be written.
	NotifyAccepted
	// NotifyFailed: the POST failed.
	NotifyFailed
)

// NotifyStep is what the writer does with a plan's notification.
type NotifyStep string

// The notification steps.
const (
	// NotifySend: hand the notification to the endpoint, write nothing
	// else, and look again after NotifyPoll.
	NotifySend NotifyStep = "send"
	// NotifyWait: it is on its way; write nothing.
	NotifyWait NotifyStep = "wait"
	// NotifyFail: the POST failed; forget it and fail (the workqueue's
	// backoff retries).
	NotifyFail NotifyStep = "fail"
	// NotifyRecord: the endpoint accepted it; write the plan.
	NotifyRecord NotifyStep = "record"
)

// NotifyPoll is how often a workload whose notification is on its way is
// decided again anyway, in case its wake-up was lost.
const NotifyPoll = 5 * time.Second

// Hold is why the writer writes nothing of a plan now but its halt
// records and Warnings. The holds are checked in the order of their
// constants; the first that applies holds.
type Hold string

// The holds.
const (
	// HoldCoalescing: a change of the workload's objects is inside its
	// coalescing window (this reconcile came from the workload's own
	// event): the debounce reconciles it once the burst is over, and that
	// reconcile rolls for the whole burst. Requeue is 0; or, for a change
	// made within the last window that the debounce may not have heard of
	// yet (the cache holds it before the informer's handler ran), the rest
	// of that window.
	HoldCoalescing Hold = "coalescing"
	// HoldFirstSight: a rollout found by the first-sight rule waits for
	// the rest of its burst; nothing is written, so the next look (or a
	// restarted Reroll) finds the same changes. Requeue is the wait.
	HoldFirstSight Hold = "first-sight"
)

// HaltRecord is the halt of one change set, to record.
type HaltRecord struct {
	// Set is the change set's ID.
	Set string
	// Halt is the record, its Objects those of every member.
	Halt delivery.Halt
}
