package annotation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The opt-in annotations Reroll understands.
const (
	// ReloaderAuto is Reloader's "true" to roll on every referenced ConfigMap and Secret.
	ReloaderAuto = "reloader.stakater.com/auto"
	// ReloaderConfigMaps is Reloader's comma-separated list of ConfigMaps to roll on.
	ReloaderConfigMaps = "configmap.reloader.stakater.com/reload"
	// ReloaderSecrets is Reloader's comma-separated list of Secrets to roll on.
	ReloaderSecrets = "secret.reloader.stakater.com/reload"
	// Auto is Reroll's equivalent of ReloaderAuto.
	Auto = "reroll.dev/auto"
	// ConfigMaps is Reroll's equivalent of ReloaderConfigMaps.
	ConfigMaps = "reroll.dev/configmaps"
	// Secrets is Reroll's equivalent of ReloaderSecrets.
	Secrets = "reroll.dev/secrets"
)

var optInKeys = []string{ReloaderAuto, ReloaderConfigMaps, ReloaderSecrets, Auto, ConfigMaps, Secrets}

// OptIn is what a workload asked of Reroll.
type OptIn struct {
	// Auto is true when every ConfigMap and Secret the pod template
	// references should roll the workload.
	Auto bool
	// ConfigMaps and Secrets are the names listed explicitly, sorted and
	// without duplicates. A listed object rolls the workload even when the pod
	// template does not reference it.
	ConfigMaps []string
	Secrets    []string
}

// Enabled reports whether the workload opted in at all.
func (o OptIn) Enabled() bool {
	return o.Auto || len(o.ConfigMaps) > 0 || len(o.Secrets) > 0
}

// Parse reads the opt-in annotations from the workload's metadata
// annotations or, when none of them is set there, from its pod template's.
// Malformed values are reported in the returned errors, one per annotation
// or list entry, each naming the annotation; the rest of the annotations
// still apply (a bad boolean counts as false, a bad list entry is dropped),
// so one typo never disables the others.
func Parse(workload, template map[string]string) (OptIn, []error) {
	source := workload
	if !hasAny(workload) {
		source = template
	}
	var out OptIn
	var errs []error
	for _, key := range []string{ReloaderAuto, Auto} {
		v, ok := source[key]
		if !ok {
			continue
		}
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: value %q is not a boolean (want \"true\" or \"false\")", key, v))
			continue
		}
		out.Auto = out.Auto || b
	}
	var e []error
	out.ConfigMaps, e = names(source, ReloaderConfigMaps, ConfigMaps)
	errs = append(errs, e...)
	out.Secrets, e = names(source, ReloaderSecrets, Secrets)
	errs = append(errs, e...)
	return out, errs
}

func hasAny(annotations map[string]string) bool {
	for _, k := range optInKeys {
		if _, ok := annotations[k]; ok {
			return true
		}
	}
	return false
}

// names returns the union of the comma-separated object names listed under
// keys, sorted, with an error for each entry that is not a valid object name.
func names(annotations map[string]string, keys ...string) ([]string, []error) {
	var out []string
	var errs []error
	for _, key := range keys {
		for _, entry := range strings.Split(annotations[key], ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			if msgs := validation.IsDNS1123Subdomain(entry); len(msgs) > 0 {
				errs = append(errs, fmt.Errorf("annotation %s: entry %q is not a valid object name: %s", key, entry, strings.Join(msgs, "; ")))
				continue
			}
			out = append(out, entry)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), errs
}
