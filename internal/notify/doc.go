// Package notify sends the JSON notification that replaces a rollout when
// Reroll runs with --webhook-url (Reloader's flag of the same name): the
// workload, the objects and keys that changed, and the hashes, POSTed to a
// URL of the user's choosing instead of a change to the pod template.
package notify
