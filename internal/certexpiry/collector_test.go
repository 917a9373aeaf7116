package certexpiry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// writeCert writes a self-signed certificate that expires at notAfter into
// dir/tls.crt.
func writeCert(t *testing.T, dir string, notAfter time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "reroll-webhook.reroll-system.svc"},
		NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCollector_ExportsTheServedCertificatesExpiry(t *testing.T) {
	cases := map[string]struct {
		// write prepares dir; want is the exposition, "" for no sample.
		write func(t *testing.T, dir string)
		want  string
	}{
		"a certificate gives its NotAfter in Unix seconds": {
			write: func(t *testing.T, dir string) { writeCert(t, dir, time.Unix(1893456000, 0)) },
			want:  Name + " 1.893456e+09\n",
		},
		"a renewed certificate is read again at the next scrape": {
			write: func(t *testing.T, dir string) {
				writeCert(t, dir, time.Unix(1893456000, 0))
				writeCert(t, dir, time.Unix(1900000000, 0))
			},
			want: Name + " 1.9e+09\n",
		},
		"no file gives no sample": {write: func(*testing.T, string) {}},
		"a file that is no PEM certificate gives no sample": {
			write: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, "tls.crt"), []byte("not a certificate"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tc.write(t, dir)
			c := Collector{Dir: dir, Log: logr.Discard()}
			want := ""
			if tc.want != "" {
				want = "# HELP " + Name + " When the admission webhook's serving certificate (tls.crt in --webhook-cert-dir) expires, in seconds since the Unix epoch; absent while the file cannot be read.\n# TYPE " + Name + " gauge\n" + tc.want
			}
			if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
				t.Fatal(err)
			}
		})
	}
}
