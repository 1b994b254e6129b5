package core

import (
	"net/netip"
	"regexp"
	"strings"
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

// SplitHostPort cuts "host:port" or "[address]:port" as net.SplitHostPort
// does (without the net package: the core does no I/O); ok false if s is
// neither, or a bracket is anywhere but around the host.
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
