package linkemu

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

// six is the test's IPv6 address for the IPv4 address a: 2001:db8::a.b.c.d.
func six(a netip.Addr) netip.Addr {
	b := [16]byte{0x20, 0x01, 0x0d, 0xb8}
	v4 := a.As4()
	copy(b[12:], v4[:])
	return netip.AddrFrom16(b)
}

// addr6 is host i's IPv6 address.
func addr6(i int) netip.Addr { return six(addr(i)) }

// packet6 builds an IPv6 packet of size bytes from host src to dst,
// carrying seq in its first payload bytes after a "no next header"
// (RFC 8200 4.7), with a hop limit of 64.
func packet6(src, dst, size int, seq uint32) []byte {
	p := make([]byte, size)
	p[0] = 0x60
	binary.BigEndian.PutUint16(p[4:], uint16(size-ip6HeaderLen))
	p[6], p[7] = 59, 64
	copy(p[8:24], addr6(src).AsSlice())
	copy(p[24:40], addr6(dst).AsSlice())
	if size >= ip6HeaderLen+4 {
		binary.BigEndian.PutUint32(p[40:], seq)
	}
	return p
}

// family is how the tests write packets, and read the routers' answers,
// in one IP version.
type family struct {
	name   string
	v6     bool
	hdr    int // fixed IP header bytes, where a test packet's seq is
	packet func(src, dst, size int, seq uint32) []byte
	super  func(src, dst, mss, payload int, flags byte) []byte
	// timeExceeded and tooBig are the ICMP type and code of the answers.
	timeExceeded, tooBig [2]uint8
}

var (
	ipv4 = family{name: "IPv4", hdr: ipHeaderLen, packet: packet, super: superFrame,
		timeExceeded: [2]uint8{icmpTimeExceeded, 0}, tooBig: [2]uint8{icmpUnreachable, codeFragNeeded}}
	ipv6 = family{name: "IPv6", v6: true, hdr: ip6HeaderLen, packet: packet6, super: superFrame6,
		timeExceeded: [2]uint8{icmp6TimeExceeded, 0}, tooBig: [2]uint8{icmp6PacketTooBig, 0}}
	families = []family{ipv4, ipv6}
)

// addr is the family's address of the router or host the test names by
// its IPv4 address.
func (f family) addr(a netip.Addr) netip.Addr {
	if f.v6 && a.IsValid() {
		return six(a)
	}
	return a
}

// seq is the sequence number a test packet of the family carries.
func (f family) seq(p []byte) uint32 { return binary.BigEndian.Uint32(p[f.hdr:]) }

// ttl is the TTL, or hop limit, of a packet of the family.
func (f family) ttl(p []byte) byte { return p[ttlOff(p)] }

// quote is the packet an ICMP error of the family quotes.
func (f family) quote(answer []byte) []byte { return answer[f.hdr+icmpHeader:] }

// checkError checks that p is a well-formed ICMP (ICMPv6) error of the
// family from `from` about the packet with sequence seq that host 0 sent,
// and returns its ICMP header.
func (f family) checkError(t *testing.T, p []byte, from netip.Addr, seq uint32) []byte {
	t.Helper()
	if f.v6 {
		return checkICMP6(t, p, from, seq)
	}
	return checkICMP(t, p, from, seq)
}

// checkICMP6 checks, field by field, that p is an ICMPv6 error as RFC
// 4443 says a router sends it, from `from` to host 0 about the packet
// with sequence seq, and returns its ICMPv6 header.
func checkICMP6(t *testing.T, p []byte, from netip.Addr, seq uint32) []byte {
	t.Helper()
	if len(p) < ip6HeaderLen+icmpHeader+ip6HeaderLen+4 || p[0]>>4 != 6 || p[6] != protoICMPv6 {
		t.Fatalf("got %d bytes of version %d, next header %d: want an ICMPv6 error", len(p), p[0]>>4, p[6])
	}
	if len(p) > icmp6MaxLen {
		t.Errorf("the error is %d bytes, more than the IPv6 minimum MTU", len(p))
	}
	if v := binary.BigEndian.Uint32(p); v != 6<<28 {
		t.Errorf("version, traffic class and flow label %#x, want 6, 0 and 0", v)
	}
	if n := int(binary.BigEndian.Uint16(p[4:])); n != len(p)-ip6HeaderLen {
		t.Errorf("payload length %d, packet %d bytes", n, len(p))
	}
	if got := netip.AddrFrom16([16]byte(p[8:24])); got != from {
		t.Errorf("error from %v, want %v", got, from)
	}
	if got := netip.AddrFrom16([16]byte(p[24:40])); got != addr6(0) {
		t.Errorf("error to %v, want the sender %v", got, addr6(0))
	}
	// The checksum covers the pseudo-header (RFC 8200 8.1): source,
	// destination, upper-layer length (32 bits), three zeros and 58.
	icmp := p[ip6HeaderLen:]
	pseudo := append(append([]byte{}, p[8:40]...), 0, 0, 0, 0, 0, 0, 0, protoICMPv6)
	binary.BigEndian.PutUint32(pseudo[32:], uint32(len(icmp)))
	if checksum(append(pseudo, icmp...)) != 0 {
		t.Error("the ICMPv6 checksum is wrong")
	}
	if got := binary.BigEndian.Uint32(icmp[icmpHeader+ip6HeaderLen:]); got != seq {
		t.Errorf("the error quotes packet %d, want %d", got, seq)
	}
	return icmp[:icmpHeader]
}

