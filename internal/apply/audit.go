package apply

// The audit messages: the log lines that record an action Reroll took on a
// workload or its pods. The writers log exactly these constants, and
// cmd/reroll's logger never samples them (AuditMessages).
const (
	// AuditRolled: a workload's pod template was changed to roll it.
	AuditRolled = "Rolled workload"
	// AuditNotified: the notification endpoint was told instead.
	AuditNotified = "Notified the notification endpoint instead of rolling"
	// AuditEvictingWorkload: a workload's restart by eviction started.
	AuditEvictingWorkload = "Restarting workload by eviction"
	// AuditEvictingPods: a restart of annotated pods by eviction started.
	AuditEvictingPods = "Restarting annotated pods by eviction"
	// AuditEvicted: one pod was evicted.
	AuditEvicted = "Evicted pod"
)

// AuditMessages are the log messages that record an action Reroll took on
// a workload or its pods: a rollout, a notification instead of one, a
// restart by eviction and each pod evicted. The process's logger must
// write every one (no sampling), so that the log is an audit trail: 500
// rollouts leave 500 "Rolled workload" lines. Events are no such trail,
// since the API server's clients aggregate them (see docs/security.md).
var AuditMessages = []string{AuditRolled, AuditNotified, AuditEvictingWorkload, AuditEvictingPods, AuditEvicted}
