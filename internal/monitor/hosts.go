package monitor

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"time"
)

// hostName is a DNS name as access: hosts: takes it (no port, no wildcard).
var hostName = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$`)

// ValidHost says whether name may be a configured name of the listener: a
// DNS name or an IP address, without a port.
func ValidHost(name string) bool {
	if _, err := netip.ParseAddr(name); err == nil {
		return !strings.Contains(name, "%")
	}
	return len(name) <= 254 && hostName.MatchString(name)
}

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
	if h, p, err := net.SplitHostPort(host); err == nil {
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
	// A bracket is only an IPv6 address's, and only around it.
	if name == "" || strings.ContainsAny(name, "[]") || strings.Contains(name, ":") && !strings.HasPrefix(host, "[") {
		return "", "", false
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

// refuseHost logs a request refused for its Host header: the first, then
// at most one line a minute with how many were refused meanwhile.
func (s *Service) refuseHost(g *gate, r *http.Request) {
	now := time.Now()
	g.mu.Lock()
	rh := &g.refusedHost
	if now.Sub(rh.last) < time.Minute {
		rh.missed++
		g.mu.Unlock()
		return
	}
	missed := rh.missed
	rh.last, rh.missed = now, 0
	g.mu.Unlock()
	more := ""
	if missed > 0 {
		more = fmt.Sprintf(" (and %d more since the last line)", missed)
	}
	s.mu.Lock()
	s.auditf("refused %s %q from %s: Host %q is not a name of this listener (a DNS-rebinding page's?); add it to access: hosts: if it is%s",
		r.Method, r.URL.Path, remote(r), r.Host, more)
	s.mu.Unlock()
}
