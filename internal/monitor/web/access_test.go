package web

import (
	"cmp"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/monitor/tokens"
)

// accessService is a service with a tokens file of alice and one active
// alert on cern->cnaf.
func accessService(t *testing.T, read string) (*service, http.Handler, string) {
	tok, line, _ := tokens.New("alice")
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	os.WriteFile(file, []byte(line+"\n"), 0o600)
	a := archive.Alert{Ref: "r1", Rule: core.RuleRTTStep, Src: "cern", Dst: "cnaf", Test: "latency", Started: time.Now().Add(-time.Hour), Message: "route changed"}
	s, h := costServiceWith(t, "access: {read: "+read+", tokens: "+file+"}\n", a)
	return s, h, tok
}

type call struct {
	method, path, body string
	header             map[string]string
}

// listener is the address the test requests reached, as net/http's
// server tells its handlers.
var listener = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9474}

// viaListener is req as it comes through a listener on 127.0.0.1:9474,
// with host as its Host header (its own address if "").
func viaListener(req *http.Request, host string) *http.Request {
	req.Host = cmp.Or(host, listener.String())
	return req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(listener)))
}

// do sends the call through the guard from 192.0.2.7 (a header "Host"
// sets the Host header).
func (c call) do(h http.Handler) *httptest.ResponseRecorder {
	req := viaListener(httptest.NewRequest(c.method, c.path, strings.NewReader(c.body)), c.header["Host"])
	req.RemoteAddr = "192.0.2.7:4000"
	for k, v := range c.header {
		if k != "Host" {
			req.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestGuard(t *testing.T) {
	s, h, tok := accessService(t, "open")
	bearer := map[string]string{"Authorization": "Bearer " + tok}
	cases := []struct {
		name string
		call call
		code int
		has  string
	}{
		{"reading is open", call{"GET", "/api/v1/paths", "", nil}, 200, "paths"},
		{"ranking is a read", call{"POST", "/api/v1/rank", `{"dst": "cnaf", "bytes": 1, "sources": ["cern"]}`, nil}, 200, "ranking"},
		{"anonymous ack", call{"POST", "/api/v1/alerts/r1/ack", "", nil}, 401, "needs an identity"},
		{"wrong token", call{"POST", "/api/v1/alerts/r1/ack", "", map[string]string{"Authorization": "Bearer wl_nope"}}, 401, "not one of"},
		{"another site's page", call{"POST", "/api/v1/alerts/r1/ack", "", map[string]string{"Authorization": "Bearer " + tok, "Origin": "http://evil.example"}}, 403, "another site"},
		{"ack of no alert", call{"POST", "/api/v1/alerts/nope/ack", "", bearer}, 404, "no active alert"},
		{"ack with a long note", call{"POST", "/api/v1/alerts/r1/ack", `{"note": "` + strings.Repeat("x", 501) + `"}`, bearer}, 400, "at most 500"},
		{"ack", call{"POST", "/api/v1/alerts/r1/ack", `{"note": "<b>looking</b>"}`, bearer}, 200, `"by": "alice"`},
		{"run of a probe test", call{"POST", "/api/v1/paths/cern/cnaf/run", `{"test": "latency"}`, bearer}, 404, "no throughput"},
		{"run", call{"POST", "/api/v1/paths/cern/cnaf/run", `{"test": "bulk"}`, bearer}, 200, `"done": "run bulk cern-`},
		{"run again", call{"POST", "/api/v1/paths/cern/cnaf/run", `{"test": "bulk"}`, bearer}, 429, "already queued"},
		{"anonymous audit", call{"GET", "/api/v1/audit", "", nil}, 401, "for identities"},
		{"whoami", call{"GET", "/api/v1/whoami", "", bearer}, 200, `"alice"`},
	}
	for _, c := range cases {
		w := c.call.do(h)
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.has) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, w.Code, w.Body, c.code, c.has)
		}
	}
	var alerts struct{ Alerts []archive.Alert }
	json.Unmarshal(call{"GET", "/api/v1/alerts", "", nil}.do(h).Body.Bytes(), &alerts)
	if len(alerts.Alerts) != 1 || alerts.Alerts[0].AckedBy != "alice" || alerts.Alerts[0].AckNote != "<b>looking</b>" {
		t.Errorf("active alerts after the ack: %+v", alerts.Alerts)
	}
	stored, _ := s.Archive().Alerts(t.Context(), time.Now().Add(-2*time.Hour), true)
	if len(stored) != 1 || stored[0].AckedBy != "alice" {
		t.Errorf("the archive's alert after the ack: %+v", stored)
	}
	var audit struct{ Audit []auditRow }
	json.Unmarshal(call{"GET", "/api/v1/audit", "", bearer}.do(h).Body.Bytes(), &audit)
	var lines []string
	for _, e := range audit.Audit {
		lines = append(lines, e.Identity+" "+e.Action+" "+e.Target+" "+e.Outcome)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{"alice ack r1 ok", "alice ack nope refused: no active alert", "alice run bulk cern->cnaf ok", "alice run bulk cern->cnaf refused: bulk cern->cnaf is already queued"} {
		if !strings.Contains(got, want) {
			t.Errorf("the audit lacks %q:\n%s", want, got)
		}
	}
	// Ten wrong tokens from one address, and the eleventh try waits.
	for range 10 {
		call{"GET", "/api/v1/paths", "", map[string]string{"Authorization": "Bearer wl_guess"}}.do(h)
	}
	if w := (call{"GET", "/api/v1/paths", "", bearer}).do(h); w.Code != 429 {
		t.Errorf("after ten wrong tokens: %d, want 429", w.Code)
	}
}

func TestBrowserSession(t *testing.T) {
	s, h, tok := accessService(t, "token")
	// Reading needs a token: a page is sent to the login, the API refuses.
	if w := (call{"GET", "/api/v1/paths", "", nil}).do(h); w.Code != 401 {
		t.Errorf("anonymous read: %d, want 401", w.Code)
	}
	if w := (call{"GET", "/api/v1/paths", "", map[string]string{"Accept": "text/html"}}).do(h); w.Code != 303 || w.Header().Get("Location") != "/login" {
		t.Errorf("anonymous page: %d to %q, want 303 to /login", w.Code, w.Header().Get("Location"))
	}
	login := httptest.NewRequest("POST", "/login", strings.NewReader("token="+tok))
	login.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	name, err := s.api.Login(w, login)
	if err != nil || name != "alice" {
		t.Fatalf("login: %q, %v", name, err)
	}
	cookie := w.Result().Cookies()[0]
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict", cookie)
	}
	session := map[string]string{"Cookie": cookie.Name + "=" + cookie.Value}
	if w := (call{"GET", "/api/v1/whoami", "", session}).do(h); !strings.Contains(w.Body.String(), "alice") {
		t.Errorf("whoami with the session: %s", w.Body)
	}
	if w := (call{"POST", "/api/v1/alerts/r1/ack", "", session}).do(h); w.Code != 403 {
		t.Errorf("a session's state change without %s: %d, want 403", RequestHeader, w.Code)
	}
	session[RequestHeader] = "1"
	if w := (call{"POST", "/api/v1/alerts/r1/ack", "", session}).do(h); w.Code != 200 {
		t.Errorf("a session's state change with %s: %d %s", RequestHeader, w.Code, w.Body)
	}
	// Signing out (a plain form) ends the session.
	logout := httptest.NewRequest("POST", "/logout", nil)
	logout.Header.Set("Cookie", session["Cookie"])
	s.api.Logout(httptest.NewRecorder(), logout)
	if w := (call{"GET", "/api/v1/whoami", "", session}).do(h); w.Code != 401 {
		t.Errorf("whoami after signing out: %d %s, want 401 (reading needs a token)", w.Code, w.Body)
	}
}
