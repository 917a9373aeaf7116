// Package annotation parses the annotations by which a workload opts in to
// Reroll, in Stakater Reloader's dialect (reloader.stakater.com/auto,
// configmap.reloader.stakater.com/reload, ...; every name overridable by
// Reloader's flags) and in Reroll's own (reroll.dev/*), and decides, with
// Reloader's precedence, which ConfigMaps and Secrets decide a workload's
// rollouts.
//
// As in Reloader, a workload's annotations are read from its metadata and,
// when none of them is set there, from its pod template.
package annotation
