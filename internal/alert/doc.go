// Package alert sends a chat or webhook message after each rollout Reroll
// triggers, configured with Stakater Reloader's environment variables
// (ALERT_ON_RELOAD, ALERT_SINK, ALERT_WEBHOOK_URL, ALERT_WEBHOOK_PROXY,
// ALERT_ADDITIONAL_INFO). A Sender queues alerts in memory and posts them
// from its own goroutine with retries, so a slow or failing sink never holds
// up a rollout; an alert that does not fit in the queue is dropped and
// counted. Alerts name objects and keys, never values.
package alert
