package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/reroll/reroll/internal/annotation"
	"github.com/reroll/reroll/internal/change"
	"github.com/reroll/reroll/internal/delivery"
	"github.com/reroll/reroll/internal/digest"
	"github.com/reroll/reroll/internal/eviction"
	"github.com/reroll/reroll/internal/notify"
	"github.com/reroll/reroll/internal/pin"
	"github.com/reroll/reroll/internal/reference"
	"github.com/reroll/reroll/internal/revert"
	"github.com/reroll/reroll/internal/trigger"
	"github.com/reroll/reroll/internal/workload"
)

// Event reasons, on the workload.
const (
	// ReasonRolled is a Normal Event: Reroll rolled the workload because
	// consumed data changed. The note names the objects and keys, never
	// values.
	ReasonRolled = "Rolled"
	// ReasonNotRolled is a Normal Event: consumed data changed but the kind
	// does not restart for it (a CronJob's next Job reads it; a finished Job).
	ReasonNotRolled = "NotRolled"
	// ReasonNotified is a Normal Event: with --webhook-url, Reroll posted the
	// change to the notification endpoint instead of rolling.
	ReasonNotified = "Notified"
	// ReasonPaused and ReasonResumed are Normal Events around a Deployment's
	// pause period.
	ReasonPaused  = "Paused"
	ReasonResumed = "Resumed"
	// ReasonInvalidAnnotation is a Warning Event: an annotation is
	// malformed; the rest of the workload's annotations still apply.
	ReasonInvalidAnnotation = "InvalidAnnotation"
	// ReasonCrossNamespaceReference is a Warning Event: the workload names a
	// ConfigMap or Secret of another namespace, which Reroll does not
	// follow without --allow-cross-namespace-references; the rest of its
	// references still apply. It is emitted with each new record.
	ReasonCrossNamespaceReference = "CrossNamespaceReference"
)

// Options are the behaviours that Reroll's flags choose; the zero value is
// not valid (use the controller's, or fill Strategy and Annotations.Names).
type Options struct {
	// Strategy is how a rollout is triggered (--reload-strategy).
	Strategy trigger.Strategy
	// ReloadOnCreate and ReloadOnDelete roll for a referenced object that
	// was created after Reroll recorded it missing, or was deleted
	// (--reload-on-create, --reload-on-delete).
	ReloadOnCreate, ReloadOnDelete bool
	// Annotations are the annotation names and precedence flags.
	Annotations annotation.Config
	// WebhookURL, when set, is the notification endpoint that receives the
	// change instead of a rollout (--webhook-url); Plans show it redacted.
	WebhookURL string
	// Managed keeps ManagedLabel on managed workloads (--enable-webhook).
	Managed bool
	// MaxConcurrentRollouts bounds the rollouts Reroll started that run at
	// once, cluster-wide (--max-concurrent-rollouts); 0 is no bound.
	MaxConcurrentRollouts int
	// MaxConcurrentRolloutsPerNamespace bounds the rollouts that run at
	// once in one namespace under MaxConcurrentRollouts
	// (--max-concurrent-rollouts-per-namespace); 0 means NamespaceShare.
	// A Namespace's MaxConcurrentRolloutsAnnotation may lower it.
	MaxConcurrentRolloutsPerNamespace int
	// RolloutTimeout is how long a rollout counts against the bound at
	// most, whatever its kind's own deadline (--rollout-timeout); 0 means
	// DefaultRolloutTimeout. It also sets PendingValidity.
	RolloutTimeout time.Duration
	// Override is where RolloutOverrideAnnotation is honoured
	// (--rollout-override); "" means OverrideNamespace.
	Override OverrideScope
	// WaitForRollout is the default of WaitForRolloutAnnotation
	// (--wait-for-rollout).
	WaitForRollout bool
	// PausePeriod is the pause period of workloads that set none
	// (--pause-period); 0 is none.
	PausePeriod time.Duration
	// Recheck is how soon a rollout deferred by the bound or by the previous
	// rollout is decided again; 0 means DefaultRecheck.
	Recheck time.Duration
	// AllowCrossNamespaceReferences follows references to ConfigMaps and
	// Secrets of other namespaces (Wave's "namespace/name" extra lists;
	// --allow-cross-namespace-references). Without it they are refused with
	// a Warning Event (ReasonCrossNamespaceReference) and never read.
	AllowCrossNamespaceReferences bool
	// Key is the installation key: its ID is written beside the record
	// (KeyAnnotation), and a record made under another key is made again
	// without a rollout. The Source's digests must be made under it.
	Key digest.Key
	// KeyedCompatHashes writes, in place of the hashes other tools define
	// over the data (Reloader's SHA-1 in STAKATER_* env vars, in
	// last-reloaded-from and in notifications; Wave's and pod-reloader's
	// hashes), their HMAC-SHA-256 under Key (--keyed-compat-hashes).
	KeyedCompatHashes bool
	// NoEviction is set when restarts by eviction are off
	// (--enable-pod-eviction not given) or not permitted: workloads that
	// restart ByEviction are then NotRestarted, with an EvictionDisabled
	// Warning Event instead of the NotRolled one, and are warned on first
	// sight too.
	NoEviction bool
	// InstalledAt is Reroll's installation time, durable and the same for
	// every replica (state.LoadInstalledAt): on first sight, only what
	// happened after it rolls (firstsight.go). The zero time turns the
	// first-sight rule off: first sight then only records.
	InstalledAt time.Time
	// DeferRecord keeps the record of a workload that has none off the
	// workload until it is written anyway (a rollout, a notification, a
	// NotRolled answer): first sight and later unchanged looks write
	// nothing, and Plan.Deferred says the caller keeps Plan.Record as the
	// workload's baseline (Input.Baseline) instead (docs/design.md,
	// "Install: no write per workload"). It needs the first-sight rule
	// (InstalledAt): after a restart, the rule stands in for the baseline.
	// The controller's options hold the wish (--defer-record); each
	// reconcile passes what applies: off with the admission webhook (whose
	// objectSelector needs a label on each workload) and with
	// ReloadOnDelete, and where the rule would roll for a change the
	// workload does not read, the controller keeps the baseline signed in
	// its Baselines (or, without room there, writes it on the workload).
	DeferRecord bool
	// NoAutoUndo turns off the automatic undo of a versioned workload's
	// failed rollout (--versioned-config-auto-undo=false): the change set
	// still halts, and the failed canary keeps its pods.
	NoAutoUndo bool
	// Versioned is the cluster default of versioned config
	// (--versioned-config): a workload whose annotations and Namespace's
	// say nothing (pin.VersionedAnnotation) pins the ConfigMaps and Secrets
	// it consumes to immutable copies (see pinning).
	Versioned bool
}

