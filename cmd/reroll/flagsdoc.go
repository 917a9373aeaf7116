package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// flagsMarkdown renders the flag set as the Markdown table of docs/flags.md,
// so the document is generated from the code (make docs) and a test fails
// when it is stale.
func flagsMarkdown(fs *pflag.FlagSet) string {
	var b strings.Builder
	b.WriteString("# Flags\n\n")
	b.WriteString("<!-- Generated from cmd/reroll/options.go by `make docs`; do not edit. -->\n\n")
	b.WriteString("Reroll's flags keep Stakater Reloader's names, types and defaults, with one\n")
	b.WriteString("exception: `--reload-strategy` defaults to `annotations` (Reloader's binary defaults\n")
	b.WriteString("to `env-vars`; pass `--reload-strategy=env-vars` to keep Reloader's trigger). See\n")
	b.WriteString("[migrating-from-reloader.md](migrating-from-reloader.md). Environment variables:\n")
	b.WriteString("`KUBERNETES_NAMESPACE` (watch only this namespace), `POD_NAMESPACE` (the namespace of the\n")
	b.WriteString("leader election Lease with `--enable-ha`), `POD_NAME` (logged at start), and Reloader's\n")
	b.WriteString("`ALERT_ON_RELOAD`, `ALERT_SINK`, `ALERT_WEBHOOK_URL`, `ALERT_WEBHOOK_PROXY` and\n")
	b.WriteString("`ALERT_ADDITIONAL_INFO` (an alert after each rollout; see\n")
	b.WriteString("[operations.md](operations.md#alerts)).\n\n")
	b.WriteString("| flag | type | default | meaning |\n|---|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		def := f.DefValue
		if def == "" || def == "[]" {
			def = "—"
		} else {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", f.Name, f.Value.Type(), def, strings.ReplaceAll(f.Usage, "|", "\\|"))
	})
	return b.String()
}
