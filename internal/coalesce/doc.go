// Package coalesce holds back the reconciles that ConfigMap and Secret
// changes start until the changes stop (a debounce, --coalesce-window and
// --coalesce-max-wait), so that a burst of writes (a GitOps sync, a Helm
// upgrade, a rotation) rolls each workload once. Handler is the event
// handler of the controller's ConfigMap and Secret watches; Debouncer keeps
// the waits, in memory only, and tells Reconcile whether it may run now
// (Admit) and whether a burst is still held (Holds).
package coalesce
