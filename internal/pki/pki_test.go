package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lab makes a CA in a temp dir with an agent (for 127.0.0.1 and
// agent.example) and a controller, and returns the dir.
func lab(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pki")
	if err := Init(dir, "test CA"); err != nil {
		t.Fatal(err)
	}
	if err := Issue(dir, "agent1", Agent, Options{DNS: []string{"agent.example"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}); err != nil {
		t.Fatal(err)
	}
	if err := Issue(dir, "ctl", Controller, Options{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func files(dir, name string) Files {
	return Files{CA: filepath.Join(dir, CACert), Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
}

func TestKeysArePrivate(t *testing.T) {
	dir := lab(t)
	for _, name := range []string{"ca.key", "agent1.key", "ctl.key"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v, want 0600", name, err, fi.Mode().Perm())
		}
	}
	if err := Issue(dir, "ctl", Controller, Options{}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("issuing ctl twice: %v, want a refusal to overwrite", err)
	}
	if err := Init(dir, ""); err == nil {
		t.Error("a second init over an existing CA: no error")
	}
	if err := Issue(dir, "../escape", Agent, Options{}); err == nil {
		t.Error("a name with a path in it: no error")
	}
}

// handshake runs a TLS 1.3 handshake between a controller with client
// files and an agent with server files, dialing name; it returns the
// controller's error and what the agent said it refused.
func handshake(t *testing.T, client, server Files, name string) (error, string) {
	t.Helper()
	srv, err := NewServer(server)
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan string, 1)
	srv.Refused = func(_ net.Addr, why string) { refused <- why }
	cfg, err := clientConfig(client) // the agent's side is tested: no check of our own
	if err != nil {
		t.Fatal(err)
	}
	cfg.ServerName = name
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		tc := tls.Server(c, srv.Config())
		tc.Handshake()
		tc.Read(make([]byte, 1)) // the client's verdict on our certificate arrives as an alert
		tc.Close()
	}()
	c, err := tls.Dial("tcp4", ln.Addr().String(), cfg)
	if err == nil {
		// TLS 1.3: the server's verdict on the client's certificate comes
		// after the client's handshake ends; a read sees it.
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		if strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "timeout") {
			err = nil
		}
	}
	select {
	case why := <-refused:
		return err, why
	case <-time.After(100 * time.Millisecond):
		return err, ""
	}
}

func TestHandshakes(t *testing.T) {
	dir := lab(t)
	other := filepath.Join(t.TempDir(), "other")
	if err := Init(other, "another lab's CA"); err != nil {
		t.Fatal(err)
	}
	Issue(other, "ctl", Controller, Options{})
	Issue(other, "agent1", Agent, Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	past := time.Now().Add(-48 * time.Hour)
	Issue(dir, "old", Controller, Options{NotBefore: past, NotAfter: past.Add(time.Hour)})
	Issue(dir, "oldagent", Agent, Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: past, NotAfter: past.Add(time.Hour)})
	noCert := files(dir, "ctl")
	noCert.Cert, noCert.Key = "", ""
	issueWithoutUsage(t, dir, "bare")

	tests := []struct {
		name           string
		client, server Files
		dial           string
		wantClient     string // in the controller's explained error; "" for success
		wantRefused    string // in the agent's refusal
	}{
		{"good", files(dir, "ctl"), files(dir, "agent1"), "127.0.0.1", "", ""},
		{"good by DNS name", files(dir, "ctl"), files(dir, "agent1"), "agent.example", "", ""},
		{"controller from another CA", Files{CA: filepath.Join(dir, CACert), Cert: filepath.Join(other, "ctl.crt"), Key: filepath.Join(other, "ctl.key")}, files(dir, "agent1"), "127.0.0.1", "refused this controller's certificate", "unknown authority"},
		{"expired controller", files(dir, "old"), files(dir, "agent1"), "127.0.0.1", "refused this controller's certificate", "expired on"},
		{"agent's certificate as a controller's", files(dir, "agent1"), files(dir, "agent1"), "127.0.0.1", "refused this controller's certificate", "another role"},
		{"agent from another CA", files(dir, "ctl"), files(other, "agent1"), "127.0.0.1", "unknown authority", ""},
		{"expired agent", files(dir, "ctl"), files(dir, "oldagent"), "127.0.0.1", "expired on", ""},
		{"wrong name", files(dir, "ctl"), files(dir, "agent1"), "dtn.example", "wrong name", ""},
		// crypto/x509 takes a certificate that names no extended key usage
		// as fit for any: a role must be named.
		{"controller without a key usage", files(dir, "bare"), files(dir, "agent1"), "127.0.0.1", "refused this controller's certificate", "names no extended key usage"},
		{"agent without a key usage", files(dir, "ctl"), files(dir, "bare"), "127.0.0.1", "the agent's certificate is not accepted: it names no extended key usage", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err, refused := handshake(t, tc.client, tc.server, tc.dial)
			if tc.wantClient == "" {
				if err != nil || refused != "" {
					t.Fatalf("handshake failed: %v (agent refused: %s)", err, refused)
				}
				return
			}
			if err == nil {
				t.Fatalf("handshake succeeded, want %q", tc.wantClient)
			}
			if got := ExplainHandshake(err); !strings.Contains(got, tc.wantClient) {
				t.Errorf("controller's error %q, want %q", got, tc.wantClient)
			}
			if !strings.Contains(refused, tc.wantRefused) {
				t.Errorf("agent's refusal %q, want %q", refused, tc.wantRefused)
			}
		})
	}
	if _, err := ClientConfig(noCert); err == nil || !strings.Contains(err.Error(), "no certificate file") {
		t.Errorf("a controller without a certificate: %v", err)
	}
}

// A client without a certificate is refused, and the refusal says so.
func TestNoClientCertificate(t *testing.T) {
	dir := lab(t)
	srv, err := NewServer(files(dir, "agent1"))
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan string, 1)
	srv.Refused = func(_ net.Addr, why string) { refused <- why }
	ln, _ := net.Listen("tcp4", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			tls.Server(c, srv.Config()).Handshake()
			c.Close()
		}
	}()
	cfg, _ := ClientConfig(files(dir, "ctl"))
	cfg.Certificates = nil
	c, err := tls.Dial("tcp4", ln.Addr().String(), cfg)
	if err == nil {
		c.Read(make([]byte, 1))
		c.Close()
	}
	select {
	case why := <-refused:
		if !strings.Contains(why, "no certificate") {
			t.Errorf("refusal %q", why)
		}
	case <-time.After(2 * time.Second):
		t.Error("a client without a certificate was not refused")
	}
}

