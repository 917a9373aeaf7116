package validate

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rerollv1 "github.com/reroll/reroll/api/v1alpha1"
)

// now is the clock of every test: certificates are made around it.
var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// certPEM returns a self-signed certificate valid from notBefore to
// notAfter.
func certPEM(t *testing.T, notBefore, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "app.example"}, NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// keyPEMs returns an EC key in SEC 1, an RSA key in PKCS #1 and the EC
// key in PKCS #8.
func keyPEMs(t *testing.T) (sec1, pkcs1, pkcs8 string) {
	t.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	sec1 = string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	rk, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // a test key, size irrelevant
	if err != nil {
		t.Fatal(err)
	}
	pkcs1 = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)}))
	der8, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8 = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der8}))
	return sec1, pkcs1, pkcs8
}

// validator builds a Validator named "v" in namespace "ns" that checks the
// ConfigMap or Secret "app" with rules.
func validator(kind rerollv1.ObjectKind, rules ...rerollv1.ValidationRule) *rerollv1.Validator {
	return &rerollv1.Validator{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "v"},
		Spec:       rerollv1.ValidatorSpec{Kind: kind, Names: []string{"app"}, Rules: rules},
	}
}

// object builds the ConfigMap or Secret "app" in namespace "ns".
func object(kind rerollv1.ObjectKind, data map[string]string) Object {
	o := Object{Kind: kind, Namespace: "ns", Name: "app", Data: map[string][]byte{}}
	for k, v := range data {
		o.Data[k] = []byte(v)
	}
	return o
}