// TestDestByFamily: a packet goes to the port that owns its destination,
// of either family; a host may have one address of each, or IPv6 alone.
func TestDestByFamily(t *testing.T) {
	v6only := netip.MustParseAddr("2001:db8:1::2")
	var m model
	err := m.init(Config{Ports: []PortConfig{
		{Name: "dual", Addr: addr(0), Addr6: addr6(0)},
		{Name: "v4", Addr: addr(1)},
		{Name: "v6", Addr: v6only},
	}})
	if err != nil {
		t.Fatal(err)
	}
	to6 := func(a netip.Addr) []byte {
		p := packet6(0, 0, 60, 1)
		copy(p[24:40], a.AsSlice())
		return p
	}
	for _, tt := range []struct {
		name string
		pkt  []byte
		port int // -1: unroutable
	}{
		{"IPv4 to the dual-stack host", packet(1, 0, 60, 1), 0},
		{"IPv6 to the dual-stack host", packet6(1, 0, 60, 1), 0},
		{"IPv4 to the IPv4 host", packet(0, 1, 60, 1), 1},
		{"IPv6 to an address nobody has", packet6(0, 1, 60, 1), -1},
		{"IPv6 to the IPv6-only host", to6(v6only), 2},
		{"IPv6 to a multicast group", to6(netip.MustParseAddr("ff02::2")), -1},
		{"a truncated IPv6 header", packet6(1, 0, 60, 1)[:39], -1},
		{"version 5", append([]byte{0x50}, packet6(1, 0, 60, 1)[1:]...), -1},
	} {
		got, ok := m.dest(tt.pkt)
		if !ok {
			got = -1
		}
		if got != tt.port {
			t.Errorf("%s: port %d, want %d", tt.name, got, tt.port)
		}
	}
}

