package controller

import "github.com/reroll/reroll/internal/apply"

// The audit messages: the log lines that record an action Reroll took on a
// workload or its pods; apply.Audit* document them.
const (
	AuditRolled           = apply.AuditRolled
	AuditNotified         = apply.AuditNotified
	AuditEvictingWorkload = apply.AuditEvictingWorkload
	AuditEvictingPods     = apply.AuditEvictingPods
	AuditEvicted          = apply.AuditEvicted
)

// AuditMessages are the log messages that record an action Reroll took on
// a workload or its pods (apply.AuditMessages): the process's logger must
// write every one (no sampling), so that the log is an audit trail.
var AuditMessages = apply.AuditMessages
