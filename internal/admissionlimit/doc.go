// Package admissionlimit bounds the size of the AdmissionReview requests
// Reroll's admission webhooks accept, before anything decodes them. An
// UPDATE's review holds the object and its oldObject, up to the API server's
// 3 MiB each way; decoding, restoring and diffing it took several copies of
// each (about 50× the request in allocations), so a few concurrent writes of
// large objects could exhaust the webhook's memory. A request over the bound
// is answered from the first bytes of its body alone (its UID), by the
// policy of the webhook: allowed unchanged with a warning for a mutating
// webhook that only spares a rollout, denied for a validating one.
package admissionlimit
