// Package validate evaluates a Validator's rules (api/v1alpha1) against the
// content of one ConfigMap or Secret: required and forbidden keys, a
// maximum size, a key's format (JSON, YAML, TOML, Java properties, dotenv,
// PEM certificate and private key, URL), a JSON Schema (draft 2020-12) on a
// parsed key, and CEL expressions over the data with json(), yaml() and
// toml() to parse a value.
//
// It is pure: no client, no clock of its own (the caller passes now), no
// globals that change. The controller (to hold a change set whose new
// content fails), the admission webhook and `kubectl reroll validate` call
// the same Compile and Evaluate, so a rule means one thing everywhere.
//
// Bounds, checked before work is done: a CEL expression whose estimated
// cost exceeds PerCallLimit is refused by Compile, as are a Validator whose
// expressions together could exceed PerEvaluationLimit; Evaluate stops
// running expressions for one object once PerEvaluationLimit is spent (the
// rest fail, closed), and reads no value larger than MaxObjectBytes. A
// JSON Schema resolves $ref only inside itself: nothing is fetched or read
// from disk.
//
// Findings name the Validator, the rule and the key and say what is wrong;
// for a Secret they never quote any part of a value (parser messages, which
// often quote the offending text, are reduced to a line or an offset).
package validate