func schema(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestEvaluate(t *testing.T) {
	valid := certPEM(t, now.Add(-24*time.Hour), now.Add(90*24*time.Hour))
	expired := certPEM(t, now.Add(-90*24*time.Hour), now.Add(-time.Hour))
	soon := certPEM(t, now.Add(-24*time.Hour), now.Add(3*24*time.Hour))
	sec1, pkcs1, pkcs8 := keyPEMs(t)
	replicasSchema := schema(`{"type":"object","required":["replicas"],"properties":{"replicas":{"type":"integer","maximum":10}}}`)

	cases := map[string]struct {
		rules []rerollv1.ValidationRule // the Validator's rules
		kind  rerollv1.ObjectKind       // ConfigMap when empty
		data  map[string]string         // the object's content
		want  []string                  // each finding's String(), in order; none when the object passes
	}{
		"valid JSON passes": {
			rules: []rerollv1.ValidationRule{{Name: "json", Key: "config.json", Format: rerollv1.FormatJSON}},
			data:  map[string]string{"config.json": `{"a": [1, 2]}`},
		},
		"JSON with a stray comma fails, naming the rule, the key and the place": {
			rules: []rerollv1.ValidationRule{{Name: "json", Key: "config.json", Format: rerollv1.FormatJSON}},
			data:  map[string]string{"config.json": "{\n  \"a\": 1,\n}"},
			want:  []string{`v/json: key "config.json" is not valid JSON: invalid character '}' looking for beginning of object key string at line 3, column 1`},
		},
		"two JSON values in one key fail": {
			rules: []rerollv1.ValidationRule{{Name: "json", Key: "config.json", Format: rerollv1.FormatJSON}},
			data:  map[string]string{"config.json": `{} {}`},
			want:  []string{`v/json: key "config.json" is not valid JSON: more than one value`},
		},
		"empty JSON fails": {
			rules: []rerollv1.ValidationRule{{Name: "json", Key: "config.json", Format: rerollv1.FormatJSON}},
			data:  map[string]string{"config.json": ``},
			want:  []string{`v/json: key "config.json" is not valid JSON: unexpected end of input`},
		},
		"valid YAML passes": {
			rules: []rerollv1.ValidationRule{{Name: "yaml", Key: "app.yaml", Format: rerollv1.FormatYAML}},
			data:  map[string]string{"app.yaml": "replicas: 3\nname: web\n"},
		},
		"YAML with a bad indentation fails with its line": {
			rules: []rerollv1.ValidationRule{{Name: "yaml", Key: "app.yaml", Format: rerollv1.FormatYAML}},
			data:  map[string]string{"app.yaml": "a:\n  b: 1\n c: 2\n"},
			want:  []string{`v/yaml: key "app.yaml" is not valid YAML: yaml: line 2: did not find expected key`},
		},
		"valid TOML passes": {
			rules: []rerollv1.ValidationRule{{Name: "toml", Key: "app.toml", Format: rerollv1.FormatTOML}},
			data:  map[string]string{"app.toml": "[server]\nport = 8080\nstarted = 2026-01-01T00:00:00Z\n"},
		},
		"TOML with a missing quote fails with its line": {
			rules: []rerollv1.ValidationRule{{Name: "toml", Key: "app.toml", Format: rerollv1.FormatTOML}},
			data:  map[string]string{"app.toml": "[server]\nname = \"web\n"},
			want:  []string{`v/toml: key "app.toml" is not valid TOML: strings cannot contain newlines at line 2`},
		},
		"Java properties pass": {
			rules: []rerollv1.ValidationRule{{Name: "props", Key: "app.properties", Format: rerollv1.FormatProperties}},
			data:  map[string]string{"app.properties": "a=1\nb : two\n# comment\nc ${a}\n"},
		},
		"Java properties with a broken unicode escape fail": {
			rules: []rerollv1.ValidationRule{{Name: "props", Key: "app.properties", Format: rerollv1.FormatProperties}},
			data:  map[string]string{"app.properties": "a=\\uZZZZ\n"},
			want:  []string{`v/props: key "app.properties" is not valid Java properties: properties: Line 1: invalid unicode literal`},
		},
		"dotenv passes": {
			rules: []rerollv1.ValidationRule{{Name: "env", Key: ".env", Format: rerollv1.FormatDotenv}},
			data:  map[string]string{".env": "A=1\nexport B=\"two words\"\n# comment\n"},
		},
		"dotenv with an unterminated quote fails": {
			rules: []rerollv1.ValidationRule{{Name: "env", Key: ".env", Format: rerollv1.FormatDotenv}},
			data:  map[string]string{".env": "A=\"open\n"},
			want:  []string{`v/env: key ".env" is not valid dotenv: unterminated quoted value "open`},
		},
		"a valid certificate passes, also with a margin it meets": {
			rules: []rerollv1.ValidationRule{{Name: "tls", Key: "tls.crt", Format: rerollv1.FormatPEMCertificate, NotExpiringWithin: duration(7 * 24 * time.Hour)}},
			kind:  rerollv1.KindSecret,
			data:  map[string]string{"tls.crt": valid},
		},
		"an expired certificate fails with its expiry": {
			rules: []rerollv1.ValidationRule{{Name: "tls", Key: "tls.crt", Format: rerollv1.FormatPEMCertificate}},
			kind:  rerollv1.KindSecret,
			data:  map[string]string{"tls.crt": expired},
			want:  []string{`v/tls: key "tls.crt" holds a certificate that expired at 2026-11-26T11:00:00Z (block 1)`},
		},
		"a certificate expiring within the margin fails": {
			rules: []rerollv1.ValidationRule{{Name: "tls", Key: "tls.crt", Format: rerollv1.FormatPEMCertificate, NotExpiringWithin: duration(7 * 24 * time.Hour)}},
			kind:  rerollv1.KindSecret,
			data:  map[string]string{"tls.crt": soon},
			want:  []string{`v/tls: key "tls.crt" holds a certificate that expires at 2026-11-29T12:00:00Z, within 168h0m0s (block 1)`},
		},
		"the second certificate of a chain is checked too": {
			rules: []rerollv1.ValidationRule{{Name: "tls", Key: "tls.crt", Format: rerollv1.FormatPEMCertificate}},
			kind:  rerollv1.KindSecret,
			data:  map[string]string{"tls.crt": valid + expired},
			want:  []string{`v/tls: key "tls.crt" holds a certificate that expired at 2026-11-26T11:00:00Z (block 2)`},
		},
		"a private key where a certificate belongs fails": {
			rules: []rerollv1.ValidationRule{{Name: "tls", Key: "tls.crt", Format: rerollv1.FormatPEMCertificate}},
			kind:  rerollv1.KindSecret,
			data:  map[string]string{"tls.crt": sec1},
			want:  []string{`v/tls: key "tls.crt" holds a PEM block of type "EC PRIVATE KEY" where a CERTIFICATE is expected (block 1)`},
		},
		"text that is not PEM fails as a certificate": {
			rules: []rerollv1.ValidationRule{{Name: "tls", Key: "tls.crt", Format: rerollv1.FormatPEMCertificate}},
			kind:  rerollv1.KindSecret,
			data:  map[string]string{"tls.crt": "not pem"},
			want:  []string{`v/tls: key "tls.crt" holds no PEM block`},
		},
		"private keys in SEC 1, PKCS #1 and PKCS #8 pass": {
			rules: []rerollv1.ValidationRule{
				{Name: "sec1", Key: "a", Format: rerollv1.FormatPEMPrivateKey},
				{Name: "pkcs1", Key: "b", Format: rerollv1.FormatPEMPrivateKey},
				{Name: "pkcs8", Key: "c", Format: rerollv1.FormatPEMPrivateKey},
			},
			kind: rerollv1.KindSecret,
			data: map[string]string{"a": sec1, "b": pkcs1, "c": pkcs8},
		},
		"a certificate where a private key belongs fails": {
			rules: []rerollv1.ValidationRule{{Name: "key", Key: "tls.key", Format: rerollv1.FormatPEMPrivateKey}},
			kind:  rerollv1.KindSecret,
			data:  map[string]string{"tls.key": valid},
			want:  []string{`v/key: key "tls.key" holds a PEM block of type "CERTIFICATE", not an unencrypted private key (RSA PRIVATE KEY, PRIVATE KEY or EC PRIVATE KEY)`},
		},
		"a corrupt private key fails": {
			rules: []rerollv1.ValidationRule{{Name: "key", Key: "tls.key", Format: rerollv1.FormatPEMPrivateKey}},
			kind:  rerollv1.KindSecret,
			data:  map[string]string{"tls.key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("junk")}))},
			want:  []string{`v/key: key "tls.key" holds a PRIVATE KEY block that does not parse`},
		},
		"an absolute URL passes, with a trailing newline": {
			rules: []rerollv1.ValidationRule{{Name: "url", Key: "endpoint", Format: rerollv1.FormatURL}},
			data:  map[string]string{"endpoint": "https://api.example.com/v1\n"},
		},
		"a relative URL fails": {
			rules: []rerollv1.ValidationRule{{Name: "url", Key: "endpoint", Format: rerollv1.FormatURL}},
			data:  map[string]string{"endpoint": "api.example.com/v1"},
			want:  []string{`v/url: key "endpoint" is not an absolute URL: it needs a scheme and a host`},
		},
		"a URL with a control character fails": {
			rules: []rerollv1.ValidationRule{{Name: "url", Key: "endpoint", Format: rerollv1.FormatURL}},
			data:  map[string]string{"endpoint": "https://a\x7f.example"},
			want:  []string{`v/url: key "endpoint" is not a URL: net/url: invalid control character in URL`},
		},
		"required keys present and forbidden keys absent pass": {
			rules: []rerollv1.ValidationRule{{Name: "keys", RequiredKeys: []string{"a", "b"}, ForbiddenKeys: []string{"debug"}}},
			data:  map[string]string{"a": "", "b": "x"},
		},
		"a missing required key and a forbidden key present fail one by one": {
			rules: []rerollv1.ValidationRule{{Name: "keys", RequiredKeys: []string{"a", "b"}, ForbiddenKeys: []string{"debug"}}},
			data:  map[string]string{"a": "", "debug": "true"},
			want:  []string{`v/keys: key "b" is required but absent`, `v/keys: key "debug" is forbidden but present`},
		},
		"content over the maximum size fails": {
			rules: []rerollv1.ValidationRule{{Name: "size", MaxSize: resource.NewQuantity(10, resource.BinarySI)}},
			data:  map[string]string{"key": "12345678"},
			want:  []string{`v/size: content is 11 bytes, more than the maximum of 10`},
		},
		"content at the maximum size passes": {
			rules: []rerollv1.ValidationRule{{Name: "size", MaxSize: resource.NewQuantity(11, resource.BinarySI)}},
			data:  map[string]string{"key": "12345678"},
		},
		"an absent key fails a key check": {
			rules: []rerollv1.ValidationRule{{Name: "json", Key: "config.json", Format: rerollv1.FormatJSON}},
			data:  map[string]string{"other": "{}"},
			want:  []string{`v/json: key "config.json" is absent (the rule checks it; set optional: true to pass an absent key)`},
		},
		"an absent optional key passes": {
			rules: []rerollv1.ValidationRule{{Name: "json", Key: "config.json", Format: rerollv1.FormatJSON, Optional: true}},
			data:  map[string]string{"other": "{}"},
		},
		"YAML that meets its schema passes": {
			rules: []rerollv1.ValidationRule{{Name: "schema", Key: "app.yaml", Format: rerollv1.FormatYAML, Schema: replicasSchema}},
			data:  map[string]string{"app.yaml": "replicas: 3\n"},
		},
		"YAML that breaks its schema fails at each place, without the value": {
			rules: []rerollv1.ValidationRule{{Name: "schema", Key: "app.yaml", Format: rerollv1.FormatYAML, Schema: schema(
				`{"type":"object","required":["replicas","name"],"properties":{"replicas":{"type":"integer","maximum":10},"tier":{"enum":["web","db"]}}}`)}},
			data: map[string]string{"app.yaml": "replicas: 12\ntier: cache\n"},
			want: []string{`v/schema: key "app.yaml" fails the schema at /: missing property 'name'`,
				`v/schema: key "app.yaml" fails the schema at /replicas: is more than 10`,
				`v/schema: key "app.yaml" fails the schema at /tier: is not one of the values the schema allows`},
		},
		"a schema alone means JSON": {
			rules: []rerollv1.ValidationRule{{Name: "schema", Key: "config.json", Schema: replicasSchema}},
			data:  map[string]string{"config.json": `{"replicas": "three"}`},
			want:  []string{`v/schema: key "config.json" fails the schema at /replicas: got string, want integer`},
		},
		"TOML is checked against a schema": {
			rules: []rerollv1.ValidationRule{{Name: "schema", Key: "app.toml", Format: rerollv1.FormatTOML, Schema: replicasSchema}},
			data:  map[string]string{"app.toml": "replicas = 11\n"},
			want:  []string{`v/schema: key "app.toml" fails the schema at /replicas: is more than 10`},
		},
		"a CEL range check over parsed YAML passes": {
			rules: []rerollv1.ValidationRule{{Name: "range", Expression: "yaml(data['app.yaml']).replicas <= 10"}},
			data:  map[string]string{"app.yaml": "replicas: 10\n"},
		},
		"a CEL range check over parsed YAML fails with the rule's message": {
			rules: []rerollv1.ValidationRule{{Name: "range", Expression: "yaml(data['app.yaml']).replicas <= 10", Message: "replicas must be at most 10"}},
			data:  map[string]string{"app.yaml": "replicas: 11\n"},
			want:  []string{`v/range: replicas must be at most 10`},
		},
		"a false CEL expression without a message quotes the expression": {
			rules: []rerollv1.ValidationRule{{Name: "port", Expression: "json(data['c.json']).port > 1024 && toml(data['c.toml']).port > 1024"}},
			data:  map[string]string{"c.json": `{"port": 8080}`, "c.toml": "port = 80"},
			want:  []string{`v/port: expression is false: json(data['c.json']).port > 1024 && toml(data['c.toml']).port > 1024`},
		},
		"a CEL expression on an absent key fails with the key": {
			rules: []rerollv1.ValidationRule{{Name: "range", Expression: "yaml(data['app.yaml']).replicas <= 10"}},
			data:  map[string]string{},
			want:  []string{`v/range: expression failed: data has no key app.yaml`},
		},
		"a CEL parse of invalid JSON fails without the parser's message": {
			rules: []rerollv1.ValidationRule{{Name: "range", Expression: "json(data['c.json']).port > 0"}},
			data:  map[string]string{"c.json": `{"port": }`},
			want:  []string{`v/range: expression failed: json(): the value is not valid JSON`},
		},
		"several rules report in order": {
			rules: []rerollv1.ValidationRule{
				{Name: "b", RequiredKeys: []string{"x"}},
				{Name: "a", Key: "y", Format: rerollv1.FormatJSON},
			},
			data: map[string]string{"y": "{"},
			want: []string{`v/b: key "x" is required but absent`, `v/a: key "y" is not valid JSON: unexpected end of input`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kind := tc.kind
			if kind == "" {
				kind = rerollv1.KindConfigMap
			}
			v, err := Compile(validator(kind, tc.rules...))
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got := Evaluate(t.Context(), []*Validator{v}, object(kind, tc.data), now)
			var gotS []string
			for _, f := range got {
				gotS = append(gotS, f.String())
			}
			if strings.Join(gotS, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("findings:\n got %q\nwant %q", gotS, tc.want)
			}
		})
	}
}

func TestValidator_Selects(t *testing.T) {
	v, err := Compile(&rerollv1.Validator{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "v"},
		Spec: rerollv1.ValidatorSpec{Kind: rerollv1.KindConfigMap, Names: []string{"app"},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}},
			Rules:    []rerollv1.ValidationRule{{Name: "r", RequiredKeys: []string{"a"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		obj  Object // the object offered
		want bool   // whether the Validator checks it
	}{
		"a listed name":                      {obj: Object{Kind: rerollv1.KindConfigMap, Namespace: "ns", Name: "app"}, want: true},
		"matching labels":                    {obj: Object{Kind: rerollv1.KindConfigMap, Namespace: "ns", Name: "x", Labels: map[string]string{"tier": "web"}}, want: true},
		"neither name nor labels":            {obj: Object{Kind: rerollv1.KindConfigMap, Namespace: "ns", Name: "x", Labels: map[string]string{"tier": "db"}}},
		"a listed name in another namespace": {obj: Object{Kind: rerollv1.KindConfigMap, Namespace: "other", Name: "app"}},
		"a Secret of a listed name":          {obj: Object{Kind: rerollv1.KindSecret, Namespace: "ns", Name: "app"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := v.Selects(tc.obj); got != tc.want {
				t.Errorf("Selects = %v, want %v", got, tc.want)
			}
			// An object the Validator does not select gets no finding
			// however it fails the rule.
			if got := Evaluate(t.Context(), []*Validator{v}, tc.obj, now); (len(got) > 0) != tc.want {
				t.Errorf("findings %v, want some: %v", got, tc.want)
			}
		})
	}
}

func TestCompile_RefusesBadRules(t *testing.T) {
	// deep iterates data twice: its estimate multiplies data's largest
	// possible size by itself.
	const deep = "data.all(k, data.all(j, k != j || data[k] == data[j]))"
	cases := map[string]struct {
		rule   rerollv1.ValidationRule // the one rule of the Validator
		reason string                  // the CompileError's Reason; "" when the rule compiles
		err    string                  // a part of the error's text
	}{
		"a cheap CEL rule compiles": {
			rule: rerollv1.ValidationRule{Name: "r", Expression: "yaml(data['app.yaml']).replicas <= 10 && size(data) < 20"},
		},
		"a CEL syntax error": {
			rule:   rerollv1.ValidationRule{Name: "r", Expression: "data['a'] =="},
			reason: CondInvalidRule, err: "rule r: expression: ERROR",
		},
		"a CEL expression that is not a bool": {
			rule:   rerollv1.ValidationRule{Name: "r", Expression: "data['a']"},
			reason: CondInvalidRule, err: "is a string, not a bool",
		},
		"an unknown CEL variable": {
			rule:   rerollv1.ValidationRule{Name: "r", Expression: "object.name == 'a'"},
			reason: CondInvalidRule, err: "undeclared reference to 'object'",
		},
		"a CEL rule over the cost limit": {
			rule:   rerollv1.ValidationRule{Name: "r", Expression: deep},
			reason: CondCostExceeded, err: "exceeds the per-expression budget of 1000000",
		},
		"a schema that refers to a file": {
			rule:   rerollv1.ValidationRule{Name: "r", Key: "a", Schema: schema(`{"$ref": "file:///etc/passwd"}`)},
			reason: CondInvalidRule, err: "outside the schema",
		},
		"a schema that refers to a URL": {
			rule:   rerollv1.ValidationRule{Name: "r", Key: "a", Schema: schema(`{"$ref": "https://example.com/s.json"}`)},
			reason: CondInvalidRule, err: "outside the schema",
		},
		"a schema that refers to itself compiles": {
			rule: rerollv1.ValidationRule{Name: "r", Key: "a", Schema: schema(`{"$defs": {"p": {"type": "integer"}}, "properties": {"port": {"$ref": "#/$defs/p"}}}`)},
		},
		"a schema that is not a schema": {
			rule:   rerollv1.ValidationRule{Name: "r", Key: "a", Schema: schema(`{"type": 12}`)},
			reason: CondInvalidRule, err: "rule r: schema:",
		},
		"a schema on a format that has no document": {
			rule:   rerollv1.ValidationRule{Name: "r", Key: "a", Format: rerollv1.FormatURL, Schema: schema(`{}`)},
			reason: CondInvalidRule, err: "a schema needs format JSON, YAML or TOML, not URL",
		},
		"a margin on a format that is not a certificate": {
			rule:   rerollv1.ValidationRule{Name: "r", Key: "a", Format: rerollv1.FormatJSON, NotExpiringWithin: duration(time.Hour)},
			reason: CondInvalidRule, err: "notExpiringWithin needs format PEMCertificate",
		},
		"a format without a key": {
			rule:   rerollv1.ValidationRule{Name: "r", Format: rerollv1.FormatJSON},
			reason: CondInvalidRule, err: "need key",
		},
		"a rule with no check": {
			rule:   rerollv1.ValidationRule{Name: "r"},
			reason: CondInvalidRule, err: "set at least one check",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(validator(rerollv1.KindConfigMap, tc.rule))
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				return
			}
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("Compile error %v, want a *CompileError", err)
			}
			if ce.Reason != tc.reason || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Compile error %q (reason %s), want reason %s and %q", err, ce.Reason, tc.reason, tc.err)
			}
		})
	}
}

