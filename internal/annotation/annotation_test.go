package annotation

import (
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/reroll/reroll/internal/reference"
)

func TestConfig_Parse(t *testing.T) {
	cases := map[string]struct {
		// config is the flag-derived configuration; zero means DefaultConfig.
		config *Config
		// workload and template are the metadata and pod template annotations.
		workload, template map[string]string
		// check inspects the result.
		check func(g *gomega.WithT, o OptIn)
		// wantErrs is the number of malformed values expected.
		wantErrs int
	}{
		"nothing set": {
			check: func(g *gomega.WithT, o OptIn) { g.Expect(o.Enabled()).To(gomega.BeFalse()) },
		},
		"reloader auto on metadata": {
			workload: map[string]string{"reloader.stakater.com/auto": "true"},
			check: func(g *gomega.WithT, o OptIn) {
				g.Expect(o.Auto).To(gomega.BeTrue())
				g.Expect(o.Dialect).To(gomega.Equal(DialectReloader))
			},
		},
		"reroll auto on the pod template": {
			template: map[string]string{Auto: "true"},
			check: func(g *gomega.WithT, o OptIn) {
				g.Expect(o.Auto).To(gomega.BeTrue())
				g.Expect(o.Dialect).To(gomega.Equal(DialectReroll))
			},
		},
		"metadata wins over the pod template": {
			workload: map[string]string{Auto: "false"},
			template: map[string]string{Auto: "true"},
			check:    func(g *gomega.WithT, o OptIn) { g.Expect(o.Enabled()).To(gomega.BeFalse()) },
		},
		"typed auto": {
			workload: map[string]string{"secret.reloader.stakater.com/auto": "true"},
			check: func(g *gomega.WithT, o OptIn) {
				g.Expect(o.AutoSecrets).To(gomega.BeTrue())
				g.Expect(o.AutoConfigMaps || o.Auto).To(gomega.BeFalse())
			},
		},
		"auto-reload-all opts in everything but an explicit false": {
			config:   &Config{Names: DefaultNames(), AutoReloadAll: true},
			workload: map[string]string{"unrelated": "x"},
			check:    func(g *gomega.WithT, o OptIn) { g.Expect(o.Auto).To(gomega.BeTrue()) },
		},
		"auto-reload-all respects auto false": {
			config:   &Config{Names: DefaultNames(), AutoReloadAll: true},
			workload: map[string]string{"reloader.stakater.com/auto": "false"},
			check:    func(g *gomega.WithT, o OptIn) { g.Expect(o.Auto).To(gomega.BeFalse()) },
		},
		"overridden annotation names": {
			config:   &Config{Names: Names{Auto: "example.com/roll"}},
			workload: map[string]string{"example.com/roll": "true", "reloader.stakater.com/auto": "true"},
			check:    func(g *gomega.WithT, o OptIn) { g.Expect(o.Auto).To(gomega.BeTrue()) },
		},
		"lists from both dialects": {
			workload: map[string]string{
				"configmap.reloader.stakater.com/reload": "b, app-.*,,",
				ConfigMaps:                               "a",
				"secret.reloader.stakater.com/reload":    "db",
				Secrets:                                  "tls , db",
			},
			check: func(g *gomega.WithT, o OptIn) {
				g.Expect(o.ConfigMaps.Names()).To(gomega.Equal([]string{"a", "b"}))
				g.Expect(o.ConfigMaps.Matches("app-frontend")).To(gomega.BeTrue())
				g.Expect(o.ConfigMaps.HasPatterns()).To(gomega.BeTrue())
				g.Expect(o.Secrets.Names()).To(gomega.Equal([]string{"db", "tls"}))
				g.Expect(o.Secrets.HasPatterns()).To(gomega.BeFalse())
				g.Expect(o.Dialect).To(gomega.Equal(DialectReroll))
			},
		},
		"reloader entries are anchored at both ends": {
			workload: map[string]string{"configmap.reloader.stakater.com/reload": "app"},
			check: func(g *gomega.WithT, o OptIn) {
				g.Expect(o.ConfigMaps.Matches("app")).To(gomega.BeTrue())
				g.Expect(o.ConfigMaps.Matches("my-app")).To(gomega.BeFalse())
				g.Expect(o.ConfigMaps.Matches("app-2")).To(gomega.BeFalse())
			},
		},
		"a dot in a reloader entry is a wildcard, as in Reloader": {
			workload: map[string]string{"configmap.reloader.stakater.com/reload": "app.config"},
			check: func(g *gomega.WithT, o OptIn) {
				g.Expect(o.ConfigMaps.Matches("app.config")).To(gomega.BeTrue())
				g.Expect(o.ConfigMaps.Matches("app-config")).To(gomega.BeTrue())
				g.Expect(o.ConfigMaps.Names()).To(gomega.Equal([]string{"app.config"}))
			},
		},
		"an invalid regular expression is reported, the other entries kept": {
			workload: map[string]string{"configmap.reloader.stakater.com/reload": "good,bad[,also-good"},
			check: func(g *gomega.WithT, o OptIn) {
				g.Expect(o.ConfigMaps.Names()).To(gomega.Equal([]string{"also-good", "good"}))
			},
			wantErrs: 1,
		},
		"a malformed boolean is reported and counts as unset": {
			workload: map[string]string{Auto: "yes please", ConfigMaps: "cfg"},
			check: func(g *gomega.WithT, o OptIn) {
				g.Expect(o.Auto).To(gomega.BeFalse())
				g.Expect(o.ConfigMaps.Names()).To(gomega.Equal([]string{"cfg"}))
			},
			wantErrs: 1,
		},
		"a malformed reroll name is dropped": {
			workload: map[string]string{Secrets: "good,Not_Valid"},
			check:    func(g *gomega.WithT, o OptIn) { g.Expect(o.Secrets.Names()).To(gomega.Equal([]string{"good"})) },
			wantErrs: 1,
		},
		"exclude lists and pause period come from metadata or template": {
			workload: map[string]string{"configmaps.exclude.reloader.stakater.com/reload": "skip-.*", "deployment.reloader.stakater.com/pause-period": "5m"},
			template: map[string]string{"reloader.stakater.com/auto": "true", ExcludeSecrets: "keep-out"},
			check: func(g *gomega.WithT, o OptIn) {
				g.Expect(o.Auto).To(gomega.BeTrue())
				g.Expect(o.ExcludeConfigMaps.Matches("skip-me")).To(gomega.BeTrue())
				g.Expect(o.ExcludeSecrets.Matches("keep-out")).To(gomega.BeTrue())
				g.Expect(o.PausePeriod).To(gomega.Equal(5 * time.Minute))
			},
		},
		"a malformed pause period is reported": {
			workload: map[string]string{"reloader.stakater.com/auto": "true", PausePeriod: "soon"},
			check:    func(g *gomega.WithT, o OptIn) { g.Expect(o.PausePeriod).To(gomega.BeZero()) },
			wantErrs: 1,
		},
		// The security review paused a Deployment for 292 years.
		"a pause period past the limit is refused": {
			workload: map[string]string{"reloader.stakater.com/auto": "true", "deployment.reloader.stakater.com/pause-period": "2562047h"},
			check:    func(g *gomega.WithT, o OptIn) { g.Expect(o.PausePeriod).To(gomega.BeZero()) },
			wantErrs: 1,
		},
		"a pause period at the limit is kept": {
			workload: map[string]string{"reloader.stakater.com/auto": "true", PausePeriod: "24h"},
			check:    func(g *gomega.WithT, o OptIn) { g.Expect(o.PausePeriod).To(gomega.Equal(24 * time.Hour)) },
		},
		"a long pause period is refused unparsed": {
			workload: map[string]string{"reloader.stakater.com/auto": "true", PausePeriod: strings.Repeat("1", 100) + "ns"},
			check:    func(g *gomega.WithT, o OptIn) { g.Expect(o.PausePeriod).To(gomega.BeZero()) },
			wantErrs: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			c := DefaultConfig()
			if tc.config != nil {
				c = *tc.config
			}
			got, errs := c.Parse(tc.workload, tc.template)
			tc.check(g, got)
			g.Expect(errs).To(gomega.HaveLen(tc.wantErrs))
		})
	}
}

