// Package notify posts changes (change.Change) to HTTP endpoints: the alerts
// of Stakater Reloader's ALERT_ON_RELOAD (ALERT_SINK slack, teams, gchat or
// webhook; ALERT_WEBHOOK_URL, ALERT_WEBHOOK_PROXY, ALERT_ADDITIONAL_INFO)
// after each rollout, and the notification that replaces a rollout with
// --webhook-url (Reloader's flag of the same name), to the notification
// endpoint. One Sender does both: a bounded in-memory queue drained by its
// own goroutine, each POST bounded by a timeout and retried with
// apimachinery's wait.Backoff, so a slow or failing endpoint never holds up a
// reconcile. Logs, errors and Events show endpoints redacted (Redact): their
// URLs often carry a token. Bodies name objects and keys, never values; only
// the notification carries Reloader's hashes.
package notify
