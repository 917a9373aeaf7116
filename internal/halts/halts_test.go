package halts

import "testing"

func TestSeen(t *testing.T) {
	cases := map[string]struct {
		rv      string // the watch's copy's resourceVersion, "" for none
		written string // the resourceVersion this process wrote
		want    bool
	}{
		"the watch has the write":                      {rv: "120", written: "120", want: true},
		"the watch has a later write":                  {rv: "131", written: "120", want: true},
		"the watch lags behind the write":              {rv: "97", written: "120", want: false},
		"the watch has not seen it created":            {rv: "", written: "120", want: false},
		"longer is later, not lexically before":        {rv: "1000", written: "999", want: true},
		"versions that do not compare: the watch wins": {rv: "abc", written: "120", want: true},
	}
	for name, c := range cases {
		if got := seen(c.rv, c.written); got != c.want {
			t.Errorf("%s: seen(%q, %q) = %v, want %v", name, c.rv, c.written, got, c.want)
		}
	}
}