// Compat returns h, a hash another tool's output defines (Reloader's SHA-1,
// Wave's or pod-reloader's hash) of the object kind namespace/name (the
// ConfigMap or Secret for Reloader's SHA-1, the workload for the others),
// or with KeyedCompatHashes its HMAC-SHA-256 under Key bound to that
// object (digest.Key.Compat). The value is only ever written, at a
// rollout, never compared: a change of its scheme rolls nothing.
func (o Options) Compat(kind, namespace, name, h string) string {
	if !o.KeyedCompatHashes {
		return h
	}
	return o.Key.Compat(kind, namespace, name, h)
}

// compatOf is Options.Compat of d's object's Reloader SHA-1; namespace is
// the workload's, where d's reference names none.
func (o Options) compatOf(d Diff, namespace string) string {
	if d.Ref.Namespace != "" {
		namespace = d.Ref.Namespace
	}
	return o.Compat(string(d.Ref.Kind), namespace, d.Ref.Name, d.ReloaderSHA1)
}

// DefaultOptions are Reroll's defaults: the annotations strategy, Reloader's
// annotation names, nothing ignored, no create/delete rollouts, no
// notification endpoint.
func DefaultOptions() Options {
	return Options{Strategy: trigger.Annotations, Annotations: annotation.DefaultConfig()}
}

// Input is one workload as the planner sees it.
type Input struct {
	// Kind is the workload kind's name ("Deployment"); Namespace, Name and
	// UID identify the object.
	Kind, Namespace, Name, UID string
	// Annotations are the workload's metadata annotations (opt-in, record,
	// pause).
	Annotations map[string]string
	// Template is the pod template its pods run: its own, or, for an Argo
	// Rollout with spec.workloadRef, the referenced Deployment's (an empty
	// one when that does not exist). Never nil. A Deployment's,
	// StatefulSet's or DaemonSet's read from the manager's cache holds only
	// what envtrim.Keep keeps.
	Template *corev1.PodTemplateSpec
	// TemplateSums are the revert.Sums of the workload's full pod template
	// that the manager's cache holds with a trimmed copy (revert.HeldIn);
	// zero when it holds none. Read through Input.Sums.
	TemplateSums revert.Sums
	// Action is how the object rolls (workload.ActionOf) when it opted in
	// with Reroll's annotations; ReloaderAction when it opted in with
	// Reloader's, whose defaults differ for CronJobs and finished Jobs.
	Action, ReloaderAction workload.Action
	// Pausable is true for kinds with Reloader's pause period
	// (Deployments); Paused is their spec.paused.
	Pausable, Paused bool
	// Deleting is true when the object has a deletionTimestamp.
	Deleting bool
	// Now is the time of the decision.
	Now time.Time
	// NamespaceAnnotations are the annotations of the workload's Namespace
	// (rollout window, bound).
	NamespaceAnnotations map[string]string
	// Progress is what the workload's status says of its latest rollout;
	// nil for kinds whose status says nothing (workload.Progresser).
	Progress *workload.Progress
	// Rollouts are the counts behind the concurrent rollout bound.
	Rollouts Rollouts
	// Since is when the workload's pod template or opt-in was last
	// written (WrittenAt), and, when the caller saw the workload's creation
	// on its watch and nothing was written since, the revision of that
	// creation: on first sight, what happened after it rolls.
	Since Happened
	// Baseline is the record the caller keeps of a workload without
	// RecordAnnotation, outside it (Options.DeferRecord: in memory, or
	// signed in Reroll's namespace), made under Options.Key; the workload
	// is compared with it as with its own record. Empty: none, and the
	// first-sight rule applies.
	Baseline string

	// The rest is read by Decide only (DecideChange ignores it): what the
	// controller knows of the workload beyond its change.

	// LegacyRecordsUntil is the migration deadline of the legacy digest
	// scheme: a record made under it is compared under it only before
	// then (see DecideRecord).
	LegacyRecordsUntil time.Time
	// Coalesce is where the workload is in the debounce of its objects'
	// changes (the holds).
	Coalesce Coalescing
	// Delivery holds safe delivery's options; nil when safe delivery is
	// off or the kind reports no progress.
	Delivery *DeliveryInput
	// Storm is the storm breaker (a zero Max is off).
	Storm delivery.Storm
	// Validate is set when Validators are read (--enable-validation, and
	// Reroll may list them): a plan that rolls asks View.Validity.
	Validate bool
	// Restart is how the workload's pods restart beyond its trigger; nil
	// decides no restart (no eviction, no revert check).
	Restart *RestartInput
	// Pins are the pod template's references to copies of ConfigMaps and
	// Secrets (versioned config, internal/pin): each reference as the
	// template names it (a copy's name) to the name of the source it is a
	// copy of. The caller fills it with the copies it verified
	// (pin.VerifyDigests), and, for a copy its cache does not hold yet, the
	// template's claim (pin.TemplateAnnotation). DecideChange sees through
	// them: it selects, records and compares the sources, so a pinned
	// workload rolls when its source changes, as an unpinned one does.
	Pins map[pin.Ref]string
}