// parses is an expression of nine json() calls on values that may be up
// to 1 MiB: an estimate near PerCallLimit.
const parses = "json(data['a']).x == 1 && json(data['a']).x == 1 && json(data['a']).x == 1 && " +
	"json(data['a']).x == 1 && json(data['a']).x == 1 && json(data['a']).x == 1 && " +
	"json(data['a']).x == 1 && json(data['a']).x == 1 && json(data['a']).x == 1"

func TestCompile_RefusesAValidatorOverTheEvaluationBudget(t *testing.T) {
	rule := func(i int) rerollv1.ValidationRule {
		return rerollv1.ValidationRule{Name: fmt.Sprintf("r%d", i), Expression: parses}
	}
	// Positive: ten such rules fit.
	var rules []rerollv1.ValidationRule
	for i := range 10 {
		rules = append(rules, rule(i))
	}
	v, err := Compile(validator(rerollv1.KindConfigMap, rules...))
	if err != nil {
		t.Fatalf("ten rules: %v", err)
	}
	if v.Cost <= 9*PerCallLimit/10*10 || v.Cost > PerEvaluationLimit {
		t.Fatalf("ten rules cost %d, want just under %d for the next check to mean something", v.Cost, PerEvaluationLimit)
	}
	// Eleven do not.
	_, err = Compile(validator(rerollv1.KindConfigMap, append(rules, rule(10))...))
	var ce *CompileError
	if !errors.As(err, &ce) || ce.Reason != CondCostExceeded {
		t.Fatalf("eleven rules: %v, want %s", err, CondCostExceeded)
	}
}

