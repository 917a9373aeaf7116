package controller

// AuditMessages are the log messages that record an action Reroll took on
// a workload or its pods: a rollout, a notification instead of one, a
// restart by eviction and each pod evicted. The process's logger must
// write every one (no sampling), so that the log is an audit trail: 500
// rollouts leave 500 "Rolled workload" lines. Events are no such trail,
// since the API server's clients aggregate them (see docs/security.md).
var AuditMessages = []string{
	"Rolled workload",
	"Notified the notification endpoint instead of rolling",
	"Restarting workload by eviction",
	"Restarting annotated pods by eviction",
	"Evicted pod",
}