// NewInput builds the Input of obj, of kind k, whose pods run template
// (read by the caller: workload.TemplateReader for Argo Rollouts).
func NewInput(k workload.Kind, obj client.Object, template *corev1.PodTemplateSpec, now time.Time) Input {
	in := Input{
		Kind: k.Name(), Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID()),
		Annotations: obj.GetAnnotations(), Template: template,
		Action: workload.ActionOf(k, obj, false), ReloaderAction: workload.ActionOf(k, obj, true),
		Deleting: obj.GetDeletionTimestamp() != nil, Now: now,
		Since: Happened{At: WrittenAt(obj)}, TemplateSums: revert.HeldIn(obj),
	}
	if p, ok := k.(workload.Pausable); ok {
		in.Pausable, in.Paused = true, p.Paused(obj)
	}
	if p, ok := k.(workload.Progresser); ok {
		pr := p.Progress(obj)
		if u, isU := k.(workload.Unstructured); !isU || u.ArgoRollout {
			in.Progress = &pr
		}
	}
	if in.Template == nil {
		in.Template = &corev1.PodTemplateSpec{}
	}
	return in
}

// Sums returns the revert.Sums of the workload's full pod template: the
// ones held with the cached copy when Template is trimmed, else computed
// from Template (revert.Sums.Of).
func (in Input) Sums() revert.Sums { return in.TemplateSums.Of(in.Template) }

// Outcome is what the plan does, in one word.
type Outcome string

// The outcomes.
const (
	// Deleting: the workload is being deleted; nothing is written.
	Deleting Outcome = "deleting"
	// NotOptedIn: no opt-in annotation; the record is removed (so that
	// opting in again starts from first sight) and a pause Reroll started
	// ends.
	NotOptedIn Outcome = "not-opted-in"
	// Waiting: Wave's dialect, and a required object or key is missing;
	// nothing is written, so the change rolls once it is complete.
	Waiting Outcome = "waiting"
	// Refused: the workload's list patterns cost more than
	// annotation.MaxMatchCost to match against the names of its namespace;
	// nothing is written and a Warning Event (ReasonInvalidAnnotation) says
	// which annotation, so that one tenant's patterns cannot hold a worker.
	Refused Outcome = "refused"
	// FirstSight: nothing was recorded; the record is written, nothing
	// rolls (the first-sight rule found nothing to roll: a workload it
	// rolls has Outcome Roll, or whatever the change leads to).
	FirstSight Outcome = "first-sight"
	// DamagedRecord: the record is unreadable; it is replaced, nothing
	// rolls, and a Warning Event says so.
	DamagedRecord Outcome = "damaged-record"
	// Unchanged: no consumed key changed.
	Unchanged Outcome = "unchanged"
	// Skipped: objects were created or deleted, but --reload-on-create or
	// --reload-on-delete is off.
	Skipped Outcome = "skipped"
	// Roll: the workload rolls (Plan.Roll says how).
	Roll Outcome = "roll"
	// NotRolled: consumed data changed, but the workload's kind does not
	// restart for it (Plan.Roll.Why).
	NotRolled Outcome = "not-rolled"
	// Notify: --webhook-url; the change goes to the notification endpoint
	// instead of a rollout, and the record is written once it was accepted.
	Notify Outcome = "notify"
	// DeferredRollout: the workload would roll, but a gate holds the rollout back
	// (Plan.Deferral says which and until when); only PendingAnnotation is
	// written, the record is not, so the change rolls later, once, with
	// everything that changed meanwhile.
	DeferredRollout Outcome = "deferred"
)

