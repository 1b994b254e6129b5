package linkemu

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func twoHosts(t *testing.T, ab DirConfig) *testNet {
	ab.Name = "a->b"
	return startNet(t, 2, []DirConfig{ab, {Name: "b->a"}}, map[[2]int][]int{{0, 1}: {0}, {1, 0}: {1}})
}

// send writes a packet with the given TTL and flags into host i.
func (tn *testNet) send(t *testing.T, i int, p []byte) {
	t.Helper()
	if _, err := unix.Write(tn.hosts[i], p); err != nil {
		t.Fatal(err)
	}
}

// withTTL sets an IPv4 packet's TTL and don't fragment flag, or an IPv6
// packet's hop limit (IPv6 routers never fragment: df is moot).
func withTTL(p []byte, ttl byte, df bool) []byte {
	if p[0]>>4 == 6 {
		p[7] = ttl
		return p
	}
	p[8] = ttl
	if df {
		p[6] |= 0x40
	}
	ipChecksum(p[:20])
	return p
}

func TestEngineScheduleAppliesInOrderAndCancels(t *testing.T) {
	tn := twoHosts(t, DirConfig{})
	start := time.Now().Add(50 * time.Millisecond)
	var changes []TimedChange
	for i := range 5 {
		changes = append(changes, TimedChange{At: start.Add(time.Duration(4-i) * 10 * time.Millisecond), Dir: 0,
			Config: DirConfig{Delay: time.Duration(4-i) * time.Millisecond}, What: "step", Tag: "run"})
	}
	changes = append(changes, TimedChange{At: start.Add(time.Hour), Dir: 1, Config: DirConfig{Down: true}, Tag: "later"})
	if err := tn.eng.Schedule(changes); err != nil {
		t.Fatal(err)
	}
	var applied []Applied
	for deadline := time.Now().Add(5 * time.Second); len(applied) < 5 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		applied = append(applied, tn.eng.Applied()...)
	}
	if len(applied) != 5 {
		t.Fatalf("applied %d changes, want 5: %+v", len(applied), applied)
	}
	for i, a := range applied {
		want := start.Add(time.Duration(i) * 10 * time.Millisecond)
		if d := a.Due.Sub(want); d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("change %d due %v, want %v", i, a.Due, want)
		}
		if a.At.Before(a.Due) {
			t.Errorf("change %d took effect at %v, before it was due (%v)", i, a.At, a.Due)
		}
		if a.Dir != 0 || a.What != "step" || a.Tag != "run" {
			t.Errorf("change %d recorded as %+v", i, a)
		}
	}
	if got := tn.eng.Settings()[0].Delay; got != 4*time.Millisecond {
		t.Errorf("delay after the timeline %v, want the last change's 4ms", got)
	}
	if n := tn.eng.Cancel("later"); n != 1 {
		t.Errorf("Cancel removed %d pending changes, want 1", n)
	}
	if tn.eng.Settings()[1].Down {
		t.Error("a cancelled change took effect")
	}
	if st := tn.eng.Stats(); st.Changes.Count != 5 {
		t.Errorf("change lateness counted %d changes, want 5", st.Changes.Count)
	}
	if err := tn.eng.Schedule([]TimedChange{{Dir: 9}}); err == nil {
		t.Error("a change to direction 9 of 2 was accepted")
	}
}

func TestEngineDownAndUp(t *testing.T) {
	tn := twoHosts(t, DirConfig{Down: true})
	tn.send(t, 0, packet(0, 1, 200, 1))
	if _, ok := tn.recv(1, 100*time.Millisecond); ok {
		t.Fatal("a packet crossed a direction that is down")
	}
	if err := tn.eng.Set(0, DirConfig{}); err != nil {
		t.Fatal(err)
	}
	tn.send(t, 0, packet(0, 1, 200, 2))
	if p, ok := tn.recv(1, 2*time.Second); !ok || binary.BigEndian.Uint32(p[20:]) != 2 {
		t.Fatal("the direction brought back up did not carry a packet")
	}
	if st := tn.eng.Stats().Dirs[0]; st.DownDrops != 1 || st.Drops() != 1 {
		t.Errorf("counters %+v, want one drop while down", st)
	}
}

