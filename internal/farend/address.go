package farend

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// CheckAddress says why addr is no address of a far end of kind ("" if it
// is one): a host (an IPv4 or IPv6 address, or a name) for ping; a host,
// or a host and a port from 1 to 65535, for stamp and iperf3; an IPv6
// address with a port in brackets ([2001:db8::7]:862). Inventories and
// monitor configurations check their targets: with it.
func CheckAddress(kind, addr string) string {
	example := "give a host, or HOST:PORT, as 192.0.2.7:862, [2001:db8::7]:862 or refl.example.org"
	if kind == Iperf3 {
		example = "give a host, or HOST:PORT, as iperf.example.org:5201 or [2001:db8::9]:5201"
	}
	if kind == Ping {
		example = "give a host without a port, as 192.0.2.1, 2001:db8::1 or router.example.org"
	}
	if addr == "" {
		return "no address: " + example
	}
	host, port, hasPort := addr, "", false
	switch {
	case strings.HasPrefix(addr, "["):
		// [IPv6] or [IPv6]:PORT
		if h, p, ok := SplitHostPort(addr); ok {
			host, port, hasPort = h, p, true
		} else if strings.HasSuffix(addr, "]") {
			host = addr[1 : len(addr)-1]
		} else {
			return example
		}
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return "brackets hold an IPv6 address: " + example
		}
	case strings.Count(addr, ":") == 1:
		host, port, _ = strings.Cut(addr, ":")
		hasPort = true
	}
	if hasPort {
		if kind == Ping {
			return "a ping target has no port: " + example
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("port %q: give 1 to 65535", port)
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if strings.Contains(host, "%") || a.IsUnspecified() || a.IsMulticast() {
			return "not a unicast address: " + example
		}
		return ""
	}
	if strings.Contains(host, ":") || !ValidHost(host) {
		return example
	}
	return ""
}

// hostName is a DNS name (no port, no wildcard).
var hostName = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$`)

// ValidHost says whether name is a DNS name or an IP address, without a
// port or a zone.
func ValidHost(name string) bool {
	if _, err := netip.ParseAddr(name); err == nil {
		return !strings.Contains(name, "%")
	}
	return len(name) <= 254 && hostName.MatchString(name)
}

// SplitHostPort cuts "host:port" or "[address]:port" as net.SplitHostPort
// does (without the net package: what checks configurations does no
// I/O); ok false if s is neither, or a bracket is anywhere but around the
// host.
func SplitHostPort(s string) (host, port string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", false
	}
	host, port = s[:i], s[i+1:]
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return "", "", false
		}
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return "", "", false
	}
	if strings.ContainsAny(host, "[]") || strings.ContainsAny(port, "[]") {
		return "", "", false
	}
	return host, port, true
}
