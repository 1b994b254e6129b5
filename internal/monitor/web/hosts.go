package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/monitor/core"
)

// normalHost is a name as Host headers are compared: lower case, without
// the root's trailing dot, an address in its canonical form.
func normalHost(name string) string {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if ip, err := netip.ParseAddr(name); err == nil {
		return ip.Unmap().String()
	}
	return name
}

// splitHost cuts a Host header into its name and port ("" if none); ok
// false if it is neither name, name:port, [address] nor [address]:port.
func splitHost(host string) (name, port string, ok bool) {
	if h, p, ok := core.SplitHostPort(host); ok {
		name, port = h, p
	} else if len(host) > 2 && host[0] == '[' && host[len(host)-1] == ']' {
		name = host[1 : len(host)-1]
	} else if !strings.ContainsAny(host, ":[]") {
		name = host
	} else {
		return "", "", false
	}
	for _, c := range port {
		if c < '0' || c > '9' {
			return "", "", false
		}
	}
	// A bracket is only an IPv6 address's, and only around it ("[0]" is no
	// URL's host, though "0" may be a name).
	if name == "" || strings.ContainsAny(name, "[]") || strings.Contains(name, ":") && !strings.HasPrefix(host, "[") {
		return "", "", false
	}
	if strings.HasPrefix(host, "[") {
		// A zone is written "%25zone" in a Host, as in a URL ("[fe80::1%0]"
		// is no URL's host); the name is the address with its zone decoded.
		if strings.Contains(name, "%") {
			u, err := url.Parse("http://" + host + "/")
			if err != nil {
				return "", "", false
			}
			name = u.Hostname()
		}
		if ip, err := netip.ParseAddr(name); err != nil || !ip.Is6() {
			return "", "", false
		}
	}
	return name, port, true
}

// hostAllowed says whether a request's Host header names this listener:
// the address the connection reached (local) with its port, if a port is
// given; where that address is loopback, also localhost and any loopback
// address; and any of names (access: hosts:, normalised), on any port (a
// reverse proxy's). A DNS-rebinding page's requests carry its own site's
// name, none of these. A request that came through no listener (local
// nil) may give only the configured names.
func hostAllowed(host string, local net.Addr, names []string) bool {
	name, port, ok := splitHost(host)
	if !ok {
		return false
	}
	name = normalHost(name)
	for _, n := range names {
		if name == n {
			return true
		}
	}
	tcp, ok := local.(*net.TCPAddr)
	if !ok || tcp == nil {
		return false
	}
	at, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return false
	}
	at = at.Unmap()
	if port != "" && port != fmt.Sprint(tcp.Port) {
		return false
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		ip = ip.Unmap()
		return ip == at.WithZone(ip.Zone()) || at.IsLoopback() && ip.IsLoopback()
	}
	return at.IsLoopback() && name == "localhost"
}

// ListenerNames are the names a listener answers to besides access:
// hosts: and its own address: the host part of its listen address (listen,
// as --http gives it) if that is a name, and this machine's host name with
// its short form (the first label) and its fully qualified name. They are
// found once, at start: the fully qualified name is the host name's
// canonical name (/etc/hosts, else DNS), looked up within ctx and at most a
// second; a request never waits for a lookup.
func ListenerNames(ctx context.Context, listen string) []string {
	var names []string
	add := func(n string) {
		if _, err := netip.ParseAddr(n); err == nil || n == "" || !core.ValidHost(n) {
			return // an address is checked against the connection's own
		}
		if n = normalHost(n); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if h, _, err := net.SplitHostPort(listen); err == nil {
		add(h)
	}
	h, err := os.Hostname()
	if err != nil {
		return names
	}
	add(h)
	short, _, _ := strings.Cut(h, ".")
	add(short)
	if ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if fqdn, err := net.DefaultResolver.LookupCNAME(ctx, h); err == nil {
			add(fqdn)
		}
	}
	return names
}

// hostRefusals paces the log lines of requests refused for their Host:
// the first is logged, then at most one a minute with the count since.
type hostRefusals struct {
	mu     sync.Mutex
	last   time.Time
	missed int
}

// refused counts a refusal at now; log says whether to write a line, and
// missed how many were refused since the last line.
func (h *hostRefusals) refused(now time.Time) (missed int, log bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.last.IsZero() && now.Sub(h.last) < time.Minute {
		h.missed++
		return 0, false
	}
	missed = h.missed
	h.last, h.missed = now, 0
	return missed, true
}

// refusalLine is the log line of a request refused for its Host header;
// fix says how to allow a name.
func refusalLine(r *http.Request, missed int, names []string, fix string) string {
	more := ""
	if missed > 0 {
		more = fmt.Sprintf(" (and %d more since the last line)", missed)
	}
	known := "none"
	if len(names) > 0 {
		known = strings.Join(names, ", ")
	}
	return fmt.Sprintf("refused %s %q from %s: Host %q is not a name of this listener (names besides its address: %s; a DNS-rebinding page's?); %s if it is%s",
		r.Method, r.URL.Path, remote(r), r.Host, known, fix, more)
}

// refuseHost logs a request refused for its Host header: the first, then
// at most one line a minute with how many were refused meanwhile.
func (a *API) refuseHost(g *gate, r *http.Request) {
	missed, log := g.refusedHost.refused(time.Now())
	if !log {
		return
	}
	a.svc.Audit(refusalLine(r, missed, g.hosts, "add it to access: hosts:"), nil)
}

// HostGuard refuses, with 421 Misdirected Request, a request whose Host
// header does not name the listener it came through (its address, localhost
// on loopback) or one of names (ListenerNames, normalised by it), as
// API.Guard does; logf is told of the first refusal and then of at most
// one a minute, with fix (how to allow a name). wanlab ui serves through it.
func HostGuard(names []string, fix string, logf func(format string, args ...any), h http.Handler) http.Handler {
	var paced hostRefusals
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if !hostAllowed(r.Host, local, names) {
			if missed, log := paced.refused(time.Now()); log && logf != nil {
				logf("%s", refusalLine(r, missed, names, fix))
			}
			problem(w, http.StatusMisdirectedRequest, fmt.Sprintf("this service is not %q: give its address or one of its names in the Host header (%s)", r.Host, fix))
			return
		}
		h.ServeHTTP(w, r)
	})
}
