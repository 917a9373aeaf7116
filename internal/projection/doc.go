// Package projection reconciles reroll.dev/v1alpha1 Projections: it keeps
// fields of one object (a custom resource, usually) equal to values read from
// ConfigMaps and Secrets, or to a keyed digest of them, for operators that
// take credentials inline in a spec or read a Secret without watching it.
//
// It reads the sources and writes the target by impersonating the
// Projection's ServiceAccount, directly from the API server (values never
// enter a cache), and writes only the projected fields with server-side apply
// under the field manager "reroll-projection/<name>". The manager's cache holds only the
// digests of ConfigMaps and Secrets (internal/digest), which tell it which
// Projections a change concerns, key by key. docs/projections.md describes
// the model, security and GitOps.
package projection