func TestEvaluate_StopsRunningExpressionsWhenTheObjectsBudgetIsSpent(t *testing.T) {
	// Eleven Validators select the object, each with ten costly rules
	// that are within the evaluation budget alone; together their worst
	// case is over it, so the last ones are not run.
	var vs []*Validator
	for i := range 11 {
		var rules []rerollv1.ValidationRule
		for j := range 10 {
			rules = append(rules, rerollv1.ValidationRule{Name: fmt.Sprintf("r%d", j), Expression: parses})
		}
		v := validator(rerollv1.KindConfigMap, rules...)
		v.Name = fmt.Sprintf("v%02d", i)
		c, err := Compile(v)
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, c)
	}
	// The value is small, so each run costs little: all 110 run.
	small := object(rerollv1.KindConfigMap, map[string]string{"a": `{"x": 1}`})
	if got := Evaluate(t.Context(), vs, small, now); len(got) != 0 {
		t.Fatalf("small value: findings %v, want none", got)
	}
	// A large value spends the budget: the last expressions fail unrun,
	// naming the budget.
	large := object(rerollv1.KindConfigMap, map[string]string{"a": `{"x": 1, "pad": "` + strings.Repeat("p", 900<<10) + `"}`})
	got := Evaluate(t.Context(), vs, large, now)
	if len(got) == 0 {
		t.Fatal("large value: no finding, want the budget spent")
	}
	for _, f := range got {
		if !strings.Contains(f.Message, "not evaluated") {
			t.Errorf("finding %s, want only budget findings", f)
		}
	}
	if got[0].Validator == "v00" {
		t.Errorf("first finding on %s, want the first Validators run in full", got[0].Validator)
	}
}

