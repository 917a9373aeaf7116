package annotation

import (
	"regexp"
	"strconv"
	"strings"
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

// FuzzCompile feeds one Reloader list entry to compile: it must never panic,
// never accept an entry past MaxPatternLength or whose program costs more
// than MaxPatternCost, and what it accepts must match as regexp does.
func FuzzCompile(f *testing.F) {
	for _, seed := range []string{"app-.*", "[a-z0-9]{1,63}", `\pL+`, "(", "(?:a{30}){30}", slowMatch, bigClasses, hugeRepeat[:600]} {
		f.Add(seed, "app-x")
	}
	f.Fuzz(func(t *testing.T, entry, name string) {
		c := compileBounded(entry)
		re, insts, err := c.re, c.insts, c.err
		if err != nil {
			return
		}
		if len(entry) > MaxPatternLength {
			t.Fatalf("accepted %d bytes", len(entry))
		}
		if insts <= 0 || insts > MaxPatternCost {
			t.Fatalf("accepted %q of %d instructions", entry, insts)
		}
		want := regexp.MustCompile("^(?:" + entry + ")$").MatchString(name)
		if got := re.MatchString(name); got != want {
			t.Fatalf("%q matches %q: %v, want %v", entry, name, got, want)
		}
	})
}

// FuzzParsePausePeriod feeds a pause period to Parse: what it keeps is
// positive and at most MaxPausePeriod.
func FuzzParsePausePeriod(f *testing.F) {
	for _, seed := range []string{"5m", "2562047h", "0s", "-1h", "24h", "24h0m1s", "soon"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		o, errs := DefaultConfig().Parse(map[string]string{Auto: "true", PausePeriod: v}, nil)
		if o.PausePeriod < 0 || o.PausePeriod > MaxPausePeriod {
			t.Fatalf("kept pause period %s of %q", o.PausePeriod, v)
		}
		if o.PausePeriod == 0 && len(errs) == 0 {
			t.Fatalf("dropped %q without an error", v)
		}
	})
}

// FuzzIsTrue: IsTrue is true exactly for the values strconv.ParseBool
// reads as true, spaces around them aside.
func FuzzIsTrue(f *testing.F) {
	for _, v := range []string{"", "true", "True", "TRUE", "t", "T", "1", " true\n", "tRue", "yes", "0", "false", "11", "\ttrue "} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if want := err == nil && b; IsTrue(v) != want {
			t.Fatalf("IsTrue(%q) = %t, want %t", v, IsTrue(v), want)
		}
	})
}
