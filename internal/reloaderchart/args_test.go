package reloaderchart

import (
	"testing"

	"github.com/onsi/gomega"
)

func TestCheckArgs(t *testing.T) {
	// Reroll's defaults that differ from Reloader's whatever the arguments.
	always := map[string]Verdict{"(default) --storm-max-rollouts": Refused}
	with := func(m map[string]Verdict) map[string]Verdict {
		out := map[string]Verdict{}
		for k, v := range always {
			out[k] = v
		}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	cases := map[string]struct {
		// args are a Reloader container's arguments.
		args []string
		// want are the findings' keys and verdicts.
		want map[string]Verdict
	}{
		"no arguments leave the strategy and Argo Rollouts defaults to differ": {
			want: with(map[string]Verdict{"(default) --reload-strategy": Refused, "(default) --is-Argo-Rollouts": Refused}),
		},
		"Reloader's chart's arguments, both forms, are the same": {
			args: []string{"--reload-strategy=env-vars", "--is-Argo-Rollouts", "true", `--namespace-selector="env=test"`, "--enable-ha", "--log-format", "json"},
			want: with(map[string]Verdict{"--reload-strategy": Same, "--is-Argo-Rollouts": Mapped, "--namespace-selector": Same, "--enable-ha": Same, "--log-format": Same}),
		},
		"a bool flag takes no following word": {
			args: []string{"--reload-strategy", "annotations", "--is-Argo-Rollouts=true", "--sync-after-restart", "--auto-reload-all"},
			want: with(map[string]Verdict{"--reload-strategy": Same, "--is-Argo-Rollouts": Mapped, "--sync-after-restart": Mapped, "--auto-reload-all": Same}),
		},
		"an unknown flag and a positional argument are unknown": {
			args: []string{"--reload-strategy=env-vars", "--is-Argo-Rollouts=true", "--no-such-flag=1", "stray"},
			want: with(map[string]Verdict{"--reload-strategy": Same, "--is-Argo-Rollouts": Mapped, "--no-such-flag": Unknown, "stray": Unknown}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			fs := CheckArgs(tc.args)
			got := map[string]Verdict{}
			for _, f := range fs {
				got[f.Key] = f.Verdict
				g.Expect(f.Detail).NotTo(gomega.BeEmpty(), f.Key)
			}
			g.Expect(got).To(gomega.Equal(tc.want))
			g.Expect(Differs(fs)).To(gomega.BeTrue())
		})
	}
}
