package tcpwatch

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// answer builds one sock_diag message: an inet_diag_msg for local->remote
// and, if info is set, a tcp_info attribute of that many bytes.
func answer(seq uint32, local, remote netip.AddrPort, inode uint32, info []byte) []byte {
	m := make([]byte, inetDiagMsgLen)
	m[0], m[1] = unix.AF_INET, 1
	binary.BigEndian.PutUint16(m[4:], local.Port())
	binary.BigEndian.PutUint16(m[6:], remote.Port())
	l4, r4 := local.Addr().As4(), remote.Addr().As4()
	copy(m[8:], l4[:])
	copy(m[24:], r4[:])
	binary.NativeEndian.PutUint32(m[68:], inode)
	if info != nil {
		a := make([]byte, 4+len(info))
		binary.NativeEndian.PutUint16(a[0:], uint16(len(a)))
		binary.NativeEndian.PutUint16(a[2:], inetDiagInfo)
		copy(a[4:], info)
		for len(a)%4 != 0 {
			a = append(a, 0)
		}
		m = append(m, a...)
	}
	h := make([]byte, nlmsgHdrLen)
	binary.NativeEndian.PutUint32(h[0:], uint32(nlmsgHdrLen+len(m)))
	binary.NativeEndian.PutUint16(h[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint32(h[8:], seq)
	return append(h, m...)
}

func done(seq uint32) []byte {
	h := make([]byte, nlmsgHdrLen+4)
	binary.NativeEndian.PutUint32(h[0:], uint32(len(h)))
	binary.NativeEndian.PutUint16(h[4:], unix.NLMSG_DONE)
	binary.NativeEndian.PutUint32(h[8:], seq)
	return h
}

func TestParseAnswers(t *testing.T) {
	local, remote := netip.MustParseAddrPort("10.0.0.1:5201"), netip.MustParseAddrPort("10.0.0.2:40000")
	info := make([]byte, 232)
	info[appLimitedOffset] = 1
	binary.NativeEndian.PutUint32(info[80:], 42)         // tcpi_snd_cwnd
	binary.NativeEndian.PutUint64(info[120:], 123456789) // tcpi_bytes_acked
	binary.NativeEndian.PutUint64(info[176:], 7)         // tcpi_rwnd_limited
	short := make([]byte, 104)                           // an old kernel's tcp_info
	binary.NativeEndian.PutUint32(short[80:], 10)
	var b []byte
	b = append(b, answer(5, local, remote, 99, info)...)
	b = append(b, answer(5, local, remote, 98, nil)...) // no tcp_info: skipped
	b = append(b, answer(5, remote, local, 97, short)...)
	b = append(b, answer(4, local, remote, 96, info)...) // an earlier request's
	b = append(b, done(5)...)
	var got []diagConn
	var c diagConn
	ended, err := parseAnswers(b, &c, func(seq uint32, c *diagConn, err error) error {
		if seq == 5 && c != nil {
			got = append(got, *c)
		}
		return err
	})
	if err != nil || !ended {
		t.Fatalf("parseAnswers: done %v, %v", ended, err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d connections, want 2: %+v", len(got), got)
	}
	g := got[0]
	if g.Local != local || g.Remote != remote || g.Inode != 99 || g.Info.Snd_cwnd != 42 || g.Info.Bytes_acked != 123456789 || g.Info.Rwnd_limited != 7 || !g.AppLimited {
		t.Errorf("first connection decoded as %+v", g)
	}
	if g := got[1]; g.Info.Snd_cwnd != 10 || g.Info.Bytes_acked != 0 || g.AppLimited {
		t.Errorf("a short tcp_info decoded as cwnd %d, acked %d, app-limited %v", g.Info.Snd_cwnd, g.Info.Bytes_acked, g.AppLimited)
	}
}

func TestParseAnswersRefusesBadLengths(t *testing.T) {
	b := answer(1, netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.0.2:2"), 1, nil)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)+8))
	var c diagConn
	if _, err := parseAnswers(b, &c, func(uint32, *diagConn, error) error { return nil }); err == nil {
		t.Error("a message longer than its datagram was accepted")
	}
}

// FuzzSockDiag feeds arbitrary datagrams to the decoder of sock_diag's
// answers: it must never panic or read outside them.
func FuzzSockDiag(f *testing.F) {
	f.Add(answer(1, netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.0.2:2"), 1, make([]byte, 232)))
	f.Add(done(1))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c diagConn
		parseAnswers(b, &c, func(_ uint32, c *diagConn, _ error) error {
			if c != nil {
				_ = c.Local.String()
			}
			return nil
		})
	})
}
