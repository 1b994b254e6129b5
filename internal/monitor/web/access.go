package web

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/audit"
	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/monitor/tokens"
)

// Bounds of the access layer.
const (
	sessionTTL      = 12 * time.Hour
	maxSessions     = 1000
	failuresAllowed = 10 // wrong tokens per remote address per minute
	actionsAllowed  = 30 // state changes per identity per minute
	// maxFailingAddresses is how many addresses' wrong tokens are kept
	// before the stale ones are swept.
	maxFailingAddresses = 10000
	// loginAudits bounds the refused sign-ins written one by one (audit
	// and log) from one address a minute: its first ones, until it is
	// throttled. Every sign-in an address makes while it is throttled is
	// counted instead and written in one summary a minute (quietLogins),
	// as are those past loginAuditsAll from all addresses together (many
	// addresses at once), so that one address's tries hide no other's.
	loginAudits    = failuresAllowed
	loginAuditsAll = 1000
	// maxQuietAddresses bounds the addresses counted apart; quietNamed
	// bounds those a summary names, the most first.
	maxQuietAddresses = 1000
	quietNamed        = 20
	sessionCookie     = "wanlab_session"
	// RequestHeader must come with a browser's state-changing request: a
	// page of another site cannot send it without a CORS preflight, which
	// this server never grants.
	RequestHeader = "X-Wanlab-Request"
)

// identity is an authenticated caller's name.
type identity struct{ name string }

type ctxKey struct{}

// Identity is the authenticated name of a request's caller, "" if none.
func Identity(r *http.Request) string {
	if id, ok := r.Context().Value(ctxKey{}).(identity); ok {
		return id.name
	}
	return ""
}

// gate authenticates requests and bounds what they may do.
type gate struct {
	mu       sync.Mutex
	access   core.Access
	tokens   *tokens.File
	sessions map[string]session
	failures map[string][]time.Time // remote address -> recent wrong tokens
	actions  map[string][]time.Time // identity -> recent state changes
	// logged are the times of the refused sign-ins written one by one in
	// the last minute, from all addresses; quiet counts those that were
	// not.
	logged []time.Time
	quiet  quietLogins
	// hosts are the names of the listener (Access.Hosts and
	// Options.Hosts), normalised; refusedHost paces the log of Host
	// refusals.
	hosts       []string
	refusedHost *hostRefusals
}

// quietLogins counts refused sign-ins that were not written one by one.
type quietLogins struct {
	n     int
	since time.Time
	from  map[string]int // address -> count, at most maxQuietAddresses
	other int            // counted from addresses past that bound
}

type session struct {
	name    string
	expires time.Time
}

// newGate makes the gate of an access: section; listener are the names the
// listener answers to besides (Options.Hosts).
func newGate(a core.Access, listener []string) (*gate, error) {
	g := &gate{access: a, refusedHost: &hostRefusals{}, sessions: map[string]session{}, failures: map[string][]time.Time{}, actions: map[string][]time.Time{}}
	for _, h := range slices.Concat(a.Hosts, listener) {
		if h = normalHost(h); !slices.Contains(g.hosts, h) {
			g.hosts = append(g.hosts, h)
		}
	}
	if a.Tokens != "" {
		ts, err := tokens.Load(a.Tokens)
		if err != nil {
			return nil, err
		}
		g.tokens = ts
	}
	return g, nil
}

// recent keeps the times of the last minute.
func recent(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) > time.Minute {
		i++
	}
	return ts[i:]
}

func remote(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// errThrottled means too many wrong tokens came from one address.
var errThrottled = errors.New("too many wrong tokens from this address: wait a minute")

// identify finds the caller: a bearer token (bearer true), or a session
// cookie.
func (g *gate) identify(r *http.Request) (name string, bearer bool, err error) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	addr := remote(r)
	g.failures[addr] = recent(g.failures[addr], now)
	if len(g.failures[addr]) == 0 {
		delete(g.failures, addr)
	}
	if len(g.failures) > maxFailingAddresses {
		// Many addresses failing at once: forget those of over a minute ago.
		for a, ts := range g.failures {
			if len(recent(ts, now)) == 0 {
				delete(g.failures, a)
			}
		}
	}
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if len(g.failures[addr]) >= failuresAllowed {
			return "", false, errThrottled
		}
		if name := g.tokens.Who(strings.TrimSpace(token)); name != "" {
			return name, true, nil
		}
		g.failures[addr] = append(g.failures[addr], now)
		return "", false, errors.New("the token is not one of the tokens file's")
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		if s, ok := g.sessions[c.Value]; ok && now.Before(s.expires) {
			return s.name, false, nil
		}
		delete(g.sessions, c.Value)
	}
	return "", false, nil
}