// Plan is what to do with one workload, and why.
type Plan struct {
	// Outcome is what happens, in one word.
	Outcome Outcome
	// OptIn is what the workload asked for; Problems are its malformed
	// annotations (each ignored; the rest applies).
	OptIn    annotation.OptIn
	Problems []error
	// Considered explains each ConfigMap and Secret looked at; References
	// are the selected ones, which the record holds.
	Considered []Considered
	References []reference.Reference
	// Missing names Wave's required objects and keys that do not exist.
	Missing []string
	// Unreadable names objects the Source could not read: a plan with any is
	// incomplete and must not be applied.
	Unreadable []string
	// DamagedRecord is the error reading the old record, when it was
	// unreadable.
	DamagedRecord error
	// RecordKeyChanged is true when the old record was made under another
	// digest key (or none): it is made again, as on first sight.
	RecordKeyChanged bool
	// FirstSightChanged is set when Changes come from the first-sight rule
	// (no record yet): the latest time, in whole seconds, at which one of
	// them happened. The controller holds such a rollout back for its
	// coalescing window after that time, so that the rest of the burst the
	// change belongs to joins it.
	FirstSightChanged time.Time
	// LatestChange is the latest time, in whole seconds, at which one of
	// Changes happened as the store saw it (digest.Object.History): its
	// data change, or its creation; zero when none is known. A reconcile
	// the debounce did not start holds a change this recent for the rest
	// of its coalescing window (see Decide).
	LatestChange time.Time
	// Deferred is true when the record is not written on the workload
	// (Options.DeferRecord): Record is the workload's new baseline, for the
	// caller to keep (Input.Baseline).
	Deferred bool
	// BaselineNeeded is true, with Deferred, when the first-sight rule,
	// which stands in for the baseline after a restart, would roll the
	// workload for a change the baseline shows it does not read (a key
	// it does not read, or data changed and changed back): the caller must
	// keep the baseline durably before it answers the change.
	BaselineNeeded bool
	// ruleWouldRoll is set when a workload compared with Input.Baseline
	// would roll by the first-sight rule.
	ruleWouldRoll bool

	// Record is the new value of RecordAnnotation.
	Record Record
	// Annotations and Labels are the workload metadata to write: key to
	// value, "" to remove the key. Empty when nothing is written.
	Annotations, Labels map[string]string

	// Changes are the selected objects that changed and roll the workload;
	// Held are those whose change does not (a create or delete with its
	// flag off), with HeldBy the flag.
	Changes []Diff
	Held    []Diff
	HeldBy  []string
	// Change describes Changes for Events, alerts and the notification.
	Change change.Change

	// Roll says how the workload rolls, for Outcome Roll and NotRolled.
	Roll Rolling
	// Pause is the pause-period change (Deployments).
	Pause Pause
	// Deferral says why and until when a DeferredRollout waits.
	Deferral *Deferral
	// Recheck, when positive, is how soon to decide again: a deferred
	// rollout, or a running one that counts against the bound.
	Recheck time.Duration

	// Warnings are Events to emit whatever the write does; Events are to
	// emit once the write succeeded (for Notify: once the endpoint accepted
	// the notification and the record was written).
	Warnings, Events []Event
	// Alert, when set, goes to the alert sink after the rollout
	// (ALERT_ON_RELOAD). Notification, when set, goes to the notification
	// endpoint (--webhook-url) before the record is written.
	Alert, Notification *change.Change
	// Key identifies this decision: the same workload (uid), record before
	// and record after give the same Key, so a delivery or a write retried
	// after a conflict is recognised.
	Key string

	// The rest is set by Decide only.

	// Halts are the halt records of change sets that safe delivery's
	// breaker halted in this decision: the writer records them first,
	// whatever else it writes, then tells of them.
	Halts []HaltRecord
	// Hold, when set, says why nothing of the plan is written now beyond
	// Halts and Warnings; Requeue says when to look again.
	Hold Hold
	// Notify is the notification step of Outcome Notify; NotifyFailure is
	// the error of a POST that failed (NotifyFail).
	Notify        NotifyStep
	NotifyFailure error
	// Eviction is the restart by eviction to carry out once the plan is
	// written (its record is in Annotations); nil when none applies.
	Eviction *eviction.Decision
	// Reverted is set when Annotations record that another field manager
	// put back Reroll's last pod template change (revert.Reverted).
	Reverted bool
	// Requeue is how soon to decide again once the plan is written (or
	// held), when no eviction follows: the pause period's end, a recheck,
	// the notification's poll, the first-sight hold; 0 waits for events.
	Requeue time.Duration
	// Pin is the pinning of versioned config to write with the plan: the
	// copies to make first, then the template's references to rename in
	// the same write as the trigger; nil when none.
	Pin *Pinning
	// OptInWaits is set when an opt-in pin (a versioned workload first
	// seen or opting in) waits for a slot of the concurrent rollout bound:
	// the writer notes it, so that a freed slot wakes it (it writes
	// nothing on the workload while it waits).
	OptInWaits bool
	// Undo, when set, is the automatic undo of a versioned workload's
	// failed rollout: the pod template to write back (its previous pinned
	// revision), in the plan's one write.
	Undo *Undo
	// Settled is set on a rollout by the pod template after which the
	// workload, as this plan writes it, has nothing left to decide: no
	// requeue, pause, eviction, undo, pin, hold, halt, deferral or Warning,
	// no safe-delivery membership, no concurrent rollout bound, no
	// versioned config, no pending mark, restarted by its template alone.
	// Deciding again on the object that write returns finds its record
	// current (Unchanged) and writes, tells and requeues nothing, so the
	// controller need not reconcile the watch event of that write
	// (apply.OwnWrites). A change made meanwhile has its own event.
	Settled bool
	// versioned is set when the workload's versioned config is on
	// (pin.Versioned), which may pin its template at a later reconcile.
	versioned bool
	// failedNow is the signal of the workload's own rollout, when safe
	// delivery recorded its failure in this decision; failedSets are its
	// change sets.
	failedNow  string
	failedSets []string
}

// Rolling is how the workload rolls.
type Rolling struct {
	// Way is the kind's way (workload.Action).
	Way workload.Way
	// Trigger is the pod template change, for ByTemplate and ByWorkloadRef.
	Trigger Trigger
	// Target names the Deployment of ByWorkloadRef.
	Target string
	// Job names the Job created from a CronJob (ByJob): JobName of the
	// CronJob and the config hash, so a retry creates no second Job.
	Job string
	// RestartAt is spec.restartAt for ByRestartAt (RFC 3339, UTC).
	RestartAt string
	// Note says what the rollout does, for the Rolled Event; Why says, for
	// NotRolled, why nothing restarts.
	Note, Why string
}

