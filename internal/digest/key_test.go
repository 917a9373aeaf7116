package digest

import (
	"bytes"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

func TestKey(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, MinKeyBytes)
	other := bytes.Repeat([]byte{8}, MinKeyBytes)
	cases := map[string]struct {
		// secret is the key's bytes; nil for the zero Key.
		secret []byte
		// want is the digest of "correct-horse" when it is known outside Go
		// (`printf correct-horse | sha256sum` for the zero Key); "" means it
		// must differ from plain SHA-256.
		want string
		// wantID is the key id.
		wantID string
	}{
		"zero key is plain SHA-256": {
			want: "9dca666eb54730714630d1519264a7bf1eeaad00b8f2edc90d3ecbfad928d163",
		},
		"keyed":                           {secret: secret},
		"another key digests differently": {secret: other},
	}
	seen := map[string]string{}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			k := Key{}
			if tc.secret != nil {
				var err error
				k, err = NewKey(tc.secret)
				g.Expect(err).NotTo(gomega.HaveOccurred())
				g.Expect(k.ID()).To(gomega.HaveLen(8))
			} else {
				g.Expect(k.ID()).To(gomega.BeEmpty())
			}
			d := k.Value([]byte("correct-horse"))
			g.Expect(d).To(gomega.HaveLen(64))
			if tc.want != "" {
				g.Expect(d).To(gomega.Equal(tc.want))
			} else {
				g.Expect(d).NotTo(gomega.Equal(Value([]byte("correct-horse"))), "keyed differs from plain SHA-256")
			}
			seen[name] = d
			// Transform and Of agree with Value under the same key.
			s := &corev1.Secret{Data: map[string][]byte{"password": []byte("correct-horse")}}
			raw, _ := k.Of(s.DeepCopy())
			conv, _ := k.Transform(s)
			fromCache, _ := k.Of(conv)
			g.Expect(raw.Keys["password"]).To(gomega.Equal(d))
			g.Expect(fromCache.Keys["password"]).To(gomega.Equal(d))
		})
	}
	gomega.NewWithT(t).Expect(seen["keyed"]).NotTo(gomega.Equal(seen["another key digests differently"]))
}

func TestNewKey_RefusesShortKeys(t *testing.T) {
	_, err := NewKey(make([]byte, MinKeyBytes-1))
	gomega.NewWithT(t).Expect(err).To(gomega.MatchError(gomega.ContainSubstring("fewer than the 32 required")))
}

// The expected signatures were computed outside Go, with K the key's 32
// bytes of 0x07 in hex (K=$(printf '07%.0s' $(seq 32))):
//
//	D=$(printf 'reroll.dev derived key: state' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$K -r | cut -d' ' -f1)
//	printf 'uid-1\0reroll.dev/rolled-at\x002026-11-22T12:00:00Z\0' | openssl dgst -sha256 -mac HMAC -macopt hexkey:$D -r | cut -c1-32
func TestKey_StateMAC(t *testing.T) {
	g := gomega.NewWithT(t)
	k, err := NewKey(bytes.Repeat([]byte{7}, MinKeyBytes))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cases := map[string]struct {
		// uid, name and value are what is signed.
		uid, name, value string
		// want is the signature.
		want string
	}{
		"a rolled-at": {uid: "uid-1", name: "reroll.dev/rolled-at", value: "2026-11-22T12:00:00Z", want: "c3db983a2922d8f7395add21846f9972"},
		"the same value on another object signs differently": {uid: "uid-2", name: "reroll.dev/rolled-at", value: "2026-11-22T12:00:00Z", want: "9003c04dbc5af27e48513ac72ae6c2f3"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gomega.NewWithT(t).Expect(k.StateMAC(tc.uid, tc.name, tc.value)).To(gomega.Equal(tc.want))
		})
	}
	other, err := NewKey(bytes.Repeat([]byte{8}, MinKeyBytes))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(other.StateMAC("uid-1", "reroll.dev/rolled-at", "2026-11-22T12:00:00Z")).NotTo(gomega.Equal("c3db983a2922d8f7395add21846f9972"), "another key signs differently")
}
