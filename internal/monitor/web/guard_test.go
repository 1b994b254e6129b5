package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// The Host header must name the listener: its address (and port), localhost
// on loopback, or a name of access: hosts:. A DNS-rebinding page's requests
// carry the page's own name and are refused, and logged.
func TestHostMustNameTheListener(t *testing.T) {
	s, h := costServiceWith(t, "access: {hosts: [monitor.example.org, 192.0.2.80]}\n")
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9474}
	loop6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 9474}
	lan := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 5), Port: 9474}
	cases := []struct {
		name  string
		local net.Addr // nil: not through a listener
		host  string
		code  int
	}{
		{"the listener's address", loop, "127.0.0.1:9474", 200},
		{"localhost on loopback", loop, "localhost:9474", 200},
		{"localhost without a port", loop, "LocalHost.", 200},
		{"another loopback address", loop, "[::1]:9474", 200},
		{"IPv6 loopback", loop6, "[::1]:9474", 200},
		{"a configured name, any port", loop, "monitor.example.org:443", 200},
		{"a configured name in capitals", lan, "MONITOR.example.ORG", 200},
		{"a configured address", lan, "192.0.2.80", 200},
		{"the address of a LAN listener", lan, "192.0.2.5:9474", 200},
		{"a rebinding page's name", loop, "rebind.attacker.example:9474", 421},
		{"a rebinding page's name, no port", loop, "rebind.attacker.example", 421},
		{"a name ending like a configured one", loop, "evil-monitor.example.org", 421},
		{"a name starting like localhost", loop, "localhost.attacker.example:9474", 421},
		{"another port", loop, "127.0.0.1:80", 421},
		{"localhost on a LAN listener", lan, "localhost:9474", 421},
		{"another LAN address", lan, "192.0.2.6:9474", 421},
		{"no Host", loop, "", 421},
		{"a port that is not a number", loop, "localhost:x", 421},
		{"not through a listener", nil, "example.com", 421},
		{"not through a listener, a configured name", nil, "monitor.example.org", 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/api/v1/paths", nil)
			req.Host = c.host
			if c.local != nil {
				req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, c.local))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != c.code {
				t.Errorf("Host %q on %v: %d %s, want %d", c.host, c.local, w.Code, w.Body, c.code)
			}
			if c.code == 421 && !strings.Contains(w.Body.String(), "access: hosts:") {
				t.Errorf("a refusal that does not say what to do: %s", w.Body)
			}
		})
	}
	// The refusals are logged, once a minute at most, as events shown to
	// identities only.
	var refusals []core.Event
	for _, e := range s.Snapshot().Events {
		if strings.Contains(e.Message, "is not a name of this listener") {
			refusals = append(refusals, e)
		}
	}
	if len(refusals) != 1 || !refusals[0].Audit || !strings.Contains(refusals[0].Message, `Host "rebind.attacker.example:9474"`) {
		t.Errorf("events of the refusals: %+v, want one line, the first refused", refusals)
	}

	// Through a real listener: the page's own requests pass, a rebinding
	// page's are refused.
	srv := httptest.NewServer(h)
	defer srv.Close()
	for host, want := range map[string]int{"": 200, "rebind.attacker.example:" + srv.URL[strings.LastIndex(srv.URL, ":")+1:]: 421} {
		if got := testsupport.HostStatus(t, srv.URL+"/api/v1/status", host); got != want {
			t.Errorf("Host %q through a listener: %d, want %d", host, got, want)
		}
	}
}