// checkICMP checks that p is a well-formed ICMP error from `from` about
// the packet with sequence seq, and returns its ICMP header.
func checkICMP(t *testing.T, p []byte, from netip.Addr, seq uint32) []byte {
	t.Helper()
	if len(p) < 28+24 || p[9] != 1 {
		t.Fatalf("got %d bytes of protocol %d, want an ICMP error", len(p), p[9])
	}
	if checksum(p[:20]) != 0 {
		t.Error("the error's IP header checksum is wrong")
	}
	if checksum(p[20:]) != 0 {
		t.Error("the ICMP checksum is wrong")
	}
	if got := netip.AddrFrom4([4]byte(p[12:16])); got != from {
		t.Errorf("error from %v, want %v", got, from)
	}
	if got := netip.AddrFrom4([4]byte(p[16:20])); got != addr(0) {
		t.Errorf("error to %v, want the sender %v", got, addr(0))
	}
	if int(binary.BigEndian.Uint16(p[2:])) != len(p) {
		t.Errorf("total length %d, packet %d bytes", binary.BigEndian.Uint16(p[2:]), len(p))
	}
	quoted := p[28:]
	if binary.BigEndian.Uint32(quoted[20:]) != seq {
		t.Errorf("the error quotes packet %d, want %d", binary.BigEndian.Uint32(quoted[20:]), seq)
	}
	return p[20:28]
}

func TestEngineMTU(t *testing.T) {
	tn := twoHosts(t, DirConfig{MTU: 1280})
	tn.send(t, 0, withTTL(packet(0, 1, 1400, 1), 64, true))
	p, ok := tn.recv(0, 2*time.Second)
	if !ok {
		t.Fatal("no ICMP fragmentation needed came back")
	}
	icmp := checkICMP(t, p, addr(1), 1)
	if icmp[0] != 3 || icmp[1] != 4 || binary.BigEndian.Uint16(icmp[6:]) != 1280 {
		t.Errorf("ICMP type %d code %d mtu %d, want 3/4 with 1280", icmp[0], icmp[1], binary.BigEndian.Uint16(icmp[6:]))
	}
	tn.send(t, 0, withTTL(packet(0, 1, 1280, 2), 64, true))
	if p, ok := tn.recv(1, 2*time.Second); !ok || binary.BigEndian.Uint32(p[20:]) != 2 {
		t.Error("a packet of exactly the MTU did not cross")
	}
	tn.send(t, 0, withTTL(packet(0, 1, 1400, 3), 64, false))
	if _, ok := tn.recv(0, 100*time.Millisecond); ok {
		t.Error("a packet that may be fragmented was answered with fragmentation needed")
	}
	if err := tn.eng.Set(0, DirConfig{MTU: 1280, Blackhole: true}); err != nil {
		t.Fatal(err)
	}
	tn.send(t, 0, withTTL(packet(0, 1, 1400, 4), 64, true))
	if _, ok := tn.recv(0, 100*time.Millisecond); ok {
		t.Error("a black hole answered")
	}
	if _, ok := tn.recv(1, 10*time.Millisecond); ok {
		t.Error("a packet larger than the MTU crossed")
	}
	st := tn.eng.Stats()
	if st.Dirs[0].MTUDrops != 3 || st.ICMPSent != 1 {
		t.Errorf("mtu drops %d, ICMP sent %d; want 3 and 1", st.Dirs[0].MTUDrops, st.ICMPSent)
	}
}

