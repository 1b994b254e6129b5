package linkemu

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"
)

// Routers between directions: a direction's entry router, paths that
// share a direction, and paths that change while packets are on the way.

var (
	routerR1  = netip.MustParseAddr("10.251.0.1")
	routerR2  = netip.MustParseAddr("10.251.0.2")
	routerHop = netip.MustParseAddr("10.251.0.9")
)

// routerChain is host 0 -> r1 -> r2 -> host 1 over three directions of 1,
// 2 and 3 ms; r1 forwards into the second (which has hops along it), r2
// into the third (of MTU mtu, 0 for none).
// Each router also has an IPv6 address, six of its IPv4 one.
func routerChain(hops []netip.Addr, mtu int) Config {
	ms := time.Millisecond
	var hops6 []netip.Addr
	for _, h := range hops {
		hops6 = append(hops6, six(h))
	}
	return Config{Dirs: []DirConfig{
		{Name: "a->r1", Delay: ms},
		{Name: "r1->r2", Delay: 2 * ms, Entry: routerR1, Entry6: six(routerR1), Hops: hops, Hops6: hops6},
		{Name: "r2->b", Delay: 3 * ms, Entry: routerR2, Entry6: six(routerR2), MTU: mtu},
	}, Paths: map[[2]int][]int{{0, 1}: {0, 1, 2}}, Seed: 1, MaxPacket: 1500}
}

// TestRouterEntryTimeExceeded: each router along a path takes one off the
// TTL; the one where it runs out answers with time exceeded from its own
// address when the packet reaches it, the answer taking as long back and
// arriving with the TTL less the routers it crossed back.
func TestRouterEntryTimeExceeded(t *testing.T) {
	const ms = time.Millisecond
	for _, tt := range []struct {
		name  string
		hops  []netip.Addr
		ttl   byte
		from  netip.Addr    // the router that answers; zero: the packet arrives
		at    time.Duration // when the answer, or the packet, reaches its host
		ttlAt byte          // the answer's TTL, or the packet's on arrival
		dir   int           // the direction that counts the packet expired
	}{
		{"ttl 1 dies at r1", nil, 1, routerR1, 2 * ms, 64, 1},
		{"ttl 2 dies at r2", nil, 2, routerR2, 6 * ms, 63, 2},
		{"ttl 3 arrives", nil, 3, netip.Addr{}, 6 * ms, 1, 0},
		{"a hop after r1: ttl 1 dies at r1", []netip.Addr{routerHop}, 1, routerR1, 2 * ms, 64, 1},
		{"a hop after r1: ttl 2 dies at the hop", []netip.Addr{routerHop}, 2, routerHop, 4 * ms, 63, 1},
		{"a hop after r1: ttl 3 dies at r2", []netip.Addr{routerHop}, 3, routerR2, 6 * ms, 62, 2},
		{"a hop after r1: ttl 4 arrives", []netip.Addr{routerHop}, 4, netip.Addr{}, 6 * ms, 1, 0},
	} {
		for _, fam := range families {
			t.Run(fam.name+"/"+tt.name, func(t *testing.T) {
				v := newVirtualLink(t, routerChain(tt.hops, 0), 2)
				v.send(0, withTTL(fam.packet(0, 1, 100, 7), tt.ttl, false))
				v.runUntil(int64(time.Second))
				if !tt.from.IsValid() {
					got := v.arrivals(1, 0)
					if len(got) != 1 || got[0] != tt.at {
						t.Fatalf("arrivals %v, want one at %v", got, tt.at)
					}
					if p := v.ports[1].out[0].data; fam.ttl(p) != tt.ttlAt || !fam.v6 && checksum(p[:20]) != 0 {
						t.Errorf("arrived with TTL %d (header checksum %#x), want TTL %d and a valid checksum", fam.ttl(p), checksum(p[:20]), tt.ttlAt)
					}
					return
				}
				if got := v.arrivals(0, 0); len(got) != 1 || got[0] != tt.at {
					t.Fatalf("answers at %v, want one at %v", got, tt.at)
				}
				answer := v.ports[0].out[0].data
				if icmp := fam.checkError(t, answer, fam.addr(tt.from), 7); [2]uint8(icmp[:2]) != fam.timeExceeded {
					t.Errorf("ICMP type %d code %d, want time exceeded %v", icmp[0], icmp[1], fam.timeExceeded)
				}
				if fam.ttl(answer) != tt.ttlAt {
					t.Errorf("answer's TTL %d, want %d", fam.ttl(answer), tt.ttlAt)
				}
				for i := range v.m.dirStats {
					want := uint64(0)
					if i == tt.dir {
						want = 1
					}
					if got := v.m.dirStats[i].Expired.Load(); got != want {
						t.Errorf("direction %d counted %d expired, want %d", i, got, want)
					}
				}
				if len(v.ports[1].out) != 0 || v.m.inFlight.Load() != 0 {
					t.Errorf("%d delivered, %d in flight: want the packet dropped", len(v.ports[1].out), v.m.inFlight.Load())
				}
			})
		}
	}
}

