package pki

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
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
					if err == nil {
						return nil
					}
					if s.Refused != nil {
						s.Refused(remote, err.Error())
					}
					return &RefusedError{Err: err}
				},
			}, nil
		},
	}
}

// ErrNoClientCert means a client came without a certificate.
var ErrNoClientCert = errors.New("the client presented no certificate: only controllers with a certificate from this agent's CA may connect")

// RefusedError is a client certificate refused in the handshake; the
// Server's Refused hook has heard of it.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// hasUsage says whether a certificate names the extended key usage u
// itself. crypto/x509 takes a certificate that names none as fit for any
// use; a wanlab role needs its own.
func hasUsage(c *x509.Certificate, u x509.ExtKeyUsage) bool {
	return slices.Contains(c.ExtKeyUsage, u)
}

// roleError is the refusal of a certificate that crypto/x509 verified but
// that does not name the usage its role needs.
func roleError(c *x509.Certificate) error {
	return x509.CertificateInvalidError{Cert: c, Reason: x509.IncompatibleUsage}
}

func verifyClient(cs tls.ConnectionState, pool *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return ErrNoClientCert
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	leaf := cs.PeerCertificates[0]
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err == nil && !hasUsage(leaf, x509.ExtKeyUsageClientAuth) {
		err = roleError(leaf)
	}
	if err != nil {
		return fmt.Errorf("the client's certificate %s: %s", Describe(leaf), Explain(err))
	}
	return nil
}

// ClientConfig is a controller's TLS configuration: TLS 1.3 only, its
// certificate, and the CA it trusts agents' certificates by. The
// controller's own certificate is checked first (CheckOwn): one that an
// agent would refuse is refused here, saying why. An agent's certificate
// must name server use.
func ClientConfig(f Files) (*tls.Config, error) {
	config, err := clientConfig(f)
	if err != nil {
		return nil, err
	}
	if err := CheckOwn(config, time.Now()); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Cert, err)
	}
	return config, nil
}

// clientConfig is ClientConfig without the check of the controller's own
// certificate.
func clientConfig(f Files) (*tls.Config, error) {
	l, err := load(f)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: l.pool, Certificates: []tls.Certificate{l.cert},
		VerifyConnection: verifyAgent}, nil
}

// verifyAgent refuses an agent's certificate, verified by the handshake
// against the CA, that does not name server use.
func verifyAgent(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return nil // the handshake has refused it already
	}
	if leaf := cs.PeerCertificates[0]; !hasUsage(leaf, x509.ExtKeyUsageServerAuth) {
		return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: roleError(leaf)}
	}
	return nil
}

// ErrOwnCertificate means a controller's own certificate would be refused
// by any agent: not valid at the time, or not for a controller.
var ErrOwnCertificate = errors.New("this controller's certificate cannot be used")

// CheckOwn checks a controller's own certificate (config's first) before
// it is sent to an agent: valid at now and issued for client use. An error
// wraps ErrOwnCertificate and says what is wrong, with the dates. Whether
// an agent trusts its CA is the agent's to say (an agent may trust
// another CA than the one that signed its own certificate); ForeignIssuer
// gives the hint for its refusal.
func CheckOwn(config *tls.Config, now time.Time) error {
	leaf, _, err := ownLeaf(config)
	if err != nil {
		return err
	}
	switch {
	case now.Before(leaf.NotBefore):
		return fmt.Errorf("%w: %s is not valid yet: valid from %s, and it is %s here (is this clock wrong?)", ErrOwnCertificate, Describe(leaf),
			leaf.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case now.After(leaf.NotAfter):
		return fmt.Errorf("%w: %s expired on %s: issue a new one (wanlab pki issue NAME --role controller)", ErrOwnCertificate, Describe(leaf),
			leaf.NotAfter.UTC().Format(time.RFC3339))
	case !hasUsage(leaf, x509.ExtKeyUsageClientAuth):
		return fmt.Errorf("%w: %s is not a controller's: %s", ErrOwnCertificate, Describe(leaf), Explain(roleError(leaf)))
	}
	return nil
}

// ownLeaf is config's own certificate, parsed, and the intermediates sent
// with it.
func ownLeaf(config *tls.Config) (*x509.Certificate, *x509.CertPool, error) {
	if len(config.Certificates) == 0 || len(config.Certificates[0].Certificate) == 0 {
		return nil, nil, fmt.Errorf("%w: there is none (give tls.cert and tls.key)", ErrOwnCertificate)
	}
	cert := config.Certificates[0]
	leaf := cert.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrOwnCertificate, err)
		}
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	return leaf, inter, nil
}

// ForeignIssuer is the hint to add to an agent's refusal of config's own
// certificate when no CA of config.RootCAs (the inventory's tls.ca) signed
// it, naming its issuer; "" when one did (or it cannot be read). Agents
// whose CA is not the controller's refuse it unless they trust its CA too.
func ForeignIssuer(config *tls.Config, now time.Time) string {
	leaf, inter, err := ownLeaf(config)
	if err != nil {
		return ""
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: config.RootCAs, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	var ua x509.UnknownAuthorityError
	if !errors.As(err, &ua) {
		return ""
	}
	issuer := leaf.Issuer.CommonName
	if issuer == "" {
		issuer = leaf.Issuer.String()
	}
	return fmt.Sprintf("hint: this controller's certificate %q is not signed by a CA of tls.ca: it was issued by %q, so an agent accepts it only if it trusts that CA",
		leaf.Subject.CommonName, issuer)
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
		if c := ci.Cert; c != nil && len(c.ExtKeyUsage) == 0 && len(c.UnknownExtKeyUsage) == 0 {
			return "it names no extended key usage: a controller's certificate must be issued for client use and an agent's for server use (wanlab pki issue --role)"
		}
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