// Pause is what Reloader's pause period does to a Deployment: Pause sets
// spec.paused and the paused-at annotation (in Plan.Annotations), Resume
// clears both; RequeueAfter is when the pause ends, from now (0: none runs).
type Pause struct {
	Pause, Resume bool
	// Period is the pause period that starts with Pause.
	Period       time.Duration
	RequeueAfter time.Duration
}

// Event is one Event to record on the workload.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type, Reason, Note string
}

// DecideChange plans what a change of the data a workload consumes does to
// it: the record, the rollout and its gates, what to tell. It reads
// ConfigMaps and Secrets only through src, makes no API call and writes
// nothing; given the same inputs it returns the same Plan. It returns an
// error only when src fails with an error other than ErrUnreadable. The
// kubectl plugin asks it; the controller asks Decide, which calls it and
// adds safe delivery, the storm breaker, the holds, the notification step
// and the restart.
func DecideChange(o Options, in Input, src Source) (Plan, error) {
	p, err := decide(o, in, src)
	if err != nil {
		return Plan{}, err
	}
	p.deferRecord(o, in)
	p.track(o, in)
	return p, nil
}

// deferRecord leaves the record off a workload that has none, under
// Options.DeferRecord, when nothing else writes it: the outcomes that
// would only record (FirstSight, Unchanged, Skipped). A workload that
// mounts a Secrets Store CSI Driver volume keeps its record: the
// first-sight rule does not see its versions change (a status has no
// history of its own), so only a record finds a change made while no
// Reroll ran.
func (p *Plan) deferRecord(o Options, in Input) {
	if !o.DeferRecord || in.Annotations[RecordAnnotation] != "" || p.RecordKeyChanged || p.DamagedRecord != nil {
		return
	}
	switch p.Outcome {
	case FirstSight, Unchanged, Skipped:
	default:
		return
	}
	for _, ref := range p.References {
		if ref.Kind == reference.SecretProviderClass {
			return
		}
	}
	delete(p.Annotations, RecordAnnotation)
	delete(p.Annotations, KeyAnnotation)
	p.Deferred = true
	p.BaselineNeeded = p.ruleWouldRoll
}

// decide is DecideChange without the older key: it decides the change of
// one workload in named steps, each handing its result to the next: the
// opt-in (parseOptIn, optOut), the selection of what the workload consumes
// (selectReferences, incomplete), the record (record, previous), the
// comparison with the previous record (compare), and the answer to what
// changed (answer: notify, not rolled, deferred or rolled).
func decide(o Options, in Input, src Source) (Plan, error) {
	p := Plan{Annotations: map[string]string{}, Labels: map[string]string{}}
	if in.Template == nil {
		in.Template = &corev1.PodTemplateSpec{}
	}
	if in.Deleting {
		p.Outcome = Deleting
		return p, nil
	}
	// What the pod template consumes, seen through its copies.
	template := sourceView(in)
	optIn := p.parseOptIn(o, &in, template)
	if !optIn.Enabled() {
		p.optOut(o, in, optIn)
		return p, nil
	}
	sel, err := selectReferences(o.Annotations, src, in.Namespace, o.AllowCrossNamespaceReferences, optIn, template)
	if err != nil {
		return Plan{}, err
	}
	if p.incomplete(optIn, in, sel) {
		return p, nil
	}
	rec := p.record(o, in, sel)
	p.compare(o, in, sel, src, rec)
	if p.Outcome == FirstSight && in.Action.Way == workload.ByEviction && o.NoEviction {
		// Told at once, not only at the first change that then restarts
		// nothing.
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonEvictionDisabled, "Restart by eviction requested; " + EvictionDisabledWhy})
	}
	if len(p.Changes) == 0 {
		p.pause(o, in, optIn, false)
		return p, nil
	}
	p.answer(o, in, optIn, sel, rec.cur)
	return p, nil
}

// parseOptIn parses the workload's annotations into p (OptIn, Problems,
// and a Warning for the malformed ones), with the default pause period;
// a workload opted in with Reloader's annotations takes Reloader's way of
// rolling (in.Action). template is the pod template as it consumes
// (sourceView: seen through its copies).
func (p *Plan) parseOptIn(o Options, in *Input, template *corev1.PodTemplateSpec) annotation.OptIn {
	optIn, problems := o.Annotations.Parse(in.Annotations, template.Annotations)
	if optIn.PausePeriod == 0 {
		optIn.PausePeriod = o.PausePeriod
	}
	p.OptIn, p.Problems = optIn, problems
	if optIn.Dialect == annotation.DialectReloader && in.ReloaderAction.Way != "" {
		// Reloader's behaviour for workloads opted in with its annotations.
		in.Action = in.ReloaderAction
	}
	if len(problems) > 0 {
		msg := strings.ReplaceAll(errors.Join(problems...).Error(), "\n", "; ")
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonInvalidAnnotation, "Ignoring malformed annotations: " + msg})
	}
	return optIn
}

