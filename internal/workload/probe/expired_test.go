package probe

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmsg is one control message as the kernel writes it.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

// recvErr is a sock_extended_err of origin and ICMP type, then the
// offender's sockaddr.
func recvErr(origin, typ byte, offender []byte) []byte {
	b := make([]byte, 16, 16+len(offender))
	b[4], b[5] = origin, typ
	return append(b, offender...)
}

// expired reads the router that answered from ICMP time exceeded (IPv4)
// and ICMPv6 time exceeded (IPv6), and nothing else.
func TestExpiredBothFamilies(t *testing.T) {
	payload := make([]byte, HeaderLen)
	copy(payload, magic[:])
	binary.BigEndian.PutUint64(payload[4:], 3<<8|1)

	in4 := make([]byte, 16)
	binary.NativeEndian.PutUint16(in4, unix.AF_INET)
	copy(in4[4:8], []byte{192, 0, 2, 1})
	in6 := make([]byte, 28)
	binary.NativeEndian.PutUint16(in6, unix.AF_INET6)
	router6 := netip.MustParseAddr("2001:db8::1")
	a16 := router6.As16()
	copy(in6[8:24], a16[:])

	tests := []struct {
		name string
		oob  []byte
		want netip.Addr
	}{
		{"ICMP time exceeded", cmsg(unix.IPPROTO_IP, unix.IP_RECVERR, recvErr(unix.SO_EE_ORIGIN_ICMP, icmpExpired, in4)), netip.MustParseAddr("192.0.2.1")},
		{"ICMPv6 time exceeded", cmsg(unix.IPPROTO_IPV6, unix.IPV6_RECVERR, recvErr(unix.SO_EE_ORIGIN_ICMP6, icmp6Expired, in6)), router6},
		{"ICMPv6 unreachable", cmsg(unix.IPPROTO_IPV6, unix.IPV6_RECVERR, recvErr(unix.SO_EE_ORIGIN_ICMP6, 1, in6)), netip.Addr{}},
		{"ICMPv6 type with an IPv4 origin", cmsg(unix.IPPROTO_IPV6, unix.IPV6_RECVERR, recvErr(unix.SO_EE_ORIGIN_ICMP, icmp6Expired, in6)), netip.Addr{}},
		{"truncated sockaddr_in6", cmsg(unix.IPPROTO_IPV6, unix.IPV6_RECVERR, recvErr(unix.SO_EE_ORIGIN_ICMP6, icmp6Expired, in6[:12])), netip.Addr{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seq, from, ok := expired(payload, tc.oob)
			if ok != tc.want.IsValid() || ok && (from != tc.want || seq != 3<<8|1) {
				t.Errorf("expired = %d, %v, %v; want %v", seq, from, ok, tc.want)
			}
		})
	}
}