// FuzzHostCheck gives the Host check any Host header, listener address and
// configured name: it never panics, and it allows a Host only if its name
// (as a URL parser reads it) is the configured name, the listener's address,
// or, on a loopback listener, localhost or a loopback address.
func FuzzHostCheck(f *testing.F) {
	for _, seed := range [][3]string{
		{"127.0.0.1:9474", "127.0.0.1:9474", "monitor.example.org"},
		{"localhost", "127.0.0.1:9474", ""},
		{"[::1]:9474", "[::1]:9474", ""},
		{"[::ffff:127.0.0.1]:9474", "127.0.0.1:9474", ""},
		{"Monitor.Example.Org.:443", "192.0.2.5:9474", "monitor.example.org"},
		{"rebind.example:9474", "127.0.0.1:9474", "monitor.example.org"},
		{"localhost:9474", "192.0.2.5:9474", ""},
		{"[fe80::1%25eth0]:9474", "[fe80::1%eth0]:9474", ""},
		{"%6cocalhost", "127.0.0.1:9474", ""},
		{"::1", "[::1]:9474", ""},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, host, local, name string) {
		var names []string
		if core.ValidHost(name) {
			names = []string{normalHost(name)}
		}
		var addr net.Addr
		if ap, err := netip.ParseAddrPort(local); err == nil {
			addr = net.TCPAddrFromAddrPort(ap)
		}
		if !hostAllowed(host, addr, names) {
			return
		}
		u, err := url.Parse("http://" + host + "/")
		if err != nil {
			t.Fatalf("Host %q allowed, but it is no URL's host (%v)", host, err)
		}
		got := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if slices.Contains(names, normalHost(got)) {
			return
		}
		ap, err := netip.ParseAddrPort(local)
		if err != nil {
			t.Fatalf("Host %q allowed by no listener and no name of %q", host, names)
		}
		if u.Port() != "" && u.Port() != fmt.Sprint(ap.Port()) {
			t.Fatalf("Host %q allowed on port %d", host, ap.Port())
		}
		at := ap.Addr().Unmap()
		ip, err := netip.ParseAddr(got)
		switch {
		case err == nil && ip.Unmap().WithZone("") == at.WithZone(""):
		case err == nil && ip.Unmap().IsLoopback() && at.IsLoopback():
		case got == "localhost" && at.IsLoopback():
		default:
			t.Fatalf("Host %q allowed on a listener at %s with names %q", host, local, names)
		}
	})
}

// A state change with a session cookie needs X-Wanlab-Request whatever
// other Authorization header comes with it: only a bearer token, which a
// page of another site cannot have, goes without.
func TestOnlyABearerTokenSkipsTheRequestHeader(t *testing.T) {
	s, h, tok := accessService(t, "open")
	login := httptest.NewRequest("POST", "/login", strings.NewReader("token="+tok))
	login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	if _, err := s.api.Login(w, login); err != nil {
		t.Fatal(err)
	}
	cookie := w.Result().Cookies()[0]
	session := cookie.Name + "=" + cookie.Value
	cases := []struct {
		name   string
		header map[string]string
		code   int
	}{
		{"session and Basic credentials", map[string]string{"Cookie": session, "Authorization": "Basic YWxpY2U6eA=="}, 403},
		{"session and a lower-case bearer", map[string]string{"Cookie": session, "Authorization": "bearer " + tok}, 403},
		{"session and Negotiate", map[string]string{"Cookie": session, "Authorization": "Negotiate abc"}, 403},
		{"session alone", map[string]string{"Cookie": session}, 403},
		{"session with the header", map[string]string{"Cookie": session, RequestHeader: "1"}, 200},
		{"session and Basic, with the header", map[string]string{"Cookie": session, "Authorization": "Basic YWxpY2U6eA==", RequestHeader: "1"}, 200},
		{"bearer", map[string]string{"Authorization": "Bearer " + tok}, 200},
		{"bearer and session", map[string]string{"Cookie": session, "Authorization": "Bearer " + tok}, 200},
	}
	for _, c := range cases {
		w := call{"POST", "/api/v1/alerts/r1/ack", "", c.header}.do(h)
		if w.Code != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, w.Code, w.Body, c.code)
		}
	}
}

// signIn posts a token to /login from an address.
func signIn(s *service, from, token string) error {
	req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = from + ":5000"
	_, err := s.api.Login(httptest.NewRecorder(), req)
	return err
}

