package baseline

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/reroll/reroll/internal/digest"
)

func key(t *testing.T, b byte) digest.Key {
	t.Helper()
	k, err := digest.NewKey(bytes.Repeat([]byte{b}, digest.MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestOpen(t *testing.T) {
	k, other := key(t, 1), key(t, 2)
	e := Entry{Kind: "Deployment", Name: "web", UID: "u1", Record: `{"ConfigMap/cfg":{"a":"0123456789abcdef"}}`}
	sealed := Seal(k, "reroll-baselines", "team-a", e)
	cases := map[string]struct {
		// sealer opens; namespace and dataKey are where the value is read;
		// value is the data value.
		sealer         Sealer
		namespace, key string
		value          string
		want           bool
	}{
		"an entry Reroll sealed opens": {
			sealer: k, namespace: "team-a", key: "Deployment.web", value: sealed, want: true},
		"an entry sealed under another installation key does not": {
			sealer: other, namespace: "team-a", key: "Deployment.web", value: sealed},
		"an entry moved to another namespace does not": {
			sealer: k, namespace: "team-b", key: "Deployment.web", value: sealed},
		"an entry moved to another workload does not": {
			sealer: k, namespace: "team-a", key: "Deployment.api", value: sealed},
		"an entry moved to another kind does not": {
			sealer: k, namespace: "team-a", key: "StatefulSet.web", value: sealed},
		"an entry whose record was edited does not": {
			sealer: k, namespace: "team-a", key: "Deployment.web", value: strings.Replace(sealed, "0123", "ffff", 1)},
		"an entry given another uid does not": {
			sealer: k, namespace: "team-a", key: "Deployment.web", value: "u2" + strings.TrimPrefix(sealed, "u1")},
		"a value without a signature does not": {
			sealer: k, namespace: "team-a", key: "Deployment.web", value: "u1 " + e.Record},
		"an empty value does not": {
			sealer: k, namespace: "team-a", key: "Deployment.web", value: ""},
		"a data key without a kind does not": {
			sealer: k, namespace: "team-a", key: "web", value: sealed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Open(tc.sealer, "reroll-baselines", tc.namespace, tc.key, tc.value)
			if ok != tc.want {
				t.Fatalf("Open ok = %t, want %t", ok, tc.want)
			}
			if ok && got != e {
				t.Fatalf("Open = %+v, want %+v", got, e)
			}
		})
	}
}

func TestPeek(t *testing.T) {
	e := Entry{Kind: "Deployment", Name: "web", UID: "u1", Record: `{"ConfigMap/cfg":{"a":"0123456789abcdef"}}`}
	sealed := Seal(key(t, 1), "reroll-baselines", "team-a", e)
	cases := map[string]struct {
		// key and value are the data key and value read.
		key, value string
		// want is the entry Peek returns; ok whether it is well formed.
		want Entry
		ok   bool
	}{
		"a sealed entry reads without the key": {key: "Deployment.web", value: sealed, want: e, ok: true},
		"a forged signature reads too (a claim, not Reroll's state)": {
			key: "Deployment.web", value: "u1 forged " + e.Record, want: e, ok: true},
		"a value without a signature is malformed": {key: "Deployment.web", value: "u1 " + e.Record},
		"an empty value is malformed":              {key: "Deployment.web", value: ""},
		"a data key without a kind is malformed":   {key: "web", value: sealed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := Peek(tc.key, tc.value)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("Peek = %+v, %t; want %+v, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestConfigMapName checks the name against one computed outside Go:
// printf %s team-a | sha256sum | cut -c1-20 gives 96c2886c51d1dfb4901d.
func TestConfigMapName(t *testing.T) {
	if got, want := ConfigMapName("reroll-baselines", "team-a"), "reroll-baselines-96c2886c51d1dfb4901d"; got != want {
		t.Fatalf("ConfigMapName = %q, want %q", got, want)
	}
}

func TestMerge(t *testing.T) {
	k := key(t, 1)
	const store, ns = "reroll-baselines", "team-a"
	web := Entry{Kind: "Deployment", Name: "web", UID: "u1", Record: `{"ConfigMap/cfg":{"a":"1"}}`}
	webNew := Entry{Kind: "Deployment", Name: "web", UID: "u1", Record: `{"ConfigMap/cfg":{"a":"2"}}`}
	api := Entry{Kind: "Deployment", Name: "api", UID: "u2", Record: `{"Secret/db":{"p":"1"}}`}
	seal := func(e Entry) string { return Seal(k, store, ns, e) }
	cases := map[string]struct {
		// data is the ConfigMap's data before; puts are merged in order;
		// limit bounds the bytes (0: MaxBytes).
		data  map[string]string
		puts  []Entry
		limit int
		// want is the data after, refused the puts left out.
		want    map[string]string
		refused []Entry
	}{
		"a put into an empty ConfigMap adds its entry": {
			puts: []Entry{web}, want: map[string]string{"Deployment.web": seal(web)}},
		"a put replaces the workload's entry and keeps the others": {
			data: map[string]string{"Deployment.web": seal(web), "Deployment.api": seal(api)}, puts: []Entry{webNew},
			want: map[string]string{"Deployment.web": seal(webNew), "Deployment.api": seal(api)}},
		"a put without a record removes the workload's entry": {
			data: map[string]string{"Deployment.web": seal(web), "Deployment.api": seal(api)}, puts: []Entry{{Kind: "Deployment", Name: "web"}},
			want: map[string]string{"Deployment.api": seal(api)}},
		"an entry that does not verify is dropped": {
			data: map[string]string{"Deployment.web": seal(web), "Deployment.forged": "u9 0000 {}"}, puts: []Entry{api},
			want: map[string]string{"Deployment.web": seal(web), "Deployment.api": seal(api)}},
		"the later of two puts of one workload wins": {
			puts: []Entry{web, webNew}, want: map[string]string{"Deployment.web": seal(webNew)}},
		"a put past the bound is refused and the rest kept": {
			data: map[string]string{"Deployment.web": seal(web)}, puts: []Entry{api},
			limit: len("Deployment.web") + len(seal(web)) + 1,
			want:  map[string]string{"Deployment.web": seal(web)}, refused: []Entry{api}},
		"a put that frees room lets a later one in": {
			data: map[string]string{"Deployment.web": seal(web)}, puts: []Entry{{Kind: "Deployment", Name: "web"}, api},
			limit: len("Deployment.api") + len(seal(api)),
			want:  map[string]string{"Deployment.api": seal(api)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, refused := Merge(k, store, ns, tc.data, tc.puts, tc.limit)
			if len(got) != len(tc.want) {
				t.Fatalf("Merge = %v, want %v", got, tc.want)
			}
			for key, v := range tc.want {
				if got[key] != v {
					t.Fatalf("Merge[%s] = %q, want %q", key, got[key], v)
				}
			}
			if len(refused) != len(tc.refused) || (len(refused) > 0 && refused[0] != tc.refused[0]) {
				t.Fatalf("refused = %v, want %v", refused, tc.refused)
			}
		})
	}
}

func TestMerge_StaysWithinMaxBytes(t *testing.T) {
	k := key(t, 1)
	record := `{"ConfigMap/cfg":{` + strings.Repeat(`"key":"0123456789abcdef",`, 40) + `"z":"0"}}`
	var puts []Entry
	for i := range 2000 {
		puts = append(puts, Entry{Kind: "Deployment", Name: "w" + strings.Repeat("x", i%50) + string(rune('a'+i%26)) + strconv.Itoa(i), UID: "uid-" + strconv.Itoa(i), Record: record})
	}
	got, refused := Merge(k, "s", "ns", nil, puts, 0)
	size := 0
	for key, v := range got {
		size += len(key) + len(v)
	}
	if size > MaxBytes {
		t.Fatalf("%d bytes kept, more than MaxBytes %d", size, MaxBytes)
	}
	if len(refused) == 0 || len(got)+len(refused) != len(puts) {
		t.Fatalf("%d kept and %d refused of %d puts; want some refused, none lost", len(got), len(refused), len(puts))
	}
}