func TestUpperLayer(t *testing.T) {
	// ext is a packet with extension headers hdrs and the upper-layer
	// header after them (20 bytes of protocol upper[0]); each header's
	// first byte is its own next-header value, which ext overwrites with
	// that of the header after it, as the chain has it.
	ext := func(hdrs ...[]byte) []byte {
		p := packet6(0, 1, ip6HeaderLen, 0)
		p[6] = hdrs[0][0]
		for i, h := range hdrs[:len(hdrs)-1] {
			h = append([]byte{}, h...)
			h[0] = hdrs[i+1][0]
			p = append(p, h...)
		}
		p = append(p, make([]byte, 20)...)
		binary.BigEndian.PutUint16(p[4:], uint16(len(p)-ip6HeaderLen))
		return p
	}
	hbh := []byte{extHopByHop, 0, 0, 0, 0, 0, 0, 0}
	dst16 := append([]byte{extDestOpts, 1}, make([]byte, 14)...)
	rt := []byte{extRouting, 0, 0, 0, 0, 0, 0, 0}
	frag0 := []byte{extFragment, 0, 0, 1, 0, 0, 0, 1} // offset 0, more fragments
	frag8 := []byte{extFragment, 0, 0, 8, 0, 0, 0, 1} // offset 8 bytes: a later fragment
	ah := []byte{extAuth, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	tcp := []byte{6}
	for _, tt := range []struct {
		name  string
		pkt   []byte
		proto uint8
		off   int
		plain bool
		ok    bool
	}{
		{"no extension header", ext(tcp), 6, 40, true, true},
		{"hop-by-hop and destination options", ext(hbh, dst16, tcp), 6, 64, true, true},
		{"a routing header", ext(hbh, rt, tcp), 6, 56, false, true},
		{"a first fragment", ext(frag0, tcp), 6, 48, false, true},
		{"a later fragment", ext(frag8, tcp), 6, 48, false, false},
		{"an authentication header", ext(ah, tcp), 6, 52, false, true},
		{"a chain past the packet", ext(hbh, dst16, tcp)[:52], extDestOpts, 48, true, false},
		{"more headers than the bound", ext(hbh, hbh, hbh, hbh, hbh, hbh, hbh, hbh, hbh, tcp), extHopByHop, 104, true, false},
		{"as many as the bound", ext(hbh, hbh, hbh, hbh, hbh, hbh, hbh, hbh, tcp), 6, 104, true, true},
	} {
		proto, off, plain, ok := upperLayer(tt.pkt)
		if proto != tt.proto || off != tt.off || plain != tt.plain || ok != tt.ok {
			t.Errorf("%s: protocol %d at %d, plain %v, ok %v; want %d at %d, %v, %v", tt.name, proto, off, plain, ok, tt.proto, tt.off, tt.plain, tt.ok)
		}
	}
}

// TestAnswerable6: RFC 4443 2.4(e): no error about an ICMPv6 error, nor
// to a source that names no one node, nor about a packet to a multicast
// group but packet too big.
func TestAnswerable6(t *testing.T) {
	icmp6 := func(typ uint8) []byte {
		p := packet6(0, 1, 60, 1)
		p[6], p[40] = protoICMPv6, typ
		return p
	}
	with := func(p []byte, off int, a string) []byte {
		copy(p[off:off+16], netip.MustParseAddr(a).AsSlice())
		return p
	}
	for _, tt := range []struct {
		name       string
		pkt        []byte
		te, tooBig bool
	}{
		{"a plain packet", packet6(0, 1, 60, 1), true, true},
		{"an echo request", icmp6(128), true, true},
		{"a destination unreachable", icmp6(1), false, false},
		{"a packet too big", icmp6(icmp6PacketTooBig), false, false},
		{"an ICMPv6 header cut off", icmp6(128)[:40], false, false},
		{"from the unspecified address", with(packet6(0, 1, 60, 1), 8, "::"), false, false},
		{"from a multicast address", with(packet6(0, 1, 60, 1), 8, "ff02::1"), false, false},
		{"to a multicast group", with(packet6(0, 1, 60, 1), 24, "ff0e::1"), false, true},
		{"IPv4", packet(0, 1, 60, 1), false, false},
	} {
		if got := answerable6(tt.pkt, false); got != tt.te {
			t.Errorf("%s: time exceeded %v, want %v", tt.name, got, tt.te)
		}
		if got := answerable6(tt.pkt, true); got != tt.tooBig {
			t.Errorf("%s: packet too big %v, want %v", tt.name, got, tt.tooBig)
		}
	}
}

// TestICMP6ErrorQuotesUpToTheMinimumMTU: an error about a large packet
// quotes as much of it as fits in 1280 bytes, and its checksum holds.
func TestICMP6ErrorQuotesUpToTheMinimumMTU(t *testing.T) {
	for _, size := range []int{60, 1232, 1233, 9000} {
		orig := packet6(0, 1, size, 4)
		buf := make([]byte, 9000)
		n := icmp6Error(buf, six(routerR1), icmp6PacketTooBig, 0, 1400, orig, 60)
		if want := min(icmp6MaxLen, 48+size); n != want {
			t.Errorf("%d-byte packet: a %d-byte error, want %d", size, n, want)
		}
		icmp := checkICMP6(t, buf[:n], six(routerR1), 4)
		if icmp[0] != icmp6PacketTooBig || icmp[1] != 0 || binary.BigEndian.Uint32(icmp[4:]) != 1400 || buf[7] != 60 {
			t.Errorf("%d-byte packet: type %d code %d MTU %d hop limit %d", size, icmp[0], icmp[1], binary.BigEndian.Uint32(icmp[4:]), buf[7])
		}
		if !bytes.Equal(buf[48:n], orig[:n-48]) {
			t.Errorf("%d-byte packet: the quote is not the packet's start", size)
		}
	}
}

// TestModelRoutersWithoutAnIPv6Address: a router with no IPv6 address
// forwards IPv6 packets, taking its share of the hop limit, and drops
// those that expire at it without an answer.
func TestModelRoutersWithoutAnIPv6Address(t *testing.T) {
	cfg := routerChain([]netip.Addr{routerHop}, 0)
	cfg.Dirs[1].Entry6, cfg.Dirs[1].Hops6 = netip.Addr{}, nil
	for _, tt := range []struct {
		hops    byte
		arrives bool
		answers int
	}{{1, false, 0}, {2, false, 0}, {3, false, 1}, {4, true, 0}} {
		v := newVirtualLink(t, cfg, 2)
		v.send(0, withTTL(packet6(0, 1, 100, 7), tt.hops, false))
		v.runUntil(int64(time.Second))
		if got := len(v.ports[1].out) == 1; got != tt.arrives || len(v.ports[0].out) != tt.answers {
			t.Fatalf("hop limit %d: arrived %v, %d answers; want arrived %v and %d answers", tt.hops, got, len(v.ports[0].out), tt.arrives, tt.answers)
		}
		if tt.answers > 0 {
			checkICMP6(t, v.ports[0].out[0].data, six(routerR2), 7)
		}
		if tt.arrives && ipv6.ttl(v.ports[1].out[0].data) != 1 {
			t.Errorf("hop limit %d: arrived with %d, want 1", tt.hops, ipv6.ttl(v.ports[1].out[0].data))
		}
		want := uint64(1)
		if tt.arrives {
			want = 0
		}
		if st := v.m.dirStats; st[1].Expired.Load()+st[2].Expired.Load() != want || v.m.inFlight.Load() != 0 {
			t.Errorf("hop limit %d: %d and %d expired, %d in flight; want %d in all, none in flight",
				tt.hops, st[1].Expired.Load(), st[2].Expired.Load(), v.m.inFlight.Load(), want)
		}
	}
}

// TestEngineIPv6 runs IPv6 through the engine's ports: a packet is
// delayed and delivered as sent, one larger than the direction's MTU is
// answered with packet too big, one to an address no host has is
// unroutable, and a capture sees both with the reason for the drop.
func TestEngineIPv6(t *testing.T) {
	const delay = 10 * time.Millisecond
	tn := twoHosts(t, DirConfig{Delay: delay, MTU: 1280})
	c, err := tn.eng.StartCapture([]int{0}, 128)
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	p := packet6(0, 1, 1000, 1)
	tn.send(t, 0, p)
	got, ok := tn.recv(1, 5*time.Second)
	if !ok {
		t.Fatal("the IPv6 packet never arrived")
	}
	if took := time.Since(sent); took < delay || !bytes.Equal(got, p) {
		t.Errorf("arrived after %v (want at least %v), as sent: %v", took, delay, bytes.Equal(got, p))
	}
	tn.send(t, 0, packet6(0, 1, 1400, 2))
	answer, ok := tn.recv(0, 5*time.Second)
	if !ok {
		t.Fatal("no packet too big came back")
	}
	if icmp := checkICMP6(t, answer, addr6(1), 2); icmp[0] != icmp6PacketTooBig || binary.BigEndian.Uint32(icmp[4:]) != 1280 {
		t.Errorf("ICMPv6 type %d MTU %d, want packet too big with 1280", icmp[0], binary.BigEndian.Uint32(icmp[4:]))
	}
	nowhere := packet6(0, 1, 100, 3)
	nowhere[39]++
	tn.send(t, 0, nowhere)
	var caught []CapturedPacket
	for deadline := time.Now().Add(5 * time.Second); len(caught) < 2 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		c.Read(func(p CapturedPacket) error {
			p.Data = bytes.Clone(p.Data)
			caught = append(caught, p)
			return nil
		})
	}
	if len(caught) != 2 || caught[0].Reason != Passed || caught[0].OrigLen != 1000 || !bytes.Equal(caught[0].Data, p[:128]) ||
		caught[1].Reason != ByMTU || caught[1].OrigLen != 1400 || caught[1].Data[0]>>4 != 6 {
		t.Errorf("captured %+v, want the packet that passed and the one too big", caught)
	}
	for deadline := time.Now().Add(5 * time.Second); tn.eng.Stats().Ports[0].Unroutable == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	st := tn.eng.Stats()
	if st.Ports[0].Unroutable != 1 || st.Ports[0].RxPackets != 3 || st.Dirs[0].MTUDrops != 1 || st.Dirs[0].Packets != 1 || st.ICMPSent != 1 {
		t.Errorf("port %+v, direction %+v, %d ICMP sent: want 3 read, 1 unroutable, 1 passed, 1 too big, 1 answer", st.Ports[0], st.Dirs[0], st.ICMPSent)
	}
}