// TestRouterFragNeededFromEntry: a packet too large for a direction is
// answered by the router that forwards into it, even with hops along the
// direction, quoting the packet as that router received it; the router
// checks the TTL first.
func TestRouterFragNeededFromEntry(t *testing.T) {
	const ms = time.Millisecond
	for _, tt := range []struct {
		name              string
		hops              []netip.Addr
		ttl               byte
		df                bool
		typ               uint8         // the answer's ICMP type; 0 for no answer
		from              netip.Addr    // who answers
		at                time.Duration // when the answer arrives
		ttlAt             byte          // the answer's TTL
		mtuDrops, expired uint64
	}{
		{"don't fragment: r2 answers", nil, 64, true, icmpUnreachable, routerR2, 6 * ms, 63, 1, 0},
		{"hops on the direction before: r2 still answers", []netip.Addr{routerHop}, 64, true, icmpUnreachable, routerR2, 6 * ms, 62, 1, 0},
		{"fragmentation allowed: dropped silently", nil, 64, false, 0, netip.Addr{}, 0, 0, 1, 0},
		{"the TTL runs out at r2 first", nil, 2, true, icmpTimeExceeded, routerR2, 6 * ms, 63, 0, 1},
	} {
		for _, fam := range families {
			if fam.v6 && !tt.df {
				continue // IPv6 routers never fragment: the packet is answered as with don't fragment
			}
			t.Run(fam.name+"/"+tt.name, func(t *testing.T) {
				v := newVirtualLink(t, routerChain(tt.hops, 1280), 2)
				sent := withTTL(fam.packet(0, 1, 1400, 3), tt.ttl, tt.df)
				v.send(0, bytes.Clone(sent))
				v.runUntil(int64(time.Second))
				st := &v.m.dirStats[2]
				if len(v.ports[1].out) != 0 || st.MTUDrops.Load() != tt.mtuDrops || st.Expired.Load() != tt.expired {
					t.Fatalf("%d delivered, %d MTU drops, %d expired; want 0, %d, %d",
						len(v.ports[1].out), st.MTUDrops.Load(), st.Expired.Load(), tt.mtuDrops, tt.expired)
				}
				if tt.typ == 0 {
					if len(v.ports[0].out) != 0 {
						t.Errorf("%d answers, want none", len(v.ports[0].out))
					}
					return
				}
				if got := v.arrivals(0, 0); len(got) != 1 || got[0] != tt.at {
					t.Fatalf("answers at %v, want one at %v", got, tt.at)
				}
				answer := v.ports[0].out[0].data
				icmp := fam.checkError(t, answer, fam.addr(tt.from), 3)
				want := fam.timeExceeded
				if tt.typ == icmpUnreachable {
					want = fam.tooBig
				}
				if [2]uint8(icmp[:2]) != want || fam.ttl(answer) != tt.ttlAt {
					t.Errorf("ICMP type %d code %d with TTL %d, want %v with TTL %d", icmp[0], icmp[1], fam.ttl(answer), want, tt.ttlAt)
				}
				if tt.typ == icmpUnreachable && binary.BigEndian.Uint32(icmp[4:]) != 1280 {
					t.Errorf("MTU field %d, want 1280", binary.BigEndian.Uint32(icmp[4:]))
				}
				// The quote is the packet as r2 got it: r1 and the hops took
				// their share of its TTL, r2 not yet.
				quoted := fam.quote(answer)
				if got, want := fam.ttl(quoted), tt.ttl-1-byte(len(tt.hops)); got != want {
					t.Errorf("the quoted packet has TTL %d, want %d", got, want)
				}
				// Apart from the TTL (and IPv4's header checksum), as sent.
				if want := withTTL(sent, fam.ttl(quoted), tt.df); !bytes.Equal(quoted, want[:len(quoted)]) {
					t.Error("the quote is not the packet as sent, but for its TTL")
				}
			})
		}
	}
}