// optOut plans a workload that opted out: forget the record, so that
// opting in again starts from first sight instead of rolling for changes
// made in between, and end a pause Reroll started.
func (p *Plan) optOut(o Options, in Input, optIn annotation.OptIn) {
	p.Outcome = NotOptedIn
	p.Annotations[RecordAnnotation] = ""
	p.Annotations[KeyAnnotation] = ""
	if o.Managed {
		p.Labels[ManagedLabel] = ""
	}
	p.pause(o, in, optIn, false)
}

// incomplete reports whether the selection cannot be acted on, and plans
// it: Refused when matching the list patterns cost too much (the selection
// is incomplete: act on none of it), Waiting when a required object or key
// is missing (Wave's rule). Otherwise it records what was selected in p.
func (p *Plan) incomplete(optIn annotation.OptIn, in Input, sel selection) bool {
	if key := optIn.MatchBudgetExceeded(); key != "" {
		p.Outcome = Refused
		p.Annotations, p.Labels = map[string]string{}, map[string]string{}
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonInvalidAnnotation, fmt.Sprintf(
			"Not rolling: matching the patterns of annotation %s against the names in namespace %s costs more than the limit of %d; use fewer or simpler patterns, or exact names",
			key, in.Namespace, annotation.MaxMatchCost)})
		return true
	}
	p.Considered, p.References, p.Unreadable = sel.considered, sel.refs, sel.unreadable
	if len(sel.missing) > 0 {
		// Wave's rule: nothing happens while a required object or key is
		// missing; the record stays, so the change rolls once it is complete.
		p.Outcome, p.Missing = Waiting, sel.missing
		p.Annotations, p.Labels = map[string]string{}, map[string]string{}
		return true
	}
	return false
}

// recorded is what the record step hands to the comparison.
type recorded struct {
	// cur is the current record, prevCmp the previous one, both at the
	// level of detail they are compared at; prev is the previous record
	// as read (nil: none, or one not to compare with).
	cur, prev, prevCmp Record
	// prevValue is the previous record's annotation value; fromBaseline
	// is set when it is the caller's baseline, not the workload's record.
	prevValue    string
	fromBaseline bool
}

// previous reads the record to compare with: the workload's, else the
// caller's baseline (an unreadable baseline is none). A damaged record
// sets DamagedRecord with a Warning; one made under another key, or
// unkeyed by an older Reroll, is not compared (RecordKeyChanged): its
// digests cannot be compared with the current ones, so it is recorded
// again, as on first sight, without a rollout.
func (p *Plan) previous(o Options, in Input) (prev Record, prevValue string, fromBaseline bool) {
	prevValue = in.Annotations[RecordAnnotation]
	fromBaseline = prevValue == "" && in.Baseline != ""
	if fromBaseline {
		prevValue = in.Baseline
	}
	prev, err := ParseRecord(prevValue)
	if err != nil && fromBaseline {
		// The caller's own baseline: unreadable, it is none.
		prev, prevValue, fromBaseline, err = nil, "", false, nil
	}
	if err != nil {
		// A damaged record cannot say what changed; start again from first
		// sight rather than guess and roll by mistake.
		p.DamagedRecord = err
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonInvalidAnnotation, err.Error() + "; recording the current state without a rollout"})
	}
	if id := in.Annotations[KeyAnnotation]; prev != nil && !fromBaseline && id != o.Key.ID() {
		p.RecordKeyChanged = true
		prev = nil
	}
	return prev, prevValue, fromBaseline
}

// record decides the new record of what sel selected, bounded to the room
// the workload's other annotations leave (a RecordTooLarge Warning Event
// at each fall-back to less detail), and puts it in p with its key, the
// digest key's ID and the managed label.
func (p *Plan) record(o Options, in Input, sel selection) recorded {
	r := recorded{cur: sel.record()}
	r.prev, r.prevValue, r.fromBaseline = p.previous(o, in)
	for _, id := range sel.unreadable {
		// What could not be read counts as unchanged.
		if v, ok := r.prev[id]; ok {
			r.cur[id] = v
		}
	}
	room := recordRoom(in.Annotations)
	record, cur, prevCmp, level, encoded := bounded(r.cur, r.prev, room)
	r.cur, r.prevCmp = cur, prevCmp
	// Once per fall-back, not per record written, and only once the record
	// is written: a write the API server refuses as too long (the cache
	// holds no kubectl last-applied-configuration, so room can be less than
	// it says) is decided again from the API server's copy.
	switch {
	case level == perObjectLevel && r.prev.level() != perObjectLevel:
		p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonRecordTooLarge,
			fmt.Sprintf("The record of every consumed key would pass %d bytes; recording one digest per object, so changes name objects, not keys", min(maxRecordBytes, room))})
	case level == allObjectsLevel && r.prev.level() != allObjectsLevel:
		p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonRecordTooLarge,
			fmt.Sprintf("Even one digest per object for the %d consumed objects would pass the %d bytes that the workload's other annotations leave of Kubernetes' 256 KiB; recording one digest for all of them, so a change rolls the workload without naming the object", len(sel.refs), room)})
	}
	if len(sel.refused) > 0 && encoded != r.prevValue {
		p.Warnings = append(p.Warnings, Event{corev1.EventTypeWarning, ReasonCrossNamespaceReference,
			"Not following references to other namespaces (--allow-cross-namespace-references is off): " + strings.Join(sel.refused, ", ")})
	}
	p.Record = record
	p.Key = key(in.UID, r.prevValue, encoded)
	p.Annotations[RecordAnnotation] = encoded
	p.Annotations[KeyAnnotation] = o.Key.ID()
	if o.Managed {
		// The webhook's objectSelector: only managed workloads reach it.
		p.Labels[ManagedLabel] = "true"
	}
	return r
}