// errWrongToken means a sign-in gave a token the tokens file lacks.
var errWrongToken = errors.New("that token is not one of the tokens file's")

// login checks a token and opens a browser session. audit says whether the
// attempt is to be written one by one: a sign-in that succeeds always is,
// a refused one while its address is not throttled (its first loginAudits
// a minute) and fewer than loginAuditsAll were written this minute, a
// throttled one never; those not written are counted for the next summary
// (quietSummary).
func (g *gate) login(r *http.Request, token string) (name, id string, audit bool, err error) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	addr := remote(r)
	g.failures[addr] = recent(g.failures[addr], now)
	if len(g.failures[addr]) >= failuresAllowed {
		g.hush(addr, now)
		return "", "", false, errThrottled
	}
	name = g.tokens.Who(strings.TrimSpace(token))
	if name == "" {
		g.failures[addr] = append(g.failures[addr], now)
		err = errWrongToken
		if len(g.failures[addr]) == failuresAllowed {
			err = fmt.Errorf("%w; %d this minute from %s: its sign-ins are refused for a minute and counted, not recorded one by one", errWrongToken, failuresAllowed, addr)
		}
		if g.logged = recent(g.logged, now); len(g.logged) >= loginAuditsAll {
			g.hush(addr, now)
			return "", "", false, err
		}
		g.logged = append(g.logged, now)
		return "", "", true, err
	}
	if len(g.sessions) >= maxSessions {
		g.evict(now)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", true, err
	}
	id = base64.RawURLEncoding.EncodeToString(b)
	g.sessions[id] = session{name: name, expires: now.Add(sessionTTL)}
	return name, id, true, nil
}

// hush counts a refused sign-in from addr that is not written one by one;
// g.mu is held.
func (g *gate) hush(addr string, now time.Time) {
	q := &g.quiet
	if q.n == 0 {
		q.since = now
	}
	q.n++
	if q.from == nil {
		q.from = map[string]int{}
	}
	if _, ok := q.from[addr]; ok || len(q.from) < maxQuietAddresses {
		q.from[addr]++
	} else {
		q.other++
	}
}

// quietSummary is the audit entry of the refused sign-ins counted since the
// last one, and resets the count; ok false if there were none.
func (g *gate) quietSummary(now time.Time) (e audit.Entry, ok bool) {
	g.mu.Lock()
	q := g.quiet
	g.quiet = quietLogins{}
	g.mu.Unlock()
	if q.n == 0 {
		return e, false
	}
	type count struct {
		addr string
		n    int
	}
	var counts []count
	for a, k := range q.from {
		counts = append(counts, count{a, k})
	}
	slices.SortFunc(counts, func(a, b count) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.addr, b.addr))
	})
	what := fmt.Sprintf("%d sign-ins not recorded one by one since %s (throttled, or past %d a minute from all addresses), from %d addresses",
		q.n, q.since.UTC().Format(time.RFC3339), loginAuditsAll, len(q.from))
	if q.other > 0 {
		what += fmt.Sprintf(" and more (%d sign-ins from addresses past the first %d)", q.other, maxQuietAddresses)
	}
	var named []string
	for _, c := range counts[:min(len(counts), quietNamed)] {
		named = append(named, fmt.Sprintf("%s %d", c.addr, c.n))
	}
	what += "; the most from " + strings.Join(named, ", ")
	if len(counts) > quietNamed {
		what += fmt.Sprintf(" and %d addresses more", len(counts)-quietNamed)
	}
	most := ""
	if len(counts) > 0 {
		most = counts[0].addr
	}
	return audit.Entry{Time: now, Remote: most, Method: "login", Target: "summary", Decision: "refused", Reason: what}, true
}

