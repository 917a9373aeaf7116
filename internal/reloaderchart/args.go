package reloaderchart

import (
	"sort"
	"strings"
)

// reloaderFlag is what Reroll does with one flag of Reloader's binary
// (v1.4.21, and the older names it still accepts).
type reloaderFlag struct {
	// bool: pflag reads "--flag" alone as true, and never takes the next
	// argument as the value.
	bool bool
	// verdict and detail are the finding of the flag when given.
	verdict Verdict
	detail  string
}

// reloaderFlags are the flags of Reloader's binary. Reroll accepts every one
// (cmd/reroll: TestConfigure_TakesEveryReloaderFlagInBothForms).
var reloaderFlags = func() map[string]reloaderFlag {
	same := reloaderFlag{verdict: Same, detail: "the same flag, name, type and meaning"}
	out := map[string]reloaderFlag{}
	for _, name := range []string{
		"configmap-annotation", "secret-annotation", "auto-annotation", "ignore-annotation",
		"configmap-auto-annotation", "secret-auto-annotation", "auto-search-annotation", "search-match-annotation",
		"pause-deployment-annotation", "pause-deployment-time-annotation", "spc-annotation", "spc-auto-annotation",
		"log-format", "log-level", "webhook-url", "resources-to-ignore", "ignored-workload-types",
		"namespaces", "namespaces-to-ignore", "namespace-selector", "resource-label-selector",
		"reload-strategy", "reload-on-create", "reload-on-delete", "pprof-addr",
	} {
		out[name] = same
	}
	for _, name := range []string{"auto-reload-all", "enable-ha", "enable-pprof", "enable-csi-integration"} {
		out[name] = reloaderFlag{bool: true, verdict: Same, detail: same.detail}
	}
	out["is-Argo-Rollouts"] = reloaderFlag{verdict: Mapped, detail: `"true" makes Argo Rollouts required (Reroll stops if the API server does not serve them); Reroll handles them whenever served`}
	out["sync-after-restart"] = reloaderFlag{bool: true, verdict: Mapped, detail: "accepted, no effect: a start rolls exactly the changes made while Reroll was down, once, from the record on each workload"}
	for _, name := range []string{"configmap-auto-by-annotation", "secret-auto-by-annotation"} {
		out[name] = reloaderFlag{verdict: Mapped, detail: "a flag of early Reloader releases: accepted and ignored, with a warning in the log"}
	}
	return out
}()

// CheckArgs returns the verdict on a Reloader container's arguments (its
// args, after the command): one finding per flag given, keyed "--name"; an
// Unknown finding for an argument Reroll would refuse to start with; and
// one finding keyed "(default) --name" for each default of Reroll's binary
// that differs from Reloader's when the arguments leave it unset, with the
// flag that restores Reloader's behaviour. Sorted by key.
func CheckArgs(args []string) []Finding {
	given := map[string]string{}
	var out []Finding
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			out = append(out, Finding{Key: a, Verdict: Unknown, Detail: "not a flag: Reroll stops on a positional argument"})
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f, ok := reloaderFlags[name]
		if !ok {
			out = append(out, Finding{Key: "--" + name, Verdict: Unknown, Detail: "not a flag of Reloader's binary; Reroll stops on a flag it does not have unless it is one of Reroll's own (docs/flags.md)"})
			continue
		}
		if !hasValue && !f.bool && i+1 < len(args) {
			i++
			value = args[i]
		}
		if !hasValue && f.bool {
			value = "true"
		}
		given[name] = strings.Trim(value, `"'`)
		out = append(out, Finding{Key: "--" + name, Verdict: f.verdict, Detail: f.detail})
	}
	for _, d := range argDefaults {
		if d.differs(given) {
			out = append(out, Finding{Key: "(default) --" + d.flag, Verdict: Refused, Detail: d.detail})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// argDefault is a default of Reroll's binary that differs from Reloader's.
type argDefault struct {
	flag string
	// differs reports whether the arguments given leave Reroll's default
	// in force where it differs from Reloader's.
	differs func(given map[string]string) bool
	detail  string
}

var argDefaults = []argDefault{
	{flag: "reload-strategy", differs: func(g map[string]string) bool { _, ok := g["reload-strategy"]; return !ok },
		detail: "Reloader's binary defaults to env-vars, Reroll's to annotations: a rollout writes a pod template annotation instead of STAKATER_* variables; add --reload-strategy=env-vars"},
	{flag: "is-Argo-Rollouts", differs: func(g map[string]string) bool { return g["is-Argo-Rollouts"] != "true" },
		detail: "without it Reloader leaves Argo Rollouts alone; Reroll rolls them whenever the API server serves them: add --ignored-workload-types=rollouts (next to any other types) to leave them alone"},
	{flag: "storm-max-rollouts", differs: func(map[string]string) bool { return true },
		detail: "Reroll holds a workload that rolled 10 times within 10 minutes (the storm breaker, a RolloutStorm Event); Reloader has no such limit: add --storm-max-rollouts=0"},
}
