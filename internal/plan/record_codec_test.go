package plan

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestRecordCodec_AsEncodingJSON checks that Record.String encodes and
// ParseRecord decodes every record exactly as encoding/json does, for the
// records Reroll writes and for values its fast path leaves to
// encoding/json.
func TestRecordCodec_AsEncodingJSON(t *testing.T) {
	records := map[string]Record{
		"nil":                         nil,
		"empty":                       {},
		"one ConfigMap of three keys": {"ConfigMap/shared": {"CONFIG": "6b86b273ff34fce1", "FEATURE_FLAGS": "d4735e3a265e16ee", "GREETING": "4e07408562bedb8b"}},
		"objects sorted, one missing": {"Secret/s": {"k": ""}, "ConfigMap/b": nil, "ConfigMap/a": {}},
		"one digest per object":       {"ConfigMap/a": {objectDigestKey: "0011223344556677"}},
		"names that need escaping":    {"ConfigMap/<a&b>": {"quote\"back\\slash": "tab\tnew\nline", "é\u2028": "\xff"}},
	}
	for name, r := range records {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.String(); got != string(want) {
				t.Errorf("String() = %s, want %s", got, want)
			}
		})
	}
	values := map[string]string{
		"Reroll's form":                 `{"ConfigMap/cfg":{"a":"0123456789abcdef","b":""},"Secret/gone":null}`,
		"empty":                         `{}`,
		"an empty key map":              `{"ConfigMap/cfg":{}}`,
		"null":                          `null`,
		"white space":                   ` { "ConfigMap/cfg" : { "a" : "1" } } `,
		"escapes":                       `{"ConfigMap/\u0063fg":{"a\"":"\n"}}`,
		"an object named twice":         `{"ConfigMap/cfg":{"a":"1"},"ConfigMap/cfg":{"b":"2"}}`,
		"a key named twice":             `{"ConfigMap/cfg":{"a":"1","a":"2"}}`,
		"a number":                      `{"ConfigMap/cfg":{"a":1}}`,
		"cut short":                     `{"ConfigMap/cfg":{"a":"1"}`,
		"trailing comma":                `{"ConfigMap/cfg":{"a":"1"},}`,
		"trailing bytes":                `{"ConfigMap/cfg":{"a":"1"}}x`,
		"nullish":                       `{"ConfigMap/cfg":nullx}`,
		"an array":                      `["ConfigMap/cfg"]`,
		"a string with a raw tab":       "{\"ConfigMap/cfg\":{\"a\":\"\t\"}}",
		"a string with a raw non-ASCII": `{"ConfigMap/cfg":{"a":"é"}}`,
	}
	for name, v := range values {
		t.Run(name, func(t *testing.T) {
			var want Record
			wantErr := json.Unmarshal([]byte(v), &want)
			got, err := parseRecord(v)
			if (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("error = %v, want %v", err, wantErr)
			}
			if err == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("parseRecord = %#v, want %#v", got, want)
			}
		})
	}
}

// FuzzRecordCodec checks Record.String and ParseRecord against
// encoding/json on any value: the same record or the same error, and the
// same encoding.
func FuzzRecordCodec(f *testing.F) {
	f.Add(`{"ConfigMap/cfg":{"a":"0123456789abcdef"},"Secret/gone":null}`)
	f.Add(`{"ConfigMap/cfg":{"a":"1","a":"2"}}`)
	f.Add(`{"ConfigMap/cfg":{"<":"\u2028"}}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, v string) {
		var want Record
		wantErr := json.Unmarshal([]byte(v), &want)
		got, err := parseRecord(v)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("error = %v, want %v", err, wantErr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parseRecord(%q) = %#v, want %#v", v, got, want)
		}
		b, _ := json.Marshal(want)
		if got.String() != string(b) {
			t.Fatalf("String() = %s, want %s", got.String(), b)
		}
	})
}
