// Package reloaderchart is what Reroll's Helm chart does with each value of
// Stakater Reloader's chart (v1.4.21, chart 2.2.x): the table
// charts/reroll/files/reloader-keys.yaml, which the chart's templates read to
// refuse values and which keys.yaml here copies (make docs; a test fails when
// the two differ). Check gives the verdict of every key of a Reloader values
// file, for `kubectl reroll migrate-check`; Markdown renders the table of
// docs/migrating-from-reloader.md.
package reloaderchart
