package halts

import (
	"testing"
	"time"

	"github.com/reroll/reroll/internal/delivery"
)

// An older Reroll's halt, by its set ID of the time, holds today's set of
// the same content, and only of the same content.
func TestTranslate(t *testing.T) {
	k := key(t, 1)
	halted := time.Date(2026, 11, 26, 19, 0, 0, 0, time.UTC)
	bad := Content{Keys: map[string]string{"level": "d1"}, SHA1: "s1"}
	fixed := Content{Keys: map[string]string{"level": "d2"}, SHA1: "s2"}
	legacyID := delivery.LegacySetID("ConfigMap", "cfg", bad.Keys, false)
	scope := func(ns string) string {
		if ns == "placed" {
			return ""
		}
		return ns
	}
	halt := func(objects ...string) *delivery.Halt {
		return &delivery.Halt{Halted: halted, Failed: []string{"Deployment/shop/canary"}, Objects: objects}
	}
	cases := map[string]struct {
		// legacy are the older Reroll's halts; now the current contents,
		// by "Kind/namespace/name" (missing: deleted).
		legacy map[string]*delivery.Halt
		now    map[string]Content
		// want are the IDs of the halts to record.
		want []string
	}{
		"the content still the halted one: its own ID and today's": {
			legacy: map[string]*delivery.Halt{legacyID: halt("ConfigMap/shop/cfg")},
			now:    map[string]Content{"ConfigMap/shop/cfg": bad},
			want:   []string{legacyID, delivery.SetID(k, "shop", "ConfigMap", "cfg", "s1", false)},
		},
		"a placed namespace: today's set is the one shared across namespaces": {
			legacy: map[string]*delivery.Halt{legacyID: halt("ConfigMap/placed/cfg")},
			now:    map[string]Content{"ConfigMap/placed/cfg": bad},
			want:   []string{legacyID, delivery.SetID(k, "", "ConfigMap", "cfg", "s1", false)},
		},
		"a newer content since: the halt holds only its own ID": {
			legacy: map[string]*delivery.Halt{legacyID: halt("ConfigMap/shop/cfg")},
			now:    map[string]Content{"ConfigMap/shop/cfg": fixed},
			want:   []string{legacyID},
		},
		"a deleted object's halt holds today's set of the deletion": {
			legacy: map[string]*delivery.Halt{delivery.LegacySetID("Secret", "creds", nil, true): halt("Secret/shop/creds")},
			want:   []string{delivery.LegacySetID("Secret", "creds", nil, true), delivery.SetID(k, "shop", "Secret", "creds", "", true)},
		},
		"a resumed halt holds nothing": {
			legacy: map[string]*delivery.Halt{legacyID: {Resumed: halted, Objects: []string{"ConfigMap/shop/cfg"}}},
			now:    map[string]Content{"ConfigMap/shop/cfg": bad},
		},
		"names that are no object are skipped": {
			legacy: map[string]*delivery.Halt{legacyID: halt("+3 more", "Deployment/shop/web")},
			want:   []string{legacyID},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Translate(k, c.legacy, scope, func(kind, ns, name string) (Content, bool, error) {
				v, ok := c.now[kind+"/"+ns+"/"+name]
				return v, ok, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("Translate = %v, want the IDs %v", got, c.want)
			}
			for _, id := range c.want {
				if h, ok := got[id]; !ok || !h.Halted.Equal(halted) || h.Failed[0] != "Deployment/shop/canary" {
					t.Errorf("Translate[%s] = %+v (%v), want the halt", id, h, ok)
				}
			}
		})
	}
}

// LegacySetID is the older Reroll's ID: expected values computed outside
// Go, with
//
//	printf 'ConfigMap\0cfg\0a=0011\0level=ff00\0' | sha256sum | cut -c1-16
//	printf 'Secret\0creds\0deleted' | sha256sum | cut -c1-16
func TestLegacySetID(t *testing.T) {
	if got := delivery.LegacySetID("ConfigMap", "cfg", map[string]string{"level": "ff00", "a": "0011"}, false); got != "215b707a71d39a30" {
		t.Errorf("LegacySetID(ConfigMap cfg) = %s, want 215b707a71d39a30", got)
	}
	if got := delivery.LegacySetID("Secret", "creds", map[string]string{"x": "y"}, true); got != "e78b22707e03af25" {
		t.Errorf("LegacySetID(deleted Secret creds) = %s, want e78b22707e03af25", got)
	}
}
