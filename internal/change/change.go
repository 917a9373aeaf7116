package change

import "strings"

// Object is what happened to one ConfigMap or Secret that a workload
// consumes. Exactly one of Created, Deleted, Written and Keys describes it.
type Object struct {
	// Kind is "ConfigMap" or "Secret"; Name is the object's name.
	Kind string `json:"kind"`
	// Namespace is set only for an object outside the workload's namespace
	// (Wave's extra lists); empty means the workload's own.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Keys lists the consumed keys whose value changed, appeared or
	// disappeared, sorted; empty when the object was created, deleted or
	// written.
	Keys []string `json:"keys,omitempty"`
	// Created and Deleted are set when the object appeared or disappeared.
	Created bool `json:"created,omitempty"`
	Deleted bool `json:"deleted,omitempty"`
	// Written is set in SAP pod-reloader's dialect, where any write to a
	// listed object counts (its resourceVersion changed), whatever the data.
	Written bool `json:"written,omitempty"`
	// Hash is Stakater Reloader's SHA-1 of the object's data (lowercase hex;
	// the SHA-1 of nothing for a deleted object). Only the --webhook-url
	// notification carries it, as Reloader's does; Events and alerts, which
	// tenants and chat rooms read, never do (see Change.Alert).
	Hash string `json:"hash,omitempty"`
}

// ID is "Kind/name", or "Kind/namespace/name" for an object in another
// namespace: the form of Reroll's records and Events.
func (o Object) ID() string {
	if o.Namespace != "" {
		return o.Kind + "/" + o.Namespace + "/" + o.Name
	}
	return o.Kind + "/" + o.Name
}

// String is the one text form of the change to one object:
// "ConfigMap/cfg changed keys a,b", "Secret/tls was created",
// "... was deleted", or "... was written" (pod-reloader's dialect).
func (o Object) String() string {
	switch {
	case o.Created:
		return o.ID() + " was created"
	case o.Deleted:
		return o.ID() + " was deleted"
	case o.Written:
		return o.ID() + " was written"
	case len(o.Keys) == 0:
		return o.ID() + " changed"
	}
	return o.ID() + " changed keys " + strings.Join(o.Keys, ",")
}

// Change is a change to the data one workload consumes: what the Events,
// alerts and --webhook-url notifications report.
type Change struct {
	// Kind, Namespace and Name identify the workload ("Deployment", ...).
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Objects are the ConfigMaps and Secrets that changed, sorted by kind
	// and name.
	Objects []Object `json:"changes"`
	// Hash is the SHA-256 over everything the workload consumes, the value
	// reroll.dev/config-hash takes for this data (lowercase hex); set only
	// in --webhook-url notifications.
	Hash string `json:"hash,omitempty"`
	// ObservedAt is when Reroll saw the change, in Unix seconds; set only in
	// --webhook-url notifications.
	ObservedAt int64 `json:"observedAt,omitempty"`
	// Halt, when set, makes this the alert of a halt, not of a rollout: the
	// circuit breaker (safe delivery) halted the change set of this change
	// after the workload's rollout failed.
	Halt *Halt `json:"halt,omitempty"`
	// Invalid, when set, makes this the alert of a held change, not of a
	// rollout: the new content of a changed object fails a Validator's
	// rule, and nothing rolls for it (hold reason invalid).
	Invalid *Invalid `json:"invalid,omitempty"`
}

// Invalid is what the alert of a change held for invalid content says
// beyond the change.
type Invalid struct {
	// Findings are one line per failing object: the object ("ConfigMap/
	// app-config"), then each failing rule as "Validator/rule: key "k"
	// what is wrong". They never quote a Secret's value.
	Findings []string `json:"findings"`
}

// Halt is what the alert of a halted change set says beyond the change.
type Halt struct {
	// ChangeSet is the set's ID (delivery.SetID).
	ChangeSet string `json:"changeSet"`
	// Failed names the failed workloads, "Kind/namespace/name".
	Failed []string `json:"failed"`
	// Signal says what failed first.
	Signal string `json:"signal"`
}

// Summary joins the objects' text forms with "; ":
// "ConfigMap/cfg changed keys a; Secret/tls was deleted".
func (c Change) Summary() string {
	parts := make([]string, 0, len(c.Objects))
	for _, o := range c.Objects {
		parts = append(parts, o.String())
	}
	return strings.Join(parts, "; ")
}

// Workload is "Kind namespace/name", the workload as a person reads it.
func (c Change) Workload() string {
	return c.Kind + " " + c.Namespace + "/" + c.Name
}

// Alert returns the form of c that alerts carry: without the hashes and the
// time of the --webhook-url notification. A hash of a Secret's data is not a
// value but lets a reader test guesses against it, so it never goes where
// chat rooms can read it.
func (c Change) Alert() Change {
	out := c
	out.Hash, out.ObservedAt = "", 0
	out.Objects = make([]Object, len(c.Objects))
	for i, o := range c.Objects {
		o.Hash = ""
		out.Objects[i] = o
	}
	return out
}
