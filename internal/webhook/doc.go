// Package webhook holds Reroll's mutating admission handler of workloads
// (--enable-webhook), kept apart from the reconcilers as kubebuilder lays out
// webhooks. WorkloadAdmission puts back, in the same write, the fields a
// replace (kubectl replace, Argo CD Replace=true, helm --force) dropped:
// the record, its key, the managed label, the pod template's trigger
// annotations and env vars. It reads nothing but the AdmissionReview, and
// never denies a write. internal/controller serves one handler per workload
// kind on the manager's webhook server.
package webhook
