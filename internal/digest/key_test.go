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
