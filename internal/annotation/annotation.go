package annotation

// Names are the names of Reloader's annotations. Each has a Reloader flag of
// the same purpose (--auto-annotation, ...) that overrides it; DefaultNames
// holds Reloader's defaults.
type Names struct {
	// Auto ("reloader.stakater.com/auto"): "true" rolls on every referenced
	// ConfigMap and Secret.
	Auto string
	// ConfigMapAuto and SecretAuto ("configmap.reloader.stakater.com/auto",
	// "secret.reloader.stakater.com/auto"): Auto for one kind only.
	ConfigMapAuto string
	SecretAuto    string
	// ConfigMapReload and SecretReload ("configmap.reloader.stakater.com/reload",
	// "secret.reloader.stakater.com/reload"): comma-separated regular
	// expressions, each anchored at both ends, naming objects to roll on.
	ConfigMapReload string
	SecretReload    string
	// Search ("reloader.stakater.com/search"): "true" rolls on referenced
	// objects that carry Match.
	Search string
	// Match ("reloader.stakater.com/match"), on a ConfigMap or Secret: "true"
	// makes it count for workloads with Search.
	Match string
	// Ignore ("reloader.stakater.com/ignore"), on a ConfigMap or Secret:
	// "true" makes it never roll anything.
	Ignore string
	// PausePeriod ("deployment.reloader.stakater.com/pause-period"), on a
	// Deployment: a duration to keep it paused after each rollout Reroll
	// triggers, so that further changes in that period join one rollout.
	PausePeriod string
	// PausedAt ("deployment.reloader.stakater.com/paused-at"): written by
	// Reroll on a Deployment it paused, the RFC 3339 UTC time of the pause.
	PausedAt string
	// SecretProviderClassAuto ("secretproviderclass.reloader.stakater.com/auto")
	// and SecretProviderClassReload
	// ("secretproviderclass.reloader.stakater.com/reload"): Auto and the
	// explicit list for the SecretProviderClasses that Secrets Store CSI
	// Driver volumes mount (with --enable-csi-integration).
	SecretProviderClassAuto   string
	SecretProviderClassReload string
}

// DefaultNames returns Reloader's default annotation names.
func DefaultNames() Names {
	return Names{
		Auto:            "reloader.stakater.com/auto",
		ConfigMapAuto:   "configmap.reloader.stakater.com/auto",
		SecretAuto:      "secret.reloader.stakater.com/auto",
		ConfigMapReload: "configmap.reloader.stakater.com/reload",
		SecretReload:    "secret.reloader.stakater.com/reload",
		Search:          "reloader.stakater.com/search",
		Match:           "reloader.stakater.com/match",
		Ignore:          "reloader.stakater.com/ignore",
		PausePeriod:     "deployment.reloader.stakater.com/pause-period",
		PausedAt:        "deployment.reloader.stakater.com/paused-at",

		SecretProviderClassAuto:   "secretproviderclass.reloader.stakater.com/auto",
		SecretProviderClassReload: "secretproviderclass.reloader.stakater.com/reload",
	}
}

// Reloader's exclude lists, which no flag renames.
const (
	// ReloaderExcludeConfigMaps lists ConfigMaps (comma-separated regular
	// expressions, anchored) that never roll the workload, even with auto.
	ReloaderExcludeConfigMaps = "configmaps.exclude.reloader.stakater.com/reload"
	// ReloaderExcludeSecrets is the same for Secrets.
	ReloaderExcludeSecrets = "secrets.exclude.reloader.stakater.com/reload"
	// ReloaderExcludeSecretProviderClasses is the same for
	// SecretProviderClasses.
	ReloaderExcludeSecretProviderClasses = "secretproviderclasses.exclude.reloader.stakater.com/reload"
)

// Reroll's own annotations, the reroll.dev equivalents of Reloader's (see
// Names for each meaning). Lists in this dialect hold exact object names, not
// regular expressions.
const (
	Auto              = "reroll.dev/auto"
	AutoConfigMaps    = "reroll.dev/auto-configmaps"
	AutoSecrets       = "reroll.dev/auto-secrets"
	ConfigMaps        = "reroll.dev/configmaps"
	Secrets           = "reroll.dev/secrets"
	ExcludeConfigMaps = "reroll.dev/exclude-configmaps"
	ExcludeSecrets    = "reroll.dev/exclude-secrets"
	Search            = "reroll.dev/search"
	Match             = "reroll.dev/match"
	Ignore            = "reroll.dev/ignore"
	PausePeriod       = "reroll.dev/pause-period"

	// AutoSecretProviderClasses, SecretProviderClasses and
	// ExcludeSecretProviderClasses are typed auto, the list and the exclude
	// list for SecretProviderClasses (with --enable-csi-integration).
	AutoSecretProviderClasses    = "reroll.dev/auto-secretproviderclasses"
	SecretProviderClasses        = "reroll.dev/secretproviderclasses"
	ExcludeSecretProviderClasses = "reroll.dev/exclude-secretproviderclasses"
)
