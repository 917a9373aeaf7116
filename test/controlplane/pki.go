package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Identities of the clients, as the API server reads them from the client
// certificate: CN is the user name, O the groups. The controller-manager and
// scheduler names are the ones the default RBAC roles are bound to.
const (
	adminUser             = "reroll-admin"
	controllerManagerUser = "system:kube-controller-manager"
	schedulerUser         = "system:kube-scheduler"
	// kwok writes the status of nodes and pods and takes node leases; it is
	// in system:masters rather than in a hand-written ClusterRole.
	kwokUser          = "kwok"
	mastersGroup      = "system:masters"
	frontProxyUser    = "front-proxy-client"
	serviceAccountKey = "sa.key"
)

// keyPair is a certificate and its private key, parsed and PEM-encoded.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// pki holds the paths and contents of everything certificates give the plane.
type pki struct {
	dir string
	ca  *keyPair
	// clients maps a kubeconfig name (admin, kube-controller-manager,
	// kube-scheduler, kwok) to its client certificate.
	clients map[string]*keyPair
}

// path returns the path of a file in the PKI folder.
func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// newPKI writes, in dir: a cluster CA (ca.crt, ca.key) that signs the API
// server's serving certificate (apiserver.crt), the serving certificate of the
// controller-manager and scheduler (serving.crt), the client certificates and
// the cluster-signing controller's certificates; a front-proxy CA and its
// client (front-proxy-ca.crt, front-proxy-client.crt) for the
// --requestheader-* flags; and the service-account RSA key pair (sa.key,
// sa.pub). ECDSA P-256 keys are used where RSA is not required because they
// are generated in microseconds.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pki folder: %w", err)
	}
	p := &pki{dir: dir, clients: map[string]*keyPair{}}
	var err error
	if p.ca, err = newCA("reroll-ca"); err != nil {
		return nil, err
	}
	if err := p.write("ca", p.ca); err != nil {
		return nil, err
	}
	serving := func(cn string, dnsNames ...string) *x509.Certificate {
		return &x509.Certificate{
			Subject:     pkix.Name{CommonName: cn},
			DNSNames:    append([]string{"localhost"}, dnsNames...),
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)},
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
	}
	// 10.0.0.1 is the kubernetes Service's ClusterIP in 10.0.0.0/24.
	apiserver := serving("kube-apiserver", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
	if err := p.issue("apiserver", p.ca, apiserver); err != nil {
		return nil, err
	}
	if err := p.issue("serving", p.ca, serving("reroll-local-serving")); err != nil {
		return nil, err
	}
	for name, id := range map[string]pkix.Name{
		"admin":                   {CommonName: adminUser, Organization: []string{mastersGroup}},
		"kube-controller-manager": {CommonName: controllerManagerUser},
		"kube-scheduler":          {CommonName: schedulerUser},
		"kwok":                    {CommonName: kwokUser, Organization: []string{mastersGroup}},
	} {
		kp, err := p.ca.sign(&x509.Certificate{
			Subject:     id,
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			return nil, fmt.Errorf("issue client certificate %s: %w", name, err)
		}
		p.clients[name] = kp
		if err := p.write(name, kp); err != nil {
			return nil, err
		}
	}

	frontProxyCA, err := newCA("reroll-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	if err := p.write("front-proxy-ca", frontProxyCA); err != nil {
		return nil, err
	}
	if err := p.issue("front-proxy-client", frontProxyCA, &x509.Certificate{
		Subject:     pkix.Name{CommonName: frontProxyUser},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, err
	}

	// Service-account tokens are signed with RSA, the algorithm every
	// consumer of the cluster's OIDC discovery accepts.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encode service-account public key: %w", err)
	}
	if err := writePEM(p.path(serviceAccountKey), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey), 0o600); err != nil {
		return nil, err
	}
	if err := writePEM(p.path("sa.pub"), "PUBLIC KEY", pub, 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

// issue signs tmpl with ca and writes <name>.crt and <name>.key.
func (p *pki) issue(name string, ca *keyPair, tmpl *x509.Certificate) error {
	kp, err := ca.sign(tmpl)
	if err != nil {
		return fmt.Errorf("issue certificate %s: %w", name, err)
	}
	return p.write(name, kp)
}

// write stores a key pair as <name>.crt and <name>.key in the PKI folder.
func (p *pki) write(name string, kp *keyPair) error {
	if err := os.WriteFile(p.path(name+".crt"), kp.certPEM, 0o644); err != nil {
		return fmt.Errorf("write certificate %s: %w", name, err)
	}
	if err := os.WriteFile(p.path(name+".key"), kp.keyPEM, 0o600); err != nil {
		return fmt.Errorf("write key %s: %w", name, err)
	}
	return nil
}

// newCA returns a self-signed CA valid for ten years.
func newCA(cn string) (*keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		NotAfter:              time.Now().AddDate(10, 0, 0),
	}
	kp, err := sign(tmpl, nil)
	if err != nil {
		return nil, fmt.Errorf("create CA %s: %w", cn, err)
	}
	return kp, nil
}

// sign issues a certificate for tmpl, valid for one year, signed by ca.
func (ca *keyPair) sign(tmpl *x509.Certificate) (*keyPair, error) {
	tmpl.NotAfter = time.Now().AddDate(1, 0, 0)
	return sign(tmpl, ca)
}

// sign generates a P-256 key and a certificate for tmpl, signed by ca, or
// self-signed when ca is nil.
func sign(tmpl *x509.Certificate, ca *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	// An hour of slack absorbs clock differences between the processes'
	// view and the generation time.
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	parent, signer := tmpl, crypto.Signer(key)
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("create certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// writePEM writes one PEM block to path.
func writePEM(path, blockType string, der []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), mode); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for the client certificate of name that
// talks to server, with the CA and the credentials embedded, so the file
// stays valid wherever it is copied.
func (p *pki) writeKubeconfig(path, name, server string) error {
	kp := p.clients[name]
	if kp == nil {
		return fmt.Errorf("no client certificate named %s", name)
	}
	const contextName = "reroll-local"
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{
			contextName: {Server: server, CertificateAuthorityData: p.ca.certPEM},
		},
		AuthInfos: map[string]*clientcmdapi.AuthInfo{
			name: {ClientCertificateData: kp.certPEM, ClientKeyData: kp.keyPEM},
		},
		Contexts: map[string]*clientcmdapi.Context{
			contextName: {Cluster: contextName, AuthInfo: name},
		},
		CurrentContext: contextName,
	}
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", name, err)
	}
	return nil
}

// SelfSigned returns a self-signed certificate for tmpl and its P-256 key,
// both PEM-encoded (the key as PKCS #8), for tests that need a serving
// certificate or a CA of their own. tmpl's SerialNumber and NotBefore (an
// hour ago) are set here; NotAfter, names and usages are the caller's. It
// fails only when key generation or signing fails.
func SelfSigned(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	kp, err := sign(tmpl, nil)
	if err != nil {
		return nil, nil, err
	}
	return kp.certPEM, kp.keyPEM, nil
}
