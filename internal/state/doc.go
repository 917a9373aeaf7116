// Package state keeps Reroll's own records in its own namespace, the state
// that only Reroll writes or that it proves it wrote (a signature under the
// installation key):
//
//   - the digest key Secret: the installation key, the key it replaces
//     during a rotation, the installation time and the legacy scheme's
//     deadline (LoadDigestKey, LoadInstalledAt, LoadLegacyRecordsUntil);
//   - Entries: signed entries, one ConfigMap per entry, bounded per
//     namespace and in bytes (the pod records of annotated pods, and the
//     Job journal's entries);
//   - JobJournal: the manifest of each Job being re-created, in Entries,
//     replayed once this replica leads;
//   - Baselines: the signed baselines of workloads Reroll has not written
//     a record on, one ConfigMap per namespace, written in batches.
//
// The halt records of change sets live beside it, in internal/halts. What a
// tenant can write is never trusted here: an entry whose signature does not
// verify counts as absent and is deleted (or dropped at the next write).
// Every store is granted by the Role in Reroll's namespace (get, list,
// create, update, delete on ConfigMaps; get, create, update on the digest
// key Secret), not by the base ClusterRole.
package state