func TestConfig_Selects(t *testing.T) {
	match := map[string]string{"reloader.stakater.com/match": "true"}
	ignore := map[string]string{"reloader.stakater.com/ignore": "true"}
	cases := map[string]struct {
		// config is the configuration; zero means DefaultConfig.
		config *Config
		// workload holds the workload's annotations.
		workload map[string]string
		// kind and name identify the object; object holds its annotations.
		kind   reference.Kind
		name   string
		object map[string]string
		// referenced says whether the pod template references the object.
		referenced bool
		// want is the decision.
		want bool
	}{
		"auto selects a referenced object": {
			workload: map[string]string{"reloader.stakater.com/auto": "true"}, kind: reference.ConfigMap, name: "a", referenced: true, want: true,
		},
		"auto does not select an unreferenced object": {
			workload: map[string]string{"reloader.stakater.com/auto": "true"}, kind: reference.ConfigMap, name: "a", want: false,
		},
		"typed auto selects only its kind": {
			workload: map[string]string{"configmap.reloader.stakater.com/auto": "true"}, kind: reference.Secret, name: "s", referenced: true, want: false,
		},
		"ignored resource type beats an explicit list": {
			config:   &Config{Names: DefaultNames(), IgnoreSecrets: true},
			workload: map[string]string{"secret.reloader.stakater.com/reload": "s"}, kind: reference.Secret, name: "s", referenced: true, want: false,
		},
		"ignore annotation beats an explicit list": {
			workload: map[string]string{"configmap.reloader.stakater.com/reload": "a"}, kind: reference.ConfigMap, name: "a", object: ignore, want: false,
		},
		"exclude beats auto": {
			workload: map[string]string{"reloader.stakater.com/auto": "true", "configmaps.exclude.reloader.stakater.com/reload": "a"}, kind: reference.ConfigMap, name: "a", referenced: true, want: false,
		},
		"exclude beats an explicit list": {
			workload: map[string]string{"reroll.dev/configmaps": "a", "reroll.dev/exclude-configmaps": "a"}, kind: reference.ConfigMap, name: "a", want: false,
		},
		"explicit list selects without a reference": {
			workload: map[string]string{"configmap.reloader.stakater.com/reload": "a-.*"}, kind: reference.ConfigMap, name: "a-1", want: true,
		},
		"search with match": {
			workload: map[string]string{"reloader.stakater.com/search": "true"}, kind: reference.Secret, name: "s", object: match, referenced: true, want: true,
		},
		"search without match": {
			workload: map[string]string{"reloader.stakater.com/search": "true"}, kind: reference.Secret, name: "s", referenced: true, want: false,
		},
		"match without search": {
			workload: map[string]string{"configmap.reloader.stakater.com/reload": "other"}, kind: reference.Secret, name: "s", object: match, referenced: true, want: false,
		},
		"reroll match works with reloader search": {
			workload: map[string]string{"reloader.stakater.com/search": "true"}, kind: reference.Secret, name: "s", object: map[string]string{Match: "true"}, referenced: true, want: true,
		},
		"auto-reload-all": {
			config: &Config{Names: DefaultNames(), AutoReloadAll: true}, kind: reference.ConfigMap, name: "a", referenced: true, want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			c := DefaultConfig()
			if tc.config != nil {
				c = *tc.config
			}
			o, errs := c.Parse(tc.workload, nil)
			g.Expect(errs).To(gomega.BeEmpty())
			g.Expect(c.Selects(o, tc.kind, tc.name, tc.object, tc.referenced)).To(gomega.Equal(tc.want))
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("true", "a,b", "c", "x.*")
	f.Add("nope", ",,", "Bad_Name", "[")
	f.Fuzz(func(t *testing.T, auto, cms, secrets, regexes string) {
		c := DefaultConfig()
		got, _ := c.Parse(map[string]string{Auto: auto, ConfigMaps: cms, Secrets: secrets, "configmap.reloader.stakater.com/reload": regexes}, nil)
		for _, n := range append(got.ConfigMaps.Names(), got.Secrets.Names()...) {
			if n == "" {
				t.Fatalf("empty name in %#v", got)
			}
		}
		for _, p := range got.ConfigMaps {
			if !got.ConfigMaps.Matches(p.Text) && p.re == nil {
				t.Fatalf("entry %q does not match itself", p.Text)
			}
		}
	})
}

func TestParse_SecretProviderClasses(t *testing.T) {
	cfg := Config{Names: DefaultNames(), SecretProviderClasses: true}
	cases := map[string]struct {
		// annotations are the workload's.
		annotations map[string]string
		// selects is whether SecretProviderClass "vault-db", mounted by the
		// pod template, decides the workload's rollouts.
		selects bool
		// dialect is the dialect parsed.
		dialect Dialect
	}{
		"Reloader's typed auto":    {annotations: map[string]string{"secretproviderclass.reloader.stakater.com/auto": "true"}, selects: true, dialect: DialectReloader},
		"Reloader's generic auto":  {annotations: map[string]string{"reloader.stakater.com/auto": "true"}, selects: true, dialect: DialectReloader},
		"Reloader's list":          {annotations: map[string]string{"secretproviderclass.reloader.stakater.com/reload": "vault-.*"}, selects: true, dialect: DialectReloader},
		"Reroll's typed auto":      {annotations: map[string]string{AutoSecretProviderClasses: "true"}, selects: true, dialect: DialectReroll},
		"Reroll's list":            {annotations: map[string]string{SecretProviderClasses: "vault-db"}, selects: true, dialect: DialectReroll},
		"typed auto of ConfigMaps": {annotations: map[string]string{"configmap.reloader.stakater.com/auto": "true"}, selects: false, dialect: DialectReloader},
		"Reloader's exclude list": {annotations: map[string]string{"reloader.stakater.com/auto": "true", ReloaderExcludeSecretProviderClasses: "vault-db"},
			selects: false, dialect: DialectReloader},
		"Reroll's exclude list": {annotations: map[string]string{Auto: "true", ExcludeSecretProviderClasses: "vault-db"}, selects: false, dialect: DialectReroll},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, errs := cfg.Parse(tc.annotations, nil)
			if len(errs) > 0 {
				t.Fatalf("Parse errors: %v", errs)
			}
			if o.Dialect != tc.dialect {
				t.Errorf("dialect = %s, want %s", o.Dialect, tc.dialect)
			}
			if got := cfg.Selects(o, reference.SecretProviderClass, "vault-db", nil, true); got != tc.selects {
				t.Errorf("Selects = %v, want %v", got, tc.selects)
			}
			off := cfg
			off.SecretProviderClasses = false
			if off.Selects(o, reference.SecretProviderClass, "vault-db", nil, true) {
				t.Errorf("selected without --enable-csi-integration")
			}
		})
	}
}

