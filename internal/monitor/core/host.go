package core

import "github.com/wanlab/wanlab/internal/farend"

// ValidHost says whether name may be a configured name of the listener: a
// DNS name or an IP address, without a port.
func ValidHost(name string) bool { return farend.ValidHost(name) }

// SplitHostPort cuts "host:port" or "[address]:port" as net.SplitHostPort
// does (without the net package: the core does no I/O); ok false if s is
// neither, or a bracket is anywhere but around the host.
func SplitHostPort(s string) (host, port string, ok bool) { return farend.SplitHostPort(s) }
