// Package pin is versioned configuration (issue #33): immutable copies of
// the ConfigMaps and Secrets a workload's pod template consumes, one per
// content, named from the source and a short keyed digest of its content,
// so that each rollout names the exact content it was made for.
//
// CONTRACT: the garbage collection of copies and the rotation receipts
// (helper gc33, Build items 6 and 8 of #33) consume this package: Name,
// Build, IsCopy, Verify, NeedsClaim, LastWrite and Referenced. Change
// them only together with their callers.
//
// What a copy is:
//   - a ConfigMap or Secret in the source's namespace, of the source's kind
//     and type, with every key of data and binaryData, and immutable: true;
//   - named Name(key, kind, namespace, source, digests of the source's
//     keys): the source's name, a dash and 10 hex characters of an
//     HMAC-SHA-256 under a key derived from the installation key for this
//     use only, of the kind, namespace, source name and the keyed digest of
//     each key (never a plain hash of a Secret, and bound to its place, so
//     equal content in two namespaces gives unrelated names);
//   - labelled LabelCopyOf (the source's name, or SourceLabelValue's short
//     form when longer than a label value), for kubectl users' selectors;
//   - annotated AnnotationCopyOf (the source's full name) and
//     AnnotationSignature, a keyed signature of the kind, namespace, copy
//     name, source name and the keyed digest of every key the copy holds.
//     Only the installation key makes one, so a look-alike that a tenant
//     creates (or a copy whose data a tenant replaced by deleting and
//     re-creating it) never verifies: Reroll never trusts nor deletes it.
//     The informer cache keeps annotations but drops labels
//     (digest.Object), so IsCopy and Verify read annotations only, and
//     Verify works on a cached digest.Object as well as on an object read
//     from the API.
//   - without owner references: one copy is shared by every workload of
//     the namespace that consumes its content, and Kubernetes' garbage
//     collector deletes a dependent once all of its listed owners are gone,
//     so a list short of every sharer would delete a copy in use, and a
//     full one costs a write of the shared copy per workload. The copies'
//     garbage collection (internal/pingc) deletes a copy once no template,
//     ReplicaSet, ControllerRevision, Job or pod names it, which a deleted
//     workload's copy soon is.
package pin