func TestEngineHops(t *testing.T) {
	r1, r2 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	tn := twoHosts(t, DirConfig{Delay: 30 * time.Millisecond, Hops: []netip.Addr{r1, r2}})
	for ttl, from := range map[byte]netip.Addr{1: r1, 2: r2} {
		sent := time.Now()
		tn.send(t, 0, withTTL(packet(0, 1, 100, uint32(ttl)), ttl, false))
		p, ok := tn.recv(0, 2*time.Second)
		if !ok {
			t.Fatalf("TTL %d: no time exceeded came back", ttl)
		}
		// Hop k of 2 sits at k/3 of the 30 ms: the error takes twice that.
		if took, want := time.Since(sent), time.Duration(ttl)*20*time.Millisecond; took < want {
			t.Errorf("TTL %d: the error came back after %v, before the %v there and back", ttl, took, want)
		}
		if icmp := checkICMP(t, p, from, uint32(ttl)); icmp[0] != 11 || icmp[1] != 0 {
			t.Errorf("TTL %d: ICMP type %d code %d, want 11/0", ttl, icmp[0], icmp[1])
		}
		// As if it had crossed the routers before it on the way back.
		if want := 64 - ttl + 1; p[8] != want {
			t.Errorf("TTL %d: the error arrived with TTL %d, want %d", ttl, p[8], want)
		}
	}
	tn.send(t, 0, withTTL(packet(0, 1, 100, 3), 3, false))
	p, ok := tn.recv(1, 2*time.Second)
	if !ok {
		t.Fatal("a packet with TTL 3 did not cross 2 hops")
	}
	if p[8] != 1 || checksum(p[:20]) != 0 {
		t.Errorf("delivered with TTL %d (want 1), header checksum ok: %v", p[8], checksum(p[:20]) == 0)
	}
	// An ICMP error is never answered with another.
	e := withTTL(packet(0, 1, 100, 4), 1, false)
	e[9], e[20] = 1, 11
	tn.send(t, 0, e)
	if _, ok := tn.recv(0, 100*time.Millisecond); ok {
		t.Error("an ICMP error that expired was answered")
	}
	if st := tn.eng.Stats(); st.Dirs[0].Expired != 3 || st.ICMPSent != 2 {
		t.Errorf("expired %d, ICMP sent %d; want 3 and 2", st.Dirs[0].Expired, st.ICMPSent)
	}
}

// FuzzRouterAnswer makes routers' answers to any packet a host could
// send: an ICMP error only where RFC 1122 allows one, an ICMPv6 error
// only where RFC 4443 does, always well formed.
func FuzzRouterAnswer(f *testing.F) {
	f.Add(withTTL(packet(0, 1, 100, 1), 1, true))
	f.Add([]byte{0x45, 0, 0, 20})
	e := withTTL(packet(0, 1, 60, 2), 1, false)
	e[9], e[20] = 1, 8
	f.Add(e)
	// IPv6: a plain packet, a large one, an echo request, an ICMPv6 error,
	// one to a multicast group, a later fragment, a chain of extension
	// headers, one that runs past the packet, and a bare header.
	f.Add(withTTL(packet6(0, 1, 100, 1), 1, false))
	f.Add(packet6(0, 1, 2000, 1))
	echo6 := packet6(0, 1, 64, 3)
	echo6[6], echo6[40] = protoICMPv6, 128
	f.Add(echo6)
	err6 := bytes.Clone(echo6)
	err6[40] = icmp6TimeExceeded
	f.Add(err6)
	mc6 := packet6(0, 1, 64, 4)
	mc6[24] = 0xff
	f.Add(mc6)
	frag6 := packet6(0, 1, 64, 5)
	frag6[6], frag6[40], frag6[43] = extFragment, protoICMPv6, 0x10
	f.Add(frag6)
	chain6 := packet6(0, 1, 96, 6)
	chain6[6] = extHopByHop
	chain6[40], chain6[48], chain6[49], chain6[64] = extDestOpts, protoICMPv6, 1, 1
	f.Add(chain6)
	f.Add(chain6[:52])
	f.Add(packet6(0, 1, 40, 0))
	buf := make([]byte, icmp6MaxLen+100)
	f.Fuzz(func(t *testing.T, pkt []byte) {
		if len(pkt) > 9000 {
			return
		}
		if len(pkt) > 0 && pkt[0]>>4 == 6 {
			checkAnswer6(t, buf, pkt)
			return
		}
		if headerLen(pkt) > len(pkt) {
			t.Fatalf("header of %d bytes in a packet of %d", headerLen(pkt), len(pkt))
		}
		if !answerable(pkt) {
			return
		}
		n := icmpError(buf[:icmpMaxLen], netip.MustParseAddr("192.0.2.1"), icmpTimeExceeded, 0, 0, pkt, 63)
		if n > icmpMaxLen || n < ipHeaderLen+icmpHeader+ipHeaderLen || checksum(buf[:20]) != 0 || checksum(buf[20:n]) != 0 {
			t.Fatalf("answer of %d bytes, checksums %v %v", n, checksum(buf[:20]), checksum(buf[20:n]))
		}
	})
}