// TestSharedDirectionOneQueue: two hosts that send through one router into
// one 100 Mbit/s direction share its queue: the direction delivers at its
// rate, back to back, and the drops of its one queue fall on both.
func TestSharedDirectionOneQueue(t *testing.T) {
	const (
		size   = 1250 // 100 us at 100 Mbit/s
		sends  = 800  // each, one every 125 us: 80 Mbit/s from each host
		every  = 125 * time.Microsecond
		offset = 60 * time.Microsecond
		wire   = 100 * time.Microsecond
	)
	router := netip.MustParseAddr("10.251.0.1")
	cfg := Config{Dirs: []DirConfig{
		{Name: "a->r"}, {Name: "b->r"},
		{Name: "r->c", Rate: 100e6, Delay: time.Millisecond, QueuePackets: 20, Entry: router},
	}, Paths: map[[2]int][]int{{0, 2}: {0, 2}, {1, 2}: {1, 2}}, Seed: 1, MaxPacket: 1500}
	v := newVirtualLink(t, cfg, 3)
	for i := range sends {
		at := time.Duration(i) * every
		v.runUntil(int64(at))
		v.send(0, withTTL(packet(0, 2, size, uint32(i)), 64, false))
		v.runUntil(int64(at + offset))
		v.send(1, withTTL(packet(1, 2, size, uint32(i)), 64, false))
	}
	v.runUntil(int64(time.Second))

	got := v.arrivals(2, 0)
	for k := 1; k < len(got); k++ {
		if gap := got[k] - got[k-1]; gap != wire {
			t.Fatalf("arrivals %d and %d are %v apart, want %v: the direction is never idle", k-1, k, gap, wire)
		}
	}
	from := [2]int{}
	for _, w := range v.ports[2].out {
		from[w.data[15]-1]++ // the source address's last byte is the host's index+1
	}
	shared := &v.m.dirStats[2]
	drops := shared.QueueDrops.Load()
	if n := uint64(len(got)); n != shared.Packets.Load() || n+drops != 2*sends {
		t.Errorf("%d delivered, %d counted, %d queue drops: want every one of %d packets delivered or dropped once", n, shared.Packets.Load(), drops, 2*sends)
	}
	// From the first packet to the last, the wire is busy; what the
	// queue holds then follows.
	busy := int(((sends-1)*every + offset) / wire)
	if len(got) < busy || len(got) > busy+22 {
		t.Errorf("%d delivered, want %d to %d: the link's rate over the sending", len(got), busy, busy+22)
	}
	for i := range 2 {
		if share := float64(from[i]) / float64(len(got)); share < 0.4 || share > 0.6 || from[i] == sends {
			t.Errorf("host %d: %d of %d delivered (%.2f), %d dropped: want the queue shared", i, from[i], len(got), share, sends-from[i])
		}
		if st := &v.m.dirStats[i]; st.Packets.Load() != sends || st.QueueDrops.Load() != 0 {
			t.Errorf("host %d's own direction: %d passed, %d dropped; want all %d passed", i, st.Packets.Load(), st.QueueDrops.Load(), sends)
		}
	}
}

// TestSetPathInFlight: a new path applies to the packets read after it;
// those already on their way arrive over the path they started on.
func TestSetPathInFlight(t *testing.T) {
	const ms = time.Millisecond
	router := netip.MustParseAddr("10.251.0.1")
	cfg := Config{Dirs: []DirConfig{
		{Name: "a->b", Delay: 10 * ms},
		{Name: "a->r", Delay: ms},
		{Name: "r->b", Delay: ms, Entry: router},
	}, Paths: map[[2]int][]int{{0, 1}: {0}}, Seed: 1, MaxPacket: 1500}
	v := newVirtualLink(t, cfg, 2)
	v.send(0, withTTL(packet(0, 1, 100, 1), 64, false))
	v.runUntil(int64(5 * ms))
	v.m.paths.set(0, 1, []int{1, 2})
	v.send(0, withTTL(packet(0, 1, 100, 2), 64, false))
	v.runUntil(int64(6 * ms)) // packet 2 is in r->b
	v.m.paths.set(0, 1, []int{0})
	v.send(0, withTTL(packet(0, 1, 100, 3), 64, false))
	v.runUntil(int64(time.Second))

	type arrival struct {
		seq uint32
		at  time.Duration
		ttl byte
	}
	var got []arrival
	for _, w := range v.ports[1].out {
		got = append(got, arrival{binary.BigEndian.Uint32(w.data[20:]), time.Duration(w.at), w.data[8]})
	}
	want := []arrival{{2, 7 * ms, 63}, {1, 10 * ms, 64}, {3, 16 * ms, 64}}
	if !slices.Equal(got, want) {
		t.Errorf("arrivals %+v, want %+v", got, want)
	}
	var passed []uint64
	for i := range v.m.dirStats {
		passed = append(passed, v.m.dirStats[i].Packets.Load())
	}
	if !reflect.DeepEqual(passed, []uint64{2, 1, 1}) || v.m.inFlight.Load() != 0 {
		t.Errorf("directions passed %v with %d in flight, want [2 1 1] and none", passed, v.m.inFlight.Load())
	}
}

