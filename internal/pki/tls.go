package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Files are one side's TLS files: the CA it trusts, its certificate and
// key, as YAML names them (tls: {ca:, cert:, key:}).
type Files struct {
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// Missing names the files not given, as YAML names them.
func (f Files) Missing() []string {
	var out []string
	for _, x := range []struct{ name, v string }{{"ca", f.CA}, {"cert", f.Cert}, {"key", f.Key}} {
		if x.v == "" {
			out = append(out, x.name)
		}
	}
	return out
}

// Relative is f with each relative path taken from dir (a file's folder).
func (f Files) Relative(dir string) Files {
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	return Files{CA: rel(f.CA), Cert: rel(f.Cert), Key: rel(f.Key)}
}

// Check says which file is missing.
func (f Files) Check() error {
	for _, p := range []struct{ what, path string }{{"CA certificate", f.CA}, {"certificate", f.Cert}, {"key", f.Key}} {
		if p.path == "" {
			return fmt.Errorf("no %s file given", p.what)
		}
	}
	return nil
}

// loaded is one reading of a side's files.
type loaded struct {
	pool *x509.CertPool
	cert tls.Certificate
	leaf *x509.Certificate
}

func load(f Files) (*loaded, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("reading the CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no PEM certificate", f.CA)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("loading %s and %s: %w", f.Cert, f.Key, err)
	}
	return &loaded{pool: pool, cert: cert, leaf: cert.Leaf}, nil
}

// Server is an agent's TLS side: the files it was started with, read again
// on Reload, so that a renewed certificate or CA takes effect for new
// connections while the ones open go on.
type Server struct {
	files Files
	// Refused, if set, hears of every connection refused during the
	// handshake: from where, and why in words.
	Refused func(remote net.Addr, why string)

	mu  sync.RWMutex
	cur *loaded
}

// NewServer reads the files.
func NewServer(f Files) (*Server, error) {
	l, err := load(f)
	if err != nil {
		return nil, err
	}
	return &Server{files: f, cur: l}, nil
}

// Reload reads the files again; on an error the ones in use stay.
func (s *Server) Reload() error {
	l, err := load(s.files)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.cur = l
	s.mu.Unlock()
	return nil
}

// Leaf is the certificate the server presents now.
func (s *Server) Leaf() *x509.Certificate {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur.leaf
}

// Config is the TLS configuration to listen with: TLS 1.3 only, a client
// certificate required and verified against the CA for client use. The
// verification is wanlab's own call to crypto/x509 (not the handshake's
// built-in one) only so that each refusal can be told and logged.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			s.mu.RLock()
			cur := s.cur
			s.mu.RUnlock()
			remote := hello.Conn.RemoteAddr()
			return &tls.Config{
				MinVersion:   tls.VersionTLS13,
				Certificates: []tls.Certificate{cur.cert},
				ClientAuth:   tls.RequestClientCert,
				VerifyConnection: func(cs tls.ConnectionState) error {
					err := verifyClient(cs, cur.pool)
					if err != nil && s.Refused != nil {
						s.Refused(remote, err.Error())
					}
					return err
				},
			}, nil
		},
	}
}

// ErrNoClientCert means a client came without a certificate.
var ErrNoClientCert = errors.New("the client presented no certificate: only controllers with a certificate from this agent's CA may connect")

func verifyClient(cs tls.ConnectionState, pool *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return ErrNoClientCert
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return fmt.Errorf("the client's certificate %s: %s", Describe(cs.PeerCertificates[0]), Explain(err))
	}
	return nil
}

// ClientConfig is a controller's TLS configuration: TLS 1.3 only, its
// certificate, and the CA it trusts agents' certificates by.
func ClientConfig(f Files) (*tls.Config, error) {
	l, err := load(f)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: l.pool, Certificates: []tls.Certificate{l.cert}}, nil
}

// Identities are the names a verified certificate proves, as a policy
// names them: cn:NAME, dns:NAME, ip:ADDR, uri:URI, email:ADDR.
func Identities(c *x509.Certificate) []string {
	var ids []string
	if c.Subject.CommonName != "" {
		ids = append(ids, "cn:"+c.Subject.CommonName)
	}
	for _, d := range c.DNSNames {
		ids = append(ids, "dns:"+d)
	}
	for _, ip := range c.IPAddresses {
		ids = append(ids, "ip:"+ip.String())
	}
	for _, u := range c.URIs {
		ids = append(ids, "uri:"+u.String())
	}
	for _, e := range c.EmailAddresses {
		ids = append(ids, "email:"+e)
	}
	return ids
}

// Describe names a certificate for people: its subject's common name and
// its issuer's.
func Describe(c *x509.Certificate) string {
	return fmt.Sprintf("%q (issued by %q)", c.Subject.CommonName, c.Issuer.CommonName)
}

// Explain says why a certificate was not accepted, in a site admin's words.
func Explain(err error) string {
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	var hn x509.HostnameError
	switch {
	case errors.As(err, &ua):
		return "unknown authority: it is not signed by the CA this side trusts (was it issued by another lab's CA?)"
	case errors.As(err, &ci) && ci.Reason == x509.Expired:
		if c := ci.Cert; c != nil && time.Now().Before(c.NotBefore) {
			return fmt.Sprintf("not valid yet: valid from %s (is a clock wrong?)", c.NotBefore.UTC().Format(time.RFC3339))
		}
		if c := ci.Cert; c != nil {
			return fmt.Sprintf("expired on %s: issue a new one (wanlab pki issue)", c.NotAfter.UTC().Format(time.RFC3339))
		}
		return "expired or not valid yet"
	case errors.As(err, &ci) && ci.Reason == x509.IncompatibleUsage:
		return "issued for another role (an agent's certificate used as a controller's, or the reverse)"
	case errors.As(err, &hn):
		names := append([]string{}, hn.Certificate.DNSNames...)
		for _, ip := range hn.Certificate.IPAddresses {
			names = append(names, ip.String())
		}
		return fmt.Sprintf("wrong name: it is for %s, not %s (dial a name it holds, or issue it with --dns/--ip)", strings.Join(names, ", "), hn.Host)
	}
	return err.Error()
}

// ExplainHandshake says why a controller's TLS handshake with an agent
// failed: the agent's certificate (Explain's reasons) or the agent's
// refusal of this controller's certificate (a TLS alert).
func ExplainHandshake(err error) string {
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) {
		return "the agent's certificate is not accepted: " + Explain(cv.Err)
	}
	msg := err.Error()
	for _, alert := range []string{"bad certificate", "unknown certificate authority", "certificate expired", "certificate required", "unsupported certificate", "certificate unknown"} {
		if strings.Contains(msg, alert) {
			return fmt.Sprintf("the agent refused this controller's certificate (%s): it must be a controller certificate from a CA the agent trusts, and valid now; the agent's audit log says more", alert)
		}
	}
	if strings.Contains(msg, "protocol version") {
		return "the other side does not speak TLS 1.3: is it a wanlab agent?"
	}
	return msg
}