// compare decides the outcome of the record r: DamagedRecord, FirstSight
// (with the changes the first-sight rule finds: what changed after the
// workload's pod template was last written, and after Reroll's
// installation), or the changes since the previous record (Unchanged,
// Skipped for those the flags hold back).
func (p *Plan) compare(o Options, in Input, sel selection, src Source, r recorded) {
	switch {
	case p.DamagedRecord != nil:
		p.Outcome = DamagedRecord
	case r.prev == nil:
		p.Outcome = FirstSight
		if p.RecordKeyChanged {
			// A record exists, made under another key: Reroll answered
			// this workload before, and the first-sight rule cannot tell
			// what it answered.
			break
		}
		changes, latest := firstSightChanges(o, in, sel, src)
		for _, d := range changes {
			p.classify(o, sel, d)
		}
		if len(p.Changes) > 0 {
			p.FirstSightChanged = latest
		}
	default:
		diffs := diff(sel.refs, r.prevCmp, r.cur)
		if r.cur.allObjects() {
			diffs = allObjectsDiff(sel.refs, r.prevCmp, r.cur)
		}
		for _, d := range diffs {
			p.classify(o, sel, changedSinceAbsent(o, in, sel, d))
		}
		p.LatestChange = latestChange(in, sel, p.Changes)
		p.Outcome = Unchanged
		if len(p.Held) > 0 {
			p.Outcome = Skipped
		}
		if r.fromBaseline && len(p.Changes) == 0 {
			// After a restart the first-sight rule stands in for this
			// baseline: would it roll what the baseline shows unread?
			changes, _ := firstSightChanges(o, in, sel, src)
			var q Plan
			for _, d := range changes {
				q.classify(o, sel, d)
			}
			p.ruleWouldRoll = len(q.Changes) > 0
		}
	}
}

// answer decides what the changes in p do, cur being the current record:
// notify the endpoint instead of rolling (--webhook-url), nothing when the
// kind cannot restart (NotRolled), a deferral by a gate, or the rollout
// (Roll), each with its Event, and the pause.
func (p *Plan) answer(o Options, in Input, optIn annotation.OptIn, sel selection, cur Record) {
	p.Change = change.Change{Kind: in.Kind, Namespace: in.Namespace, Name: in.Name}
	for _, d := range p.Changes {
		obj := d.object()
		obj.Hash = o.compatOf(d, in.Namespace)
		p.Change.Objects = append(p.Change.Objects, obj)
	}
	summary := p.Change.Summary()
	if o.WebhookURL != "" {
		// --webhook-url: report instead of rolling; the record is written
		// only once the endpoint accepted the report (at least once).
		p.Outcome = Notify
		n := p.Change
		n.Hash, n.ObservedAt = cur.ConfigHash(), in.Now.Unix()
		p.Notification = &n
		p.Change = p.Change.Alert()
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonNotified, fmt.Sprintf("Notified %s after %s", notify.Redact(o.WebhookURL), summary)})
		p.pause(o, in, optIn, false)
		return
	}
	p.Change = p.Change.Alert()
	p.Roll = rolling(o, in, optIn, cur, sel, p.Changes)
	if p.Roll.Way == workload.NotRestarted {
		p.Outcome = NotRolled
		if in.Action.Way == workload.ByEviction && o.NoEviction {
			p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonEvictionDisabled, summary + "; " + p.Roll.Why})
		} else {
			p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonNotRolled, summary + "; " + p.Roll.Why})
		}
		p.pause(o, in, optIn, true)
		return
	}
	if d := p.gate(o, in, optIn); d != nil {
		p.deferTo(o, in, *d, summary)
		p.pause(o, in, optIn, false)
		return
	}
	p.Outcome = Roll
	note := "Rolled after " + summary
	if p.Roll.Note != "" {
		note += ": " + p.Roll.Note
	}
	p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonRolled, note})
	a := p.Change
	p.Alert = &a
	p.pause(o, in, optIn, true)
}

// object is the change model's form of a Diff.
func (d Diff) object() change.Object {
	o := change.Object{Kind: string(d.Ref.Kind), Namespace: d.Ref.Namespace, Name: d.Ref.Name,
		Created: d.Created, Deleted: d.Deleted, Hash: d.ReloaderSHA1}
	if len(d.Keys) == 1 && d.Keys[0] == WrittenKey {
		o.Written = true
	} else if !d.Created && !d.Deleted {
		o.Keys = d.Keys
	}
	return o
}

// classify adds d, with Reloader's hash of its object, to the plan's
// Changes, or to Held with the flag that holds it back.
func (p *Plan) classify(o Options, sel selection, d Diff) {
	d.ReloaderSHA1 = sel.reloaderSHA1(d.Ref)
	if held := heldBy(o, d); held != "" {
		p.Held, p.HeldBy = append(p.Held, d), append(p.HeldBy, held)
		return
	}
	p.Changes = append(p.Changes, d)
}

// heldBy names the flag that holds a created or deleted object's change
// back, or "" when it rolls.
func heldBy(o Options, d Diff) string {
	switch {
	case d.Ref.Kind == reference.SecretProviderClass && (d.Created || d.Deleted):
		// A SecretProviderClass's statuses come and go with the pods that
		// mount it; only a change of mounted versions rolls, as in Reloader.
		return "--enable-csi-integration"
	case d.Created && !o.ReloadOnCreate:
		return "--reload-on-create"
	case d.Deleted && !o.ReloadOnDelete:
		return "--reload-on-delete"
	}
	return ""
}