func TestEvaluate_RefusesAnObjectOverTheAPIServersLimitUnread(t *testing.T) {
	v, err := Compile(validator(rerollv1.KindConfigMap, rerollv1.ValidationRule{Name: "json", Key: "a", Format: rerollv1.FormatJSON}))
	if err != nil {
		t.Fatal(err)
	}
	ok := object(rerollv1.KindConfigMap, map[string]string{"a": `"` + strings.Repeat("x", MaxObjectBytes-4) + `"`})
	if got := Evaluate(t.Context(), []*Validator{v}, ok, now); len(got) != 0 {
		t.Fatalf("at the limit: %v, want none", got)
	}
	big := object(rerollv1.KindConfigMap, map[string]string{"a": `"` + strings.Repeat("x", MaxObjectBytes) + `"`})
	got := Evaluate(t.Context(), []*Validator{v}, big, now)
	if len(got) != 1 || !strings.Contains(got[0].Message, "the API server's limit: not read") {
		t.Fatalf("over the limit: %v, want one finding", got)
	}
}

// TestEvaluate_NeverQuotesASecretsValue fails every check with values that
// carry a marker; as a ConfigMap some findings quote it (so the check can
// fail), as a Secret none may.
func TestEvaluate_NeverQuotesASecretsValue(t *testing.T) {
	const marker = "Zq7hunter2Xw"
	rules := []rerollv1.ValidationRule{
		{Name: "json", Key: "json", Format: rerollv1.FormatJSON},
		{Name: "yaml", Key: "yaml", Format: rerollv1.FormatYAML},
		{Name: "toml", Key: "toml", Format: rerollv1.FormatTOML},
		{Name: "props", Key: "props", Format: rerollv1.FormatProperties},
		{Name: "env", Key: "env", Format: rerollv1.FormatDotenv},
		{Name: "crt", Key: "crt", Format: rerollv1.FormatPEMCertificate},
		{Name: "key", Key: "key", Format: rerollv1.FormatPEMPrivateKey},
		{Name: "url", Key: "url", Format: rerollv1.FormatURL},
		{Name: "schema", Key: "schema", Schema: schema(`{"properties":{"p":{"pattern":"^a$","maxLength":3},"e":{"enum":["a"]},"c":{"const":"a"},"f":{"format":"email"},"n":{"maximum":1}}}`)},
		{Name: "cel-int", Expression: "int(data['num']) > 0"},
		{Name: "cel-parse", Expression: "yaml(data['yaml']).a == 1"},
		{Name: "cel-msg", Expression: "data['json'] == 'x'"},
	}
	data := map[string]string{
		"json":   `{"a": ` + marker + `}`,
		"yaml":   "a: [" + marker + "\nb: \"" + marker,
		"toml":   "a = " + marker + "\n",
		"props":  "a=\\u" + marker + "\n",
		"env":    "A=\"" + marker + "\n",
		"crt":    "-----BEGIN CERTIFICATE-----\n" + marker + "\n-----END CERTIFICATE-----\n",
		"key":    "-----BEGIN " + marker + "-----\nAAAA\n-----END " + marker + "-----\n",
		"url":    "https://" + marker + "\x7f",
		"schema": `{"p": "` + marker + `", "e": "` + marker + `", "c": "` + marker + `", "f": "` + marker + `", "n": 1` + marker[:0] + `7}`,
		"num":    marker,
	}
	leaks := func(fs []Finding) []string {
		var out []string
		for _, f := range fs {
			b, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			s := f.String() + string(b)
			// Any 4 characters in a row of the marker count.
			for i := 0; i+4 <= len(marker); i++ {
				if strings.Contains(s, marker[i:i+4]) {
					out = append(out, f.String())
					break
				}
			}
		}
		return out
	}

	cm, err := Compile(validator(rerollv1.KindConfigMap, rules...))
	if err != nil {
		t.Fatal(err)
	}
	cmFindings := Evaluate(t.Context(), []*Validator{cm}, object(rerollv1.KindConfigMap, data), now)
	if len(leaks(cmFindings)) == 0 {
		t.Fatalf("as a ConfigMap no finding quotes the value, so this test could not see a leak: %v", cmFindings)
	}

	sec, err := Compile(validator(rerollv1.KindSecret, rules...))
	if err != nil {
		t.Fatal(err)
	}
	got := Evaluate(t.Context(), []*Validator{sec}, object(rerollv1.KindSecret, data), now)
	// Every rule fails (the schema in up to five places).
	failed := map[string]bool{}
	for _, f := range got {
		failed[f.Rule] = true
	}
	for _, r := range rules {
		if !failed[r.Name] {
			t.Errorf("rule %s did not fail on the Secret", r.Name)
		}
	}
	if l := leaks(got); len(l) > 0 {
		t.Errorf("findings on a Secret quote its value:\n%s", strings.Join(l, "\n"))
	}
}