func TestParse_BoundsLists(t *testing.T) {
	many := strings.Repeat("a,", MaxListEntries) + "last"
	cases := map[string]struct {
		// annotations are the workload's.
		annotations map[string]string
		// wantEntries is how many entries of reroll.dev/configmaps are kept.
		wantEntries int
		// wantErr is a substring of the one error reported.
		wantErr string
	}{
		"a value over the length limit is ignored whole": {
			annotations: map[string]string{ConfigMaps: strings.Repeat("a", MaxListLength+1)},
			wantEntries: 0,
			wantErr:     "longer than the limit",
		},
		"entries past the count limit are dropped": {
			annotations: map[string]string{ConfigMaps: many},
			wantEntries: MaxListEntries,
			wantErr:     "more than 64 entries",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			o, errs := DefaultConfig().Parse(tc.annotations, nil)
			g.Expect(o.ConfigMaps).To(gomega.HaveLen(tc.wantEntries))
			g.Expect(errs).To(gomega.HaveLen(1))
			g.Expect(errs[0].Error()).To(gomega.ContainSubstring(tc.wantErr))
		})
	}
}

func TestCompile_OncePerDistinctPattern(t *testing.T) {
	g := gomega.NewWithT(t)
	a, _, err := compile("db-.*")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	b, _, _ := compile("db-.*")
	g.Expect(b).To(gomega.BeIdenticalTo(a))
	_, _, err = compile("[")
	g.Expect(err).To(gomega.HaveOccurred())
	_, _, again := compile("[")
	g.Expect(again).To(gomega.BeIdenticalTo(err))
}
