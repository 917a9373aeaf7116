// Package annotation parses the annotations by which a workload opts in to
// Reroll: Stakater Reloader's (reloader.stakater.com/auto,
// configmap.reloader.stakater.com/reload, secret.reloader.stakater.com/reload)
// and Reroll's own (reroll.dev/auto, reroll.dev/configmaps,
// reroll.dev/secrets).
//
// As in Reloader, the annotations are read from the workload's metadata and,
// when none of them is set there, from its pod template.
package annotation
