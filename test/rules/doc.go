// Package rules checks the Helm chart's PrometheusRule with Prometheus' own
// rule parser (github.com/prometheus/prometheus/model/rulefmt, the parser
// promtool check rules uses): every expression and template parses, every
// metric an expression names is one Reroll serves (docs/metrics.md, which
// cmd/reroll's doc test keeps equal to the registry), and every runbook_url
// points at a section of docs/operations.md. A module of its own, so that
// Prometheus' dependencies stay out of Reroll's.
package rules
