package change

import "testing"

func TestObject_String(t *testing.T) {
	cases := map[string]struct {
		in   Object // the change to one object
		want string // its text form
	}{
		"keys":            {in: Object{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a", "b"}}, want: "ConfigMap/cfg changed keys a,b"},
		"created":         {in: Object{Kind: "Secret", Name: "tls", Created: true}, want: "Secret/tls was created"},
		"deleted":         {in: Object{Kind: "Secret", Name: "tls", Deleted: true}, want: "Secret/tls was deleted"},
		"written":         {in: Object{Kind: "ConfigMap", Name: "cfg", Written: true}, want: "ConfigMap/cfg was written"},
		"other namespace": {in: Object{Kind: "ConfigMap", Namespace: "shared", Name: "x", Keys: []string{"k"}}, want: "ConfigMap/shared/x changed keys k"},
		"no detail":       {in: Object{Kind: "ConfigMap", Name: "cfg"}, want: "ConfigMap/cfg changed"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := c.in.String(); got != c.want {
				t.Errorf("String() = %q, want %q", got, c.want)
			}
		})
	}
}

func TestChange_SummaryAndAlert(t *testing.T) {
	c := Change{Kind: "Deployment", Namespace: "shop", Name: "web", Hash: "h", ObservedAt: 7, Objects: []Object{
		{Kind: "ConfigMap", Name: "cfg", Keys: []string{"a"}, Hash: "s1"},
		{Kind: "Secret", Name: "tls", Deleted: true, Hash: "s2"},
	}}
	if got, want := c.Summary(), "ConfigMap/cfg changed keys a; Secret/tls was deleted"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	a := c.Alert()
	if a.Hash != "" || a.ObservedAt != 0 || a.Objects[0].Hash != "" || a.Objects[1].Hash != "" {
		t.Errorf("Alert() kept a hash or the time: %+v", a)
	}
	if c.Objects[0].Hash != "s1" {
		t.Errorf("Alert() changed its receiver")
	}
}
