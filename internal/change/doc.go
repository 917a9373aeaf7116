// Package change is Reroll's one model of a change to the data a workload
// consumes: which workload, which ConfigMaps and Secrets, which keys, and
// whether an object was created, deleted or (in SAP pod-reloader's dialect)
// merely written. The Rolled, NotRolled and Notified Events, the alerts of
// ALERT_ON_RELOAD, the --webhook-url notification and the kubectl plugin all
// describe a change from this type and its one text form, so they never
// disagree. A change names objects and keys, never values.
package change