// TestModelCapturesIPv6Segments: a capture of a slow direction sees each
// wire segment of a TCPv6 super-packet with the headers segmentation gives
// it.
func TestModelCapturesIPv6Segments(t *testing.T) {
	cfg := oneWay(DirConfig{Rate: 10e6})
	cfg.Offloads = true
	v := newVirtualLink(t, cfg, 2)
	const slots, snap = 16, 100
	c := &captureRing{snaplen: snap, full: newRing[captured](slots), free: newRing[int32](slots)}
	for i := range slots {
		c.bufs = append(c.bufs, make([]byte, snap))
		c.free.push(int32(i))
	}
	v.m.dirs[0].capture = c
	f := superFrame6(0, 1, 1000, 4500, ack|psh)
	v.send(0, f)
	v.runUntil(int64(time.Second))
	for k := range 5 {
		r, ok := c.full.pop()
		if !ok {
			t.Fatalf("segment %d not captured", k)
		}
		p := c.packet(r)
		ip := p.Data
		size := 60 + min(1000, 4500-1000*k)
		switch {
		case p.Reason != Passed || p.OrigLen != size || len(ip) != min(snap, size):
			t.Errorf("segment %d: %s, %d bytes of %d, want %d of %d", k, p.Reason, len(ip), p.OrigLen, min(snap, size), size)
		case ip[0]>>4 != 6 || int(binary.BigEndian.Uint16(ip[4:])) != size-40 || !bytes.Equal(ip[6:40], f[VnetHdrLen+6:VnetHdrLen+40]):
			t.Errorf("segment %d: IPv6 header % x", k, ip[:40])
		case binary.BigEndian.Uint32(ip[44:]) != uint32(1000+1000*k) || !bytes.Equal(ip[60:], f[VnetHdrLen+60+1000*k:VnetHdrLen+60+1000*k+len(ip)-60]):
			t.Errorf("segment %d: sequence %d, or its payload is not the super-packet's", k, binary.BigEndian.Uint32(ip[44:]))
		}
	}
}