// checkAnswer6 is FuzzRouterAnswer for an IPv6 packet: its extension
// headers are walked within it, and each answer a router may make is well
// formed.
func checkAnswer6(t *testing.T, buf, pkt []byte) {
	if len(pkt) < ip6HeaderLen {
		if answerable6(pkt, true) {
			t.Fatalf("a %d-byte packet is answerable", len(pkt))
		}
		return
	}
	if _, off, _, ok := upperLayer(pkt); ok && off > len(pkt) {
		t.Fatalf("upper-layer header at %d of a %d-byte packet", off, len(pkt))
	}
	from := netip.MustParseAddr("2001:db8::1")
	for _, c := range []struct {
		tooBig bool
		typ    uint8
		mtu    uint32
	}{{false, icmp6TimeExceeded, 0}, {true, icmp6PacketTooBig, 1280}} {
		if !answerable6(pkt, c.tooBig) {
			continue
		}
		n := icmp6Error(buf, from, c.typ, 0, c.mtu, pkt, 63)
		p := buf[:n]
		pseudo := append(append([]byte{}, p[8:40]...), 0, 0, 0, 0, 0, 0, 0, protoICMPv6)
		binary.BigEndian.PutUint32(pseudo[32:], uint32(n-ip6HeaderLen))
		if n > icmp6MaxLen || n < ip6HeaderLen+icmpHeader+ip6HeaderLen || int(binary.BigEndian.Uint16(p[4:])) != n-ip6HeaderLen ||
			checksum(append(pseudo, p[ip6HeaderLen:]...)) != 0 || !bytes.Equal(p[24:40], pkt[8:24]) || !bytes.Equal(p[48:], pkt[:n-48]) {
			t.Fatalf("answer %d of %d bytes to a %d-byte packet: payload length %d, checksum %#x", c.typ, n, len(pkt),
				binary.BigEndian.Uint16(p[4:]), checksum(append(pseudo, p[ip6HeaderLen:]...)))
		}
	}
}

// A capture sees what leaves a direction and what its model drops, with why.
func TestEngineCapture(t *testing.T) {
	tn := twoHosts(t, DirConfig{})
	c, err := tn.eng.StartCapture([]int{0}, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tn.eng.StartCapture([]int{0}, 64); err == nil {
		t.Error("a second capture of one direction was started")
	}
	tn.send(t, 0, packet(0, 1, 200, 1))
	if _, ok := tn.recv(1, 2*time.Second); !ok {
		t.Fatal("packet 1 never arrived")
	}
	tn.eng.Set(0, DirConfig{Loss: LossConfig{Random: 1}})
	tn.send(t, 0, packet(0, 1, 100, 2))
	tn.send(t, 1, packet(1, 0, 100, 3)) // the other direction is not captured
	time.Sleep(50 * time.Millisecond)
	var got []CapturedPacket
	c.Read(func(p CapturedPacket) error {
		p.Data = append([]byte(nil), p.Data...)
		got = append(got, p)
		return nil
	})
	if len(got) != 2 {
		t.Fatalf("captured %d packets, want 2: %+v", len(got), got)
	}
	if got[0].Reason != Passed || got[0].OrigLen != 200 || len(got[0].Data) != 64 || binary.BigEndian.Uint32(got[0].Data[20:]) != 1 {
		t.Errorf("first: %+v", got[0])
	}
	if got[1].Reason != ByLoss || got[1].OrigLen != 100 || got[1].At.Before(got[0].At) {
		t.Errorf("second: %+v", got[1])
	}
	tn.eng.StopCapture(c)
	if _, err := tn.eng.StartCapture([]int{0}, 10); err == nil {
		t.Error("a snap length of 10 was accepted")
	}
	if _, err := tn.eng.StartCapture([]int{0}, 64); err != nil {
		t.Errorf("after the capture stopped another could not start: %v", err)
	}
}