// TestEngineSchedulesPathChange: a path change goes to the thread that
// reads its source, in that thread's numbering, and comes back from
// Applied in the engine's; a path the thread cannot carry is refused.
func TestEngineSchedulesPathChange(t *testing.T) {
	router := netip.MustParseAddr("10.251.0.1")
	dirs := []DirConfig{{Name: "b->a"}, {Name: "a->b", Delay: time.Hour}, {Name: "a->r"}, {Name: "r->b", Entry: router}}
	tn := startNetWith(t, Config{Dirs: dirs, Paths: map[[2]int][]int{{0, 1}: {1}, {1, 0}: {0}},
		Joined: [][]int{{1, 2, 3}}, Seed: 1, MaxPacket: 1500, Threads: 2}, 2)
	if n := tn.eng.Stats().Threads; n != 2 {
		t.Fatalf("%d threads, want 2", n)
	}
	for _, bad := range []PathChange{
		{From: 0, To: 1, Dirs: []int{0}}, // b->a runs with port 1
		{From: 1, To: 0, Dirs: []int{2}},
		{From: 0, To: 0},
		{From: 0, To: 5},
		{From: 0, To: 1, Dirs: []int{7}},
	} {
		if err := tn.eng.Schedule([]TimedChange{{Path: &bad}}); err == nil {
			t.Errorf("path change %+v accepted", bad)
		}
	}
	if err := tn.eng.Schedule([]TimedChange{{Path: &PathChange{From: 0, To: 1, Dirs: []int{2, 3}}, What: "reroute", Tag: "r"}}); err != nil {
		t.Fatal(err)
	}
	var applied []Applied
	for deadline := time.Now().Add(5 * time.Second); len(applied) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		applied = tn.eng.Applied()
	}
	want := []Applied{{Dir: -1, Path: &PathChange{From: 0, To: 1, Dirs: []int{2, 3}}, What: "reroute", Tag: "r"}}
	for i := range applied {
		applied[i].Due, applied[i].At = time.Time{}, time.Time{}
	}
	if !reflect.DeepEqual(applied, want) {
		t.Fatalf("applied %+v, want %+v", applied, want)
	}
	tn.send(t, 0, withTTL(packet(0, 1, 200, 1), 64, false))
	p, ok := tn.recv(1, 5*time.Second)
	if !ok || binary.BigEndian.Uint32(p[20:]) != 1 || p[8] != 63 {
		t.Fatalf("got %v (%d bytes), want packet 1 through the router, with TTL 63", ok, len(p))
	}
	if st := tn.eng.Stats(); st.Dirs[1].Packets != 0 || st.Dirs[2].Packets != 1 || st.Dirs[3].Packets != 1 {
		t.Errorf("directions passed %d, %d, %d; want the new path's 1 and 1", st.Dirs[1].Packets, st.Dirs[2].Packets, st.Dirs[3].Packets)
	}
}

// TestDecTTLKeepsTheChecksum: the incremental update leaves a header whose
// checksum verifies, whatever the header and however many routers.
func TestDecTTLKeepsTheChecksum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		h := make([]byte, 20)
		for i := range h {
			h[i] = byte(rng.UintN(256))
		}
		h[0], h[8] = 0x45, byte(1+rng.UintN(255))
		ipChecksum(h)
		n := 1 + rng.IntN(int(h[8]))
		ttl := h[8]
		decTTL(h, n)
		if h[8] != ttl-byte(n) || checksum(h) != 0 {
			t.Fatalf("TTL %d less %d: TTL %d, header % x does not verify", ttl, n, h[8], h)
		}
	}
}

// TestSetPathReuses: a pair that moves between the same two paths again
// and again (a link that flaps) adds no path after the first time each.
func TestSetPathReuses(t *testing.T) {
	var tab pathTable
	tab.init(2)
	tab.set(0, 1, []int{0})
	base := len(tab.dirs)
	for range 1000 {
		tab.set(0, 1, []int{1, 2})
		tab.set(0, 1, []int{0})
	}
	if n := len(tab.dirs) - base; n != 1 {
		t.Errorf("1000 flaps added %d paths, want 1", n)
	}
	if got := tab.dirs[tab.of[0*2+1]]; !slices.Equal(got, []int32{0}) {
		t.Errorf("the pair's path is %v, want [0]", got)
	}
	tab.set(1, 0, []int{0}) // the same directions, another pair: its own path
	if tab.of[1*2+0] == tab.of[0*2+1] || tab.dst[tab.of[1*2+0]] != 0 {
		t.Errorf("pair 1->0 shares pair 0->1's path")
	}
}
