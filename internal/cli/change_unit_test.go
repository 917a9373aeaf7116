package cli

import (
	"reflect"
	"testing"
)

func TestParseSummary(t *testing.T) {
	cases := map[string]struct {
		note string         // an Event's message
		want []changeObject // the changes it names
	}{
		"rolled": {note: "Rolled after ConfigMap/cfg changed keys a,b; Secret/tls was deleted",
			want: []changeObject{{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a", "b"}}, {Kind: "Secret", Name: "tls", Deleted: true}}},
		"rolled with an action": {note: "Rolled after Secret/db changed keys password: created Job web-1a2b",
			want: []changeObject{{Kind: "Secret", Name: "db", Keys: []string{"password"}}}},
		"not rolled": {note: "ConfigMap/cfg changed keys a; the CronJob's next Job reads the new data",
			want: []changeObject{{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a"}}}},
		"notified": {note: "Notified https://hooks.example/x after ConfigMap/shared/cfg was created",
			want: []changeObject{{Kind: "ConfigMap", Namespace: "shared", Name: "cfg", Created: true}}},
		"pod-reloader": {note: "Rolled after Secret/s was written",
			want: []changeObject{{Kind: "Secret", Name: "s", Written: true}}},
		"no change": {note: "Paused for 5m0s so that further changes join this rollout", want: nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := parseSummary(c.note); !reflect.DeepEqual(got, c.want) {
				t.Errorf("parseSummary(%q) = %+v, want %+v", c.note, got, c.want)
			}
			if c.want != nil && parseSummary(summary(c.want))[0].String() != c.want[0].String() {
				t.Errorf("summary and parseSummary disagree on %+v", c.want)
			}
		})
	}
}