// evict drops expired sessions, and the one that ends soonest if none
// has; g.mu is held.
func (g *gate) evict(now time.Time) {
	soonest := ""
	for id, s := range g.sessions {
		if now.After(s.expires) {
			delete(g.sessions, id)
		} else if soonest == "" || s.expires.Before(g.sessions[soonest].expires) {
			soonest = id
		}
	}
	if len(g.sessions) >= maxSessions {
		delete(g.sessions, soonest)
	}
}

func (g *gate) logout(r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		g.mu.Lock()
		delete(g.sessions, c.Value)
		g.mu.Unlock()
	}
}

// allowAction counts a state change of name; false past the bound.
func (g *gate) allowAction(name string) bool {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.actions[name] = recent(g.actions[name], now)
	if len(g.actions[name]) >= actionsAllowed {
		return false
	}
	g.actions[name] = append(g.actions[name], now)
	return true
}

// sameOrigin says whether a browser's request comes from this server's own
// pages: its Origin (or Referer) names this host, or it has none (a
// script, not a browser).
func sameOrigin(r *http.Request) bool {
	for _, h := range []string{"Origin", "Referer"} {
		v := r.Header.Get(h)
		if v == "" {
			continue
		}
		rest, ok := strings.CutPrefix(v, "http://")
		if !ok {
			rest, ok = strings.CutPrefix(v, "https://")
		}
		host, _, _ := strings.Cut(rest, "/")
		return ok && host == r.Host
	}
	return true
}

// Guard wraps a handler: it finds each request's identity, refuses readers
// without one where reading needs a token, and refuses state changes (any
// method but GET and HEAD) from anonymous callers or other sites' pages.
// Static assets and the login page are always served.
func (a *API) Guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g := a.access()
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if !hostAllowed(r.Host, local, g.hosts) {
			a.refuseHost(g, r)
			problem(w, http.StatusMisdirectedRequest, fmt.Sprintf("this service is not %q: give its address or a name of access: hosts: in the Host header", r.Host))
			return
		}
		name, bearer, err := g.identify(r)
		if errors.Is(err, errThrottled) {
			problem(w, http.StatusTooManyRequests, err.Error())
			return
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="wanlab"`)
			problem(w, http.StatusUnauthorized, err.Error())
			return
		}
		// Signing in checks its own origin; signing out is harmless.
		open := strings.HasPrefix(r.URL.Path, "/static/") || r.URL.Path == "/favicon.ico" || r.URL.Path == "/login" || r.URL.Path == "/logout"
		// POST /api/v1/rank asks, it changes nothing: a read.
		write := r.Method != http.MethodGet && r.Method != http.MethodHead && r.URL.Path != "/api/v1/rank"
		switch {
		case open:
		case write && !sameOrigin(r):
			problem(w, http.StatusForbidden, "a state change from another site's page is refused")
			return
		case name == "" && (write || g.access.ReadNeedsToken):
			if !write && strings.Contains(r.Header.Get("Accept"), "text/html") {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="wanlab"`)
			why := "reading needs a token (access: read: token)"
			if write {
				why = "a state change needs an identity: Authorization: Bearer TOKEN, or sign in at /login"
			}
			problem(w, http.StatusUnauthorized, why)
			return
		case write && !bearer && r.Header.Get(RequestHeader) == "":
			// A session cookie (whatever other Authorization a browser
			// adds): the browser must say the page sent it.
			problem(w, http.StatusForbidden, "a browser's state change must carry the "+RequestHeader+" header")
			return
		}
		if name != "" {
			r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, identity{name}))
		}
		h.ServeHTTP(w, r)
	})
}

// Login opens a browser session for a valid token (POST /login, form field
// token) and sets its cookie; LoggedOut ends it.
func (a *API) Login(w http.ResponseWriter, r *http.Request) (string, error) {
	g := a.access()
	if !sameOrigin(r) {
		return "", errors.New("a sign-in from another site's page is refused")
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	name, id, audit, err := g.login(r, r.PostFormValue("token"))
	if audit {
		a.Audit(r, name, "login", "", err)
	}
	if err != nil {
		return "", err
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(sessionTTL.Seconds())})
	return name, nil
}

// Logout ends the request's browser session.
func (a *API) Logout(w http.ResponseWriter, r *http.Request) {
	a.access().logout(r)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
}
