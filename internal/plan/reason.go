package plan

// Event reasons the controller records on a workload outside a plan: when a
// write fails, a template cannot be read, or a restart by eviction
// progresses. They live here, beside the planned ones (ReasonRolled, ...),
// so that the kubectl plugin reads Reroll's Events with the same words
// without linking the reconciler (internal/controller).
const (
	// ReasonInvalidWorkload is a Warning Event: the object's pod template
	// cannot be read at the configured path (--workload).
	ReasonInvalidWorkload = "InvalidWorkload"
	// ReasonRollFailed is a Warning Event: the write that rolls the
	// workload, or the notification that replaces it, failed; Reroll retries
	// with backoff.
	ReasonRollFailed = "RollFailed"

	// ReasonEvicting is a Normal Event: a restart by eviction started (or a
	// new change was folded into one); the note has the number of pods.
	ReasonEvicting = "Evicting"
	// ReasonEvicted is a Normal Event: every pod of the restart was evicted
	// and the replacements are Ready.
	ReasonEvicted = "Evicted"
	// ReasonEvictionBlocked is a Warning Event: a PodDisruptionBudget
	// refused an eviction; the note names it. Reroll retries with backoff.
	ReasonEvictionBlocked = "EvictionBlocked"
	// ReasonNotEvicted is a Warning Event: a pod that reads the changed data
	// has no owner to re-create it, so Reroll never evicts it.
	ReasonNotEvicted = "NotEvicted"
	// ReasonEvictionFailed is a Warning Event: an eviction failed for
	// another reason; Reroll retries with backoff.
	ReasonEvictionFailed = "EvictionFailed"
	// ReasonEvictionDisabled is a Warning Event: the workload asks for a
	// restart by eviction (reroll.dev/restart: evict, or a --evict-owner
	// kind) while restarts by eviction are off (--enable-pod-eviction) or
	// not permitted; the note names the flag. Nothing restarts; the record
	// is still written.
	ReasonEvictionDisabled = "EvictionDisabled"

	// ReasonTemplateReverted is a Warning Event: another field manager put
	// back the pod template Reroll changed (an operator that owns the
	// workload), so Reroll stops changing it; the note names the manager
	// and suggests reroll.dev/restart: evict. Repeated, as a reminder, for
	// each change that is then not rolled.
	ReasonTemplateReverted = "TemplateReverted"
)

// EvictionDisabledWhy is the note of a ReasonEvictionDisabled Event: why
// nothing restarts, and the flag that turns restarts by eviction on.
const EvictionDisabledWhy = "not restarted: restarts by eviction are off (Reroll needs --enable-pod-eviction, Helm value podEviction.enabled, and with it list and watch on pods and create on pods/eviction; see Reroll's log)"
