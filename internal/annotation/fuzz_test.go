package annotation

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzParseWave feeds Wave's annotations to Parse: it must never panic, and
// every entry it keeps must be a valid name (and namespace) that a lookup
// can use.
func FuzzParseWave(f *testing.F) {
	f.Add("true", "a,other/b", "s")
	f.Add("True", " , /x,ns/,a/b/c", "UPPER,ns/s")
	f.Add("nope", "", "")
	f.Fuzz(func(t *testing.T, update, configMaps, secrets string) {
		o, _ := DefaultConfig().Parse(map[string]string{WaveUpdate: update, WaveExtraConfigMaps: configMaps, WaveExtraSecrets: secrets}, nil)
		if o.Dialect != DialectWave && (len(o.WaveExtraConfigMaps) > 0 || len(o.WaveExtraSecrets) > 0) {
			t.Fatalf("extra lists outside the Wave dialect: %#v", o)
		}
		for _, nn := range append(o.WaveExtraConfigMaps, o.WaveExtraSecrets...) {
			if len(validation.IsDNS1123Subdomain(nn.Name)) > 0 {
				t.Fatalf("kept invalid name %q", nn.Name)
			}
			if nn.Namespace != "" && len(validation.IsDNS1123Label(nn.Namespace)) > 0 {
				t.Fatalf("kept invalid namespace %q", nn.Namespace)
			}
		}
		if len(o.WaveExtraConfigMaps) > MaxListEntries || len(o.WaveExtraSecrets) > MaxListEntries {
			t.Fatalf("kept more than %d entries", MaxListEntries)
		}
	})
}

// FuzzParsePodReloader feeds SAP pod-reloader's annotations to Parse: it must
// never panic, keep only valid names, in order.
func FuzzParsePodReloader(f *testing.F) {
	f.Add("a,b,a", "s")
	f.Add(",, ,Bad_Name,x.y", "-")
	f.Fuzz(func(t *testing.T, configMaps, secrets string) {
		o, _ := DefaultConfig().Parse(map[string]string{PodReloaderConfigMaps: configMaps, PodReloaderSecrets: secrets}, nil)
		for _, n := range append(o.PodReloaderConfigMaps, o.PodReloaderSecrets...) {
			if len(validation.IsDNS1123Subdomain(n)) > 0 {
				t.Fatalf("kept invalid name %q", n)
			}
		}
		if len(o.PodReloaderConfigMaps) > MaxListEntries || len(o.PodReloaderSecrets) > MaxListEntries {
			t.Fatalf("kept more than %d entries", MaxListEntries)
		}
	})
}
