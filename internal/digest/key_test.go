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
		// want is the digest of "correct-horse", computed outside Go:
		// `printf correct-horse | sha256sum` for the zero Key, and
		// `printf correct-horse | openssl dgst -sha256 -mac HMAC -macopt hexkey:$(printf '07%.0s' $(seq 32))`
		// (08 for the other key) for the keyed ones.
		want string
		// wantID is the key id, computed outside Go:
		// `printf 'reroll.dev key id' | openssl dgst -sha256 -mac HMAC -macopt hexkey:...`,
		// its first 8 hex characters; "" for the zero Key.
		wantID string
	}{
		"zero key is plain SHA-256": {
			want: "9dca666eb54730714630d1519264a7bf1eeaad00b8f2edc90d3ecbfad928d163",
		},
		"keyed is HMAC-SHA-256 under the key": {
			secret: secret,
			want:   "dc86a23fc9d659c79dc0aea48a130cef8a7db5a0b0e9079ec1c2699df8360a3b",
			wantID: "0b78d596",
		},
		"another key digests differently": {
			secret: other,
			want:   "ec5bd484cf884856a73f0abe0e92197dff7f0a0c333fa6afe41ecc77e1e6d89e",
			wantID: "7d93c9c7",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			k := Key{}
			if tc.secret != nil {
				var err error
				k, err = NewKey(tc.secret)
				g.Expect(err).NotTo(gomega.HaveOccurred())
			}
			g.Expect(k.ID()).To(gomega.Equal(tc.wantID))
			d := k.Value([]byte("correct-horse"))
			g.Expect(d).To(gomega.Equal(tc.want))
			// Transform and Of agree with Value under the same key.
			s := &corev1.Secret{Data: map[string][]byte{"password": []byte("correct-horse")}}
			raw, _ := k.Of(s.DeepCopy())
			conv, _ := k.Transform(s)
			fromCache, _ := k.Of(conv)
			g.Expect(raw.Keys["password"]).To(gomega.Equal(d))
			g.Expect(fromCache.Keys["password"]).To(gomega.Equal(d))
		})
	}
}

func TestNewKey_RefusesShortKeys(t *testing.T) {
	_, err := NewKey(make([]byte, MinKeyBytes-1))
	gomega.NewWithT(t).Expect(err).To(gomega.MatchError(gomega.ContainSubstring("fewer than the 32 required")))
}