// Refused sign-ins write at most loginAudits rows and events a minute per
// address, and none while their address is throttled: those are counted
// and summed up in one row, by address. Who signed in, and from where, is not shown to anonymous
// readers of /api/v1/status.
func TestSignInsDoNotFloodTheAudit(t *testing.T) {
	s, h, tok := accessService(t, "open")
	ar := s.Archive()
	rows := func() []audit.Entry {
		t.Helper()
		all, err := ar.Audit(t.Context(), time.Now().Add(-time.Hour), 10000)
		if err != nil {
			t.Fatal(err)
		}
		return all
	}
	auditEvents := func() int {
		return len(slices.DeleteFunc(s.Snapshot().Events, func(e core.Event) bool { return !e.Audit }))
	}
	// One address: ten wrong tokens are written, the tenth saying that the
	// address is throttled; its next 190 tries are only counted.
	for range 200 {
		if err := signIn(s, "192.0.2.8", "wl_guess"); err == nil {
			t.Fatal("a wrong token signed in")
		}
	}
	got := rows()
	if len(got) != failuresAllowed || auditEvents() != failuresAllowed {
		t.Fatalf("200 wrong sign-ins from one address wrote %d rows and %d events, want %d", len(got), auditEvents(), failuresAllowed)
	}
	if !strings.Contains(got[0].Outcome(), "refused for a minute and counted") {
		t.Errorf("the last row written does not say the address is throttled: %+v", got[0])
	}
	// Other addresses: each writes its own first loginAudits a minute, not
	// hidden by the first one's tries (seven of them used to fill a budget
	// shared by all addresses).
	for i := range 7 {
		for range loginAudits + 2 {
			signIn(s, fmt.Sprintf("198.51.100.%d", i), "wl_guess")
		}
	}
	written := failuresAllowed + 7*loginAudits
	if n := len(rows()); n != written {
		t.Errorf("wrong sign-ins from 8 addresses wrote %d rows in a minute, want %d (each address's first %d)", n, written, loginAudits)
	}
	// The summary: one row with the count of the rest, by address.
	s.api.summariseLogins(time.Now())
	got = rows()
	if len(got) != written+1 || got[0].Target != "summary" || got[0].Remote != "192.0.2.8" ||
		!strings.Contains(got[0].Outcome(), "204 sign-ins not recorded one by one") || !strings.Contains(got[0].Outcome(), "from 8 addresses") ||
		!strings.Contains(got[0].Outcome(), "the most from 192.0.2.8 190, 198.51.100.0 2, 198.51.100.1 2,") {
		t.Errorf("after the summary: %d rows, the newest %+v; want %d, a summary of 204 from 8 addresses, by address", len(got), got[0], written+1)
	}
	s.api.summariseLogins(time.Now())
	if n := len(rows()); n != written+1 {
		t.Errorf("a summary of nothing was written: %d rows", n)
	}
	// A sign-in that succeeds is always written.
	if err := signIn(s, "203.0.113.9", tok); err != nil {
		t.Fatal(err)
	}
	if got := rows(); len(got) != written+2 || got[0].Identity != "alice" || got[0].Outcome() != "ok" {
		t.Errorf("a good sign-in's row: %+v", got[0])
	}
	// /api/v1/status: the sign-ins' events for identities only.
	for _, c := range []struct {
		name   string
		header map[string]string
		shown  bool
	}{
		{"anonymous", nil, false},
		{"an identity", map[string]string{"Authorization": "Bearer " + tok}, true},
	} {
		w := call{"GET", "/api/v1/status", "", c.header}.do(h)
		var st struct{ Events []core.Event }
		if err := json.Unmarshal(w.Body.Bytes(), &st); w.Code != 200 || err != nil {
			t.Fatalf("%s: status %d %v", c.name, w.Code, err)
		}
		body := w.Body.String()
		shown := strings.Contains(body, "203.0.113.9") || strings.Contains(body, `\"alice\"`) || strings.Contains(body, "login")
		if shown != c.shown {
			t.Errorf("%s: who signed in shown %v, want %v: %s", c.name, shown, c.shown, body)
		}
	}
}

// A summary names the quietNamed addresses counted most, with their
// counts, and how many more there were; past loginAuditsAll a minute from
// all addresses, refused sign-ins are counted, not written.
func TestQuietSummaryNamesTheAddresses(t *testing.T) {
	g, err := newGate(core.Access{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range quietNamed + 5 {
		for range i + 1 {
			g.hush(fmt.Sprintf("192.0.2.%d", i), now)
		}
	}
	e, ok := g.quietSummary(now)
	if !ok || e.Remote != "192.0.2.24" || !strings.Contains(e.Outcome(), "the most from 192.0.2.24 25, 192.0.2.23 24,") ||
		!strings.Contains(e.Outcome(), "192.0.2.5 6 and 5 addresses more") || strings.Contains(e.Outcome(), "192.0.2.4 ") {
		t.Errorf("summary %+v", e)
	}
	g.logged = make([]time.Time, loginAuditsAll)
	for i := range g.logged {
		g.logged[i] = now
	}
	req := httptest.NewRequest("POST", "/login", nil)
	req.RemoteAddr = "203.0.113.1:5000"
	if _, _, audit, err := g.login(req, "wl_guess"); audit || err == nil {
		t.Errorf("past %d a minute from all addresses: audit %v, %v", loginAuditsAll, audit, err)
	}
	if e, _ := g.quietSummary(now); !strings.Contains(e.Outcome(), "203.0.113.1 1") {
		t.Errorf("the sign-in past the bound is not counted: %+v", e)
	}
}
