// Package pki makes and uses the certificates that agents on real hosts and
// their controllers authenticate each other with: a certificate authority
// for a lab or a collaboration, certificates issued by it for a role, the
// TLS 1.3 configurations of both sides (mutual authentication, reloadable
// on SIGHUP), the identities a certificate proves, and TLS failures told in
// words a site admin understands. It is Go's crypto/x509 and crypto/tls
// throughout; a site may bring certificates from its own CA instead.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// Role is what a certificate is for.
type Role string

// The roles: an agent serves (TLS server), a controller calls (TLS client).
const (
	Agent      Role = "agent"
	Controller Role = "controller"
)

// ParseRole reads a role as written on the command line.
func ParseRole(s string) (Role, error) {
	switch Role(s) {
	case Agent, Controller:
		return Role(s), nil
	}
	return "", fmt.Errorf("role %q: give agent or controller", s)
}

// The files of a CA directory.
const (
	CACert = "ca.crt"
	CAKey  = "ca.key"
)

// Defaults for validity.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	CertValidity = 398 * 24 * time.Hour // what browsers accept; renew yearly
)

// Init creates a CA in dir (made 0700 if absent): dir/ca.crt and dir/ca.key
// (0600). It refuses to overwrite an existing CA.
func Init(dir, name string) error {
	if name == "" {
		name = "wanlab CA"
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making %s: %w", dir, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating the CA's key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"wanlab"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("signing the CA's certificate: %w", err)
	}
	return writePair(filepath.Join(dir, CACert), filepath.Join(dir, CAKey), der, key)
}

// Options are what an issued certificate names and how long it lasts.
type Options struct {
	DNS []string
	IPs []net.IP
	// NotBefore and NotAfter default to now (less an hour, for clock skew)
	// and CertValidity from now.
	NotBefore, NotAfter time.Time
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// Issue signs a certificate for name in role with the CA in dir, and writes
// dir/NAME.crt and dir/NAME.key (0600). The name is the certificate's
// common name (the identity policies name); an agent's certificate also
// needs the DNS names or addresses controllers dial it by.
func Issue(dir, name string, role Role, o Options) error {
	if !nameRE.MatchString(name) || name == "ca" {
		return fmt.Errorf("name %q: give 1-63 letters, digits, '.', '-' or '_' (not \"ca\")", name)
	}
	if _, err := ParseRole(string(role)); err != nil {
		return err
	}
	ca, caKey, err := loadCA(dir)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating %s's key: %w", name, err)
	}
	now := time.Now()
	if o.NotBefore.IsZero() {
		o.NotBefore = now.Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = now.Add(CertValidity)
	}
	// An agent's certificate only serves and a controller's only calls, so
	// that an agent's key cannot be used to command other agents.
	usage := x509.ExtKeyUsageServerAuth
	if role == Controller {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"wanlab"}, OrganizationalUnit: []string{string(role)}},
		NotBefore:    o.NotBefore,
		NotAfter:     o.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     o.DNS,
		IPAddresses:  o.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("signing %s's certificate: %w", name, err)
	}
	return writePair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"), der, key)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CACert))
	if err != nil {
		return nil, nil, fmt.Errorf("no CA in %s (wanlab pki init %s makes one): %w", dir, dir, err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKey))
	if err != nil {
		return nil, nil, fmt.Errorf("the CA's key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("the CA in %s is not PEM", dir)
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("the CA's certificate: %w", err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("the CA's key: %w", err)
	}
	return ca, key, nil
}

// writePair writes a certificate and its key; the key is 0600 from its
// creation, and neither file may exist already.
func writePair(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s exists: remove it first to replace it", p)
		}
	}
	if err := writeNew(keyPath, 0o600, &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}); err != nil {
		return err
	}
	if err := writeNew(certPath, 0o644, &pem.Block{Type: "CERTIFICATE", Bytes: der}); err != nil {
		os.Remove(keyPath)
		return err
	}
	return nil
}

func writeNew(path string, mode os.FileMode, b *pem.Block) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := errors.Join(pem.Encode(f, b), f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
