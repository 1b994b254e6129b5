package web

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
)

// The listener's names: the name in --http, and this machine's host name
// and short name; never an address (the connection's own is checked).
func TestListenerNames(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	short, _, _ := strings.Cut(host, ".")
	// A cancelled context: no lookup of the fully qualified name here.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, c := range []struct {
		listen string
		want   []string
	}{
		{"Monitor.Example.org.:9474", []string{"monitor.example.org", normalHost(host), normalHost(short)}},
		{"0.0.0.0:9474", []string{normalHost(host), normalHost(short)}},
		{"[::1]:9474", []string{normalHost(host), normalHost(short)}},
	} {
		got := ListenerNames(ctx, c.listen)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("ListenerNames(%q) = %q, want %q among them", c.listen, got, w)
			}
		}
		if slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, ":") || n == "0.0.0.0" }) {
			t.Errorf("ListenerNames(%q) = %q: an address among them", c.listen, got)
		}
	}
}

// A service reached by a name of its listener (Prometheus scraping
// monitor.example.org:9474, serve --http monitor.example.org:9474, a proxy
// keeping the Host) answers without access: hosts:; a rebinding page's
// name is still refused, and the refusal's log line names what is allowed.
func TestListenerNamesAreAllowed(t *testing.T) {
	s, h := costServiceWith(t, "")
	lan := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 5), Port: 9474}
	names := []string{"monitor.example.org", "monitor"}
	api, err := New(s.Service, names)
	if err != nil {
		t.Fatal(err)
	}
	h = api.Handler()
	for host, want := range map[string]int{
		"monitor.example.org:9474":     200,
		"MONITOR:9474":                 200,
		"monitor.example.org":          200,
		"192.0.2.5:9474":               200,
		"rebind.attacker.example:9474": 421,
		"monitor.example.org.evil":     421,
	} {
		req := httptest.NewRequest("GET", "/api/v1/paths", nil)
		req.Host = host
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(lan)))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("Host %q: %d %s, want %d", host, w.Code, w.Body, want)
		}
	}
	var line string
	for _, e := range s.Snapshot().Events {
		if strings.Contains(e.Message, "is not a name of this listener") {
			line = e.Message
		}
	}
	if !strings.Contains(line, "monitor.example.org, monitor") || !strings.Contains(line, "access: hosts:") {
		t.Errorf("the refusal's line does not say what is allowed: %q", line)
	}
}

// HostGuard, as wanlab ui serves through it: the listener's names and
// address pass, other names get 421, and the first refusal is logged.
func TestHostGuard(t *testing.T) {
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, format) }
	h := HostGuard([]string{"lab.example.org"}, "give --http a name", logf, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9475}
	for _, c := range []struct {
		host string
		code int
	}{
		{"lab.example.org:9475", 200},
		{"localhost:9475", 200},
		{"127.0.0.1:9475", 200},
		{"rebind.attacker.example:9475", 421},
		{"other.attacker.example:9475", 421},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Host = c.host
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(loop)))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != c.code {
			t.Errorf("Host %q: %d, want %d", c.host, w.Code, c.code)
		}
	}
	if len(logged) != 1 {
		t.Errorf("%d refusals logged, want the first alone", len(logged))
	}
}