// key identifies a decision; see Plan.Key.
func key(uid, before, after string) string {
	// Appended in a buffer on the stack (most records are short): the
	// first pass after a start keys every workload (issue #36).
	var buf [512]byte
	b := append(append(append(append(append(buf[:0], uid...), 0), before...), 0), after...)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// rolling decides how the workload rolls: its kind's way, and for the
// template ways the trigger of the strategy and dialect.
func rolling(o Options, in Input, optIn annotation.OptIn, cur Record, sel selection, changes []Diff) Rolling {
	r := Rolling{Way: in.Action.Way}
	switch r.Way {
	case workload.NotRestarted:
		r.Why = in.Action.Why
	case workload.ByJob:
		r.Job = workload.JobName(in.Name, cur.ConfigHash())
		r.Note = fmt.Sprintf("created Job %s from the CronJob's jobTemplate", r.Job)
	case workload.ByRecreate:
		r.Note = "deleted and re-created the Job"
	case workload.ByRestartAt:
		r.RestartAt = in.Now.UTC().Format("2006-01-02T15:04:05Z")
		r.Note = "set spec.restartAt"
	case workload.ByEviction:
		if o.NoEviction {
			r.Way, r.Why = workload.NotRestarted, EvictionDisabledWhy
			break
		}
		r.Note = "evicting its pods one by one (the Evicting and Evicted Events follow)"
	case workload.ByWorkloadRef:
		r.Target = in.Action.Ref
		r.Trigger = templateTrigger(o, in, optIn, cur, sel, changes)
		r.Note = "changed the pod template of Deployment " + r.Target + " (the Rollout's workloadRef)"
	default:
		r.Way = workload.ByTemplate
		r.Trigger = templateTrigger(o, in, optIn, cur, sel, changes)
	}
	return r
}

// templateTrigger is the pod template change of the strategy and dialect:
// Wave's hash (deferred: it hashes values) or pod-reloader's, whatever the
// strategy; Reloader's env vars (env-vars); Reloader's last-reloaded-from
// (annotations, Reloader's dialect); or reroll.dev/config-hash.
func templateTrigger(o Options, in Input, optIn annotation.OptIn, cur Record, sel selection, changes []Diff) Trigger {
	switch {
	case optIn.Dialect == annotation.DialectWave:
		return Trigger{Annotation: trigger.WaveHashAnnotation, Deferred: DeferredWaveHash, Wave: sel.refs, Namespace: in.Namespace,
			WorkloadKind: in.Kind, WorkloadName: in.Name}
	case optIn.Dialect == annotation.DialectPodReloader:
		return Trigger{Annotation: trigger.PodReloaderHashAnnotation, Value: o.Compat(in.Kind, in.Namespace, in.Name, digest.PodReloaderHash(sel.podReloader))}
	case o.Strategy == trigger.EnvVars:
		var t Trigger
		for _, d := range changes {
			t.Env = append(t.Env, EnvVar{Ref: d.Ref, Name: trigger.EnvVarName(d.Ref.Kind, d.Ref.Name), Value: o.compatOf(d, in.Namespace)})
		}
		return t
	case optIn.Dialect == annotation.DialectReloader:
		// Reloader rolls once per changed object and the last one's record
		// stays; Reroll rolls once, with the record of the last object in
		// name order.
		d := changes[len(changes)-1]
		return Trigger{ReloadedFrom: &trigger.ReloadedFrom{
			Type:          strings.ToUpper(string(d.Ref.Kind)),
			Name:          d.Ref.Name,
			Namespace:     in.Namespace,
			Hash:          o.compatOf(d, in.Namespace),
			ContainerRefs: d.Ref.Containers,
			ObservedAt:    in.Now.Unix(),
		}}
	}
	return Trigger{Annotation: trigger.ConfigHashAnnotation, Value: cur.ConfigHash()}
}

// pause decides Reloader's pause period for a Deployment. A rollout Reroll
// triggers on a Deployment with a pause period also sets spec.paused and
// records the time in the paused-at annotation (RFC 3339 UTC, as Reloader
// writes it); once the period has passed, a later reconcile clears both and
// the Deployment rolls everything that changed meanwhile at once. The state
// lives on the Deployment, so a restart of Reroll neither loses nor extends
// the pause. A Deployment paused by someone else is left paused.
func (p *Plan) pause(o Options, in Input, optIn annotation.OptIn, rolling bool) {
	if !in.Pausable {
		return
	}
	key := o.Annotations.Names.PausedAt
	if at, has := in.Annotations[key]; has {
		start, err := time.Parse(time.RFC3339, at)
		end := start.Add(optIn.PausePeriod)
		if err == nil && optIn.PausePeriod > 0 && in.Now.Before(end) {
			p.Pause = Pause{RequeueAfter: end.Sub(in.Now)}
			return
		}
		p.Pause = Pause{Resume: true}
		p.Annotations[key] = ""
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonResumed, "Resumed after the pause period"})
		return
	}
	if rolling && optIn.PausePeriod > 0 && !in.Paused {
		p.Pause = Pause{Pause: true, Period: optIn.PausePeriod, RequeueAfter: optIn.PausePeriod}
		p.Annotations[key] = in.Now.UTC().Format(time.RFC3339)
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonPaused, fmt.Sprintf("Paused for %s so that further changes join this rollout", optIn.PausePeriod)})
	}
}