// TestConfigAcceptsIPv6: IPv6 addresses wherever a configuration takes
// addresses: hosts of either family or both, routers with an address of
// either family or one of each.
func TestConfigAcceptsIPv6(t *testing.T) {
	r := netip.MustParseAddr("2001:db8:ff::1")
	cfg := Config{
		Ports: []PortConfig{{Name: "dual", Addr: addr(0), Addr6: addr6(0)}, {Name: "v6", Addr: addr6(1)}, {Name: "v4", Addr: addr(2)}},
		Dirs: []DirConfig{
			{Name: "v6 router", Entry: r, Hops: []netip.Addr{r, r}},
			{Name: "dual router", Entry: addr(9), Entry6: r, Hops: []netip.Addr{addr(8)}, Hops6: []netip.Addr{r}},
			{Name: "IPv6 address only", Entry6: r},
		},
		Paths: map[[2]int][]int{{0, 1}: {0, 1, 2}},
	}
	if err := checkGraph(cfg); err != nil {
		t.Fatal(err)
	}
	var m model
	if err := m.init(cfg); err != nil {
		t.Fatal(err)
	}
	if m.dirs[2].routers != 1 || !m.dirs[2].entry || m.dirs[0].routers != 3 {
		t.Errorf("routers %d and %d, entry %v: want an entry router with only an IPv6 address counted", m.dirs[2].routers, m.dirs[0].routers, m.dirs[2].entry)
	}
	for _, tt := range []struct {
		dir  int
		hop  int // -1: the entry router
		v6   bool
		want netip.Addr
	}{
		{0, -1, true, r}, {0, -1, false, netip.Addr{}}, {0, 1, true, r},
		{1, -1, false, addr(9)}, {1, -1, true, r}, {1, 0, false, addr(8)}, {1, 0, true, r},
		{2, -1, true, r}, {2, -1, false, netip.Addr{}},
	} {
		d := &cfg.Dirs[tt.dir]
		got := d.entryAddr(tt.v6)
		if tt.hop >= 0 {
			got = d.hopAddr(tt.hop, tt.v6)
		}
		if got != tt.want {
			t.Errorf("%s, router %d, IPv6 %v: answers from %v, want %v", d.Name, tt.hop, tt.v6, got, tt.want)
		}
	}
}
