package testcluster

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
)

const certValidity = 365 * 24 * time.Hour

// pki holds the paths of the cluster's certificates and keys.
type pki struct {
	CACert, CAKey           string
	ServingCert, ServingKey string
	ServiceAccountKey       string
	// CAData is the PEM encoded CA certificate clients trust.
	CAData []byte
}

// servingNames are the DNS names the apiserver serving certificate is valid
// for, besides 127.0.0.1 and the first service IP.
func servingNames() []string {
	return []string{
		"localhost",
		"kubernetes",
		"kubernetes.default",
		"kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local",
	}
}

// generatePKI writes a fresh CA, an apiserver serving certificate signed by
// it and an RSA service-account signing key into dir.
func generatePKI(dir string) (pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return pki{}, fmt.Errorf("create pki dir: %w", err)
	}
	p := pki{
		CACert:            filepath.Join(dir, "ca.crt"),
		CAKey:             filepath.Join(dir, "ca.key"),
		ServingCert:       filepath.Join(dir, "apiserver.crt"),
		ServingKey:        filepath.Join(dir, "apiserver.key"),
		ServiceAccountKey: filepath.Join(dir, "service-account.key"),
	}
	ca, caKey, err := newCA()
	if err != nil {
		return pki{}, fmt.Errorf("generate CA: %w", err)
	}
	p.CAData = pemEncode("CERTIFICATE", ca.Raw)
	serving, servingKey, err := newServingCert(ca, caKey)
	if err != nil {
		return pki{}, fmt.Errorf("generate apiserver serving certificate: %w", err)
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return pki{}, fmt.Errorf("generate service-account key: %w", err)
	}
	caKeyPEM, err := marshalKey(caKey)
	if err != nil {
		return pki{}, fmt.Errorf("encode CA key: %w", err)
	}
	servingKeyPEM, err := marshalKey(servingKey)
	if err != nil {
		return pki{}, fmt.Errorf("encode apiserver serving key: %w", err)
	}
	files := []struct {
		path string
		data []byte
	}{
		{p.CACert, p.CAData},
		{p.CAKey, caKeyPEM},
		{p.ServingCert, pemEncode("CERTIFICATE", serving)},
		{p.ServingKey, servingKeyPEM},
		{p.ServiceAccountKey, pemEncode("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return pki{}, fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return p, nil
}

func newCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := certTemplate("testcluster-ca")
	if err != nil {
		return nil, nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func newServingCert(ca *x509.Certificate, caKey crypto.Signer) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := certTemplate("kube-apiserver")
	if err != nil {
		return nil, nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.DNSNames = servingNames()
	tmpl.IPAddresses = []net.IP{net.ParseIP(loopback), net.ParseIP(kubernetesServiceIP)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	return der, key, err
}

func certTemplate(commonName string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
	}, nil
}

func marshalKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pemEncode("EC PRIVATE KEY", der), nil
}

func pemEncode(blockType string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
}