func TestReload(t *testing.T) {
	dir := lab(t)
	srv, err := NewServer(files(dir, "agent1"))
	if err != nil {
		t.Fatal(err)
	}
	before := srv.Leaf().SerialNumber
	os.Remove(filepath.Join(dir, "agent1.crt"))
	os.Remove(filepath.Join(dir, "agent1.key"))
	if err := srv.Reload(); err == nil {
		t.Error("reload with the files gone: no error")
	}
	if srv.Leaf().SerialNumber.Cmp(before) != 0 {
		t.Error("a failed reload changed the certificate in use")
	}
	Issue(dir, "agent1", Agent, Options{IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if srv.Leaf().SerialNumber.Cmp(before) == 0 {
		t.Error("the renewed certificate is not in use after reload")
	}
}

// issueWithoutUsage signs, with the CA in dir, a certificate for 127.0.0.1
// that names no extended key usage, as another CA's tooling may.
func issueWithoutUsage(t *testing.T, dir, name string) {
	t.Helper()
	ca, caKey, err := loadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := writePair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"), der, key); err != nil {
		t.Fatal(err)
	}
}

// TestControllerChecksItsOwnCertificate: a controller whose certificate
// had expired was told only that the agent refused it. Its own
// certificate is checked before it is used, and the error says what is
// wrong, with the date.
func TestControllerChecksItsOwnCertificate(t *testing.T) {
	dir := lab(t)
	other := filepath.Join(t.TempDir(), "other")
	if err := Init(other, "another lab's CA"); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	future := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	for _, err := range []error{
		Issue(other, "ctl", Controller, Options{}),
		Issue(dir, "old", Controller, Options{NotBefore: past, NotAfter: past.Add(time.Hour)}),
		Issue(dir, "early", Controller, Options{NotBefore: future, NotAfter: future.Add(time.Hour)}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	issueWithoutUsage(t, dir, "bare")
	tests := []struct {
		name  string
		files Files
		want  string // "" for a certificate agents accept
	}{
		{"good", files(dir, "ctl"), ""},
		{"expired", files(dir, "old"), "expired on " + past.Add(time.Hour).UTC().Format(time.RFC3339)},
		{"not valid yet", files(dir, "early"), "is not valid yet: valid from " + future.UTC().Format(time.RFC3339)},
		{"an agent's certificate", files(dir, "agent1"), "is not a controller's: issued for another role"},
		{"no key usage", files(dir, "bare"), "is not a controller's: it names no extended key usage"},
		// Agents may trust another CA than tls.ca: theirs to refuse.
		{"from another CA", Files{CA: filepath.Join(dir, CACert), Cert: filepath.Join(other, "ctl.crt"), Key: filepath.Join(other, "ctl.key")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ClientConfig(tc.files)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrOwnCertificate) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrOwnCertificate with %q", err, tc.want)
			}
		})
	}
	// A certificate from another CA than tls.ca has a hint, naming its
	// issuer, for an agent's refusal; one from tls.ca's has none.
	foreign, err := ClientConfig(Files{CA: filepath.Join(dir, CACert), Cert: filepath.Join(other, "ctl.crt"), Key: filepath.Join(other, "ctl.key")})
	if err != nil {
		t.Fatal(err)
	}
	if hint := ForeignIssuer(foreign, time.Now()); !strings.Contains(hint, `is not signed by a CA of tls.ca: it was issued by "another lab's CA"`) {
		t.Errorf("the hint for a certificate from another CA: %q", hint)
	}
	if hint := ForeignIssuer(mustClientConfig(t, files(dir, "ctl")), time.Now()); hint != "" {
		t.Errorf("a hint for a certificate from tls.ca's CA: %q", hint)
	}
	// A certificate that expires while a controller runs is refused at
	// the next dial.
	config, err := ClientConfig(files(dir, "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	later := config.Certificates[0].Leaf.NotAfter.Add(time.Minute)
	if err := CheckOwn(config, later); !errors.Is(err, ErrOwnCertificate) || !strings.Contains(err.Error(), "expired on") {
		t.Errorf("a year later: %v", err)
	}
}

func mustClientConfig(t *testing.T, f Files) *tls.Config {
	t.Helper()
	c, err := ClientConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
