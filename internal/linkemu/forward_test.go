package linkemu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// errNothingToRead is a memPort's answer when no packet waits.
var errNothingToRead = errors.New("memPort: nothing to read")

// memPort is a Port in memory: what a test queues in in comes out of Read,
// and what the engine writes lands in out, stamped with the virtual clock.
type memPort struct {
	in    [][]byte
	out   []written
	clock *int64
}

// written is a packet a memPort received, and when.
type written struct {
	at   int64
	data []byte
}

func (p *memPort) Read(bufs [][]byte, sizes []int) (int, error) {
	if len(p.in) == 0 {
		return 0, errNothingToRead
	}
	n := 0
	for n < len(bufs) && len(p.in) > 0 {
		sizes[n] = copy(bufs[n], p.in[0])
		p.in = p.in[1:]
		n++
	}
	return n, nil
}

func (p *memPort) Write(heads, payloads [][]byte) (int, error) {
	for i, head := range heads {
		p.out = append(p.out, written{at: *p.clock, data: append(bytes.Clone(head), payloads[i]...)})
	}
	return len(heads), nil
}

// virtualLink drives a model through memPorts on a virtual clock: no file
// descriptor, no thread, no sleep. Every release happens at its own time,
// as a perfectly punctual engine would make it.
type virtualLink struct {
	m     model
	ports []*memPort
	now   int64
	slots []int32
	bufs  [][]byte
	sizes []int
	heads [][]byte
	pays  [][]byte
}

// virtualBatch is how many packets the virtual link reads per call, so that
// a memPort hands over more than one.
const virtualBatch = 4

func newVirtualLink(t *testing.T, cfg Config, nPorts int) *virtualLink {
	t.Helper()
	v := &virtualLink{heads: make([][]byte, 1), pays: make([][]byte, 1)}
	for i := range nPorts {
		cfg.Ports = append(cfg.Ports, PortConfig{Name: string(rune('a' + i)), FD: -1, Addr: addr(i), Addr6: addr6(i)})
		v.ports = append(v.ports, &memPort{clock: &v.now})
	}
	if err := v.m.init(cfg); err != nil {
		t.Fatal(err)
	}
	return v
}

// send queues packets at host i's port, and the engine reads them now.
func (v *virtualLink) send(i int, pkts ...[]byte) {
	v.ports[i].in = append(v.ports[i].in, pkts...)
	for len(v.ports[i].in) > 0 {
		v.slots, v.bufs = v.slots[:0], v.bufs[:0]
		for range virtualBatch {
			slot, buf := v.m.pool.get(v.m.pool.largest())
			v.slots, v.bufs = append(v.slots, slot), append(v.bufs, buf)
		}
		v.sizes = make([]int, len(v.bufs))
		n, err := v.ports[i].Read(v.bufs, v.sizes)
		for k, slot := range v.slots {
			if err == nil && k < n {
				v.m.ingest(i, slot, v.sizes[k], v.now)
				v.deliver()
				continue
			}
			v.m.pool.put(slot)
		}
	}
}

// deliver writes what the model handed out into the destinations' ports.
func (v *virtualLink) deliver() {
	for _, d := range v.m.out {
		v.heads[0], v.pays[0] = d.head, d.payload
		v.ports[d.dst].Write(v.heads, v.pays)
		v.m.drop(d.slot)
	}
	v.m.out = v.m.out[:0]
}

// runUntil moves the clock to t, making each release at its time.
func (v *virtualLink) runUntil(t int64) {
	for v.m.events.len() > 0 && v.m.events.top().at <= t {
		v.now = v.m.events.top().at
		v.m.releaseDue(v.now)
		v.deliver()
	}
	v.now = t
}

// arrivals are the times packets arrived at host i, relative to start.
func (v *virtualLink) arrivals(i int, start int64) []time.Duration {
	var out []time.Duration
	for _, w := range v.ports[i].out {
		out = append(out, time.Duration(w.at-start))
	}
	return out
}

// oneWay is a path from host 0 to host 1 over one direction, ab.
func oneWay(ab DirConfig) Config {
	ab.Name = "a->b"
	return Config{Dirs: []DirConfig{ab}, Paths: map[[2]int][]int{{0, 1}: {0}}, Seed: 1, MaxPacket: 1500}
}

func TestModelOnVirtualTime(t *testing.T) {
	const ms = time.Millisecond
	for _, tt := range []struct {
		name string
		dir  DirConfig
		// sends are how many 1000-byte packets host 0 sends at each time.
		sends map[time.Duration]int
		want  []time.Duration
		check func(t *testing.T, st *DirStats)
	}{
		{
			name:  "rate and delay",
			dir:   DirConfig{Rate: 8e6, Delay: 10 * ms}, // 1000 bytes take 1 ms
			sends: map[time.Duration]int{0: 3},
			want:  []time.Duration{11 * ms, 12 * ms, 13 * ms},
		},
		{
			name:  "an idle link serialises from the arrival",
			dir:   DirConfig{Rate: 8e6, Delay: 10 * ms},
			sends: map[time.Duration]int{0: 1, 5 * ms: 1},
			want:  []time.Duration{11 * ms, 16 * ms},
		},
		{
			name:  "loss drops after serialisation",
			dir:   DirConfig{Rate: 8e6, Loss: LossConfig{Random: 1}},
			sends: map[time.Duration]int{0: 4},
			check: func(t *testing.T, st *DirStats) {
				if st.LossDrops.Load() != 4 || st.Packets.Load() != 0 {
					t.Errorf("%d lost, %d passed: want all 4 lost", st.LossDrops.Load(), st.Packets.Load())
				}
			},
		},
		{
			name:  "queue overflow, then room as the wire drains",
			dir:   DirConfig{Rate: 8e6, QueuePackets: 2},
			sends: map[time.Duration]int{0: 5, 1500 * time.Microsecond: 1},
			want:  []time.Duration{1 * ms, 2 * ms, 3 * ms},
			check: func(t *testing.T, st *DirStats) {
				if st.QueueDrops.Load() != 3 {
					t.Errorf("%d queue drops, want 3", st.QueueDrops.Load())
				}
			},
		},
	} {
		for _, fam := range families {
			t.Run(fam.name+"/"+tt.name, func(t *testing.T) {
				v := newVirtualLink(t, oneWay(tt.dir), 2)
				var times []time.Duration
				for at := range tt.sends {
					times = append(times, at)
				}
				slices.Sort(times)
				seq := uint32(0)
				for _, at := range times {
					v.runUntil(int64(at))
					for range tt.sends[at] {
						seq++
						v.send(0, fam.packet(0, 1, 1000, seq))
					}
				}
				v.runUntil(int64(time.Second))
				if got := v.arrivals(1, 0); !slices.Equal(got, tt.want) {
					t.Errorf("arrivals %v, want %v", got, tt.want)
				}
				for k, w := range v.ports[1].out {
					if len(w.data) != 1000 {
						t.Errorf("packet %d arrived with %d bytes, want 1000", fam.seq(w.data), len(w.data))
					}
					if k > 0 && fam.seq(w.data) <= fam.seq(v.ports[1].out[k-1].data) {
						t.Errorf("packet %d arrived after %d", fam.seq(w.data), fam.seq(v.ports[1].out[k-1].data))
					}
				}
				if tt.check != nil {
					tt.check(t, &v.m.dirStats[0])
				}
				if n := v.m.inFlight.Load(); n != 0 {
					t.Errorf("%d packets still in flight", n)
				}
			})
		}
	}
}

// TestModelCutsSuperPackets: a super-packet crosses a fast direction whole
// and is cut into its wire segments on a slow one, each arriving when the
// model says.
func TestModelCutsSuperPackets(t *testing.T) {
	for _, tt := range []struct {
		name   string
		dir    DirConfig
		pieces int
	}{
		{"fast", DirConfig{Rate: 10e9, Delay: time.Millisecond}, 1},
		{"slow", DirConfig{Rate: 10e6, Delay: time.Millisecond}, 5},
	} {
		for _, fam := range families {
			t.Run(fam.name+"/"+tt.name, func(t *testing.T) {
				cfg := oneWay(tt.dir)
				cfg.Offloads = true
				v := newVirtualLink(t, cfg, 2)
				f := fam.super(0, 1, 1000, 4500, ack|psh)
				v.send(0, f)
				v.runUntil(int64(time.Second))
				got := v.ports[1].out
				if len(got) != tt.pieces {
					t.Fatalf("%d frames arrived, want %d", len(got), tt.pieces)
				}
				if tt.pieces == 1 {
					if !bytes.Equal(got[0].data, f) {
						t.Error("the super-packet did not arrive as sent")
					}
					return
				}
				var payload []byte
				wire := 0
				hdr := fam.hdr + 20 // IP and TCP
				for k, w := range got {
					ip := w.data[VnetHdrLen:]
					if w.data[1] != gsoNone || binary.BigEndian.Uint32(ip[fam.hdr+4:]) != uint32(1000+1000*k) {
						t.Errorf("segment %d: virtio-net % x, sequence %d", k, w.data[:VnetHdrLen], binary.BigEndian.Uint32(ip[fam.hdr+4:]))
					}
					// At 10 Mbit/s a byte takes 800 ns: a segment arrives a
					// millisecond after the wire carried it and all before it.
					wire += len(ip)
					if want := time.Millisecond + time.Duration(wire)*800; time.Duration(w.at) != want {
						t.Errorf("segment %d arrived at %v, want %v", k, time.Duration(w.at), want)
					}
					payload = append(payload, ip[hdr:]...)
				}
				if !bytes.Equal(payload, f[VnetHdrLen+hdr:]) {
					t.Error("the segments' payload is not the super-packet's")
				}
				if n := v.m.dirStats[0].Packets.Load(); n != 5 || v.m.dirStats[0].Bytes.Load() != uint64(5*hdr+4500) {
					t.Errorf("%d wire segments of %d bytes counted, want 5 of %d", n, v.m.dirStats[0].Bytes.Load(), 5*hdr+4500)
				}
			})
		}
	}
}

// TestModelAnswersFragNeeded: a packet too large for a direction that
// forbids fragmentation is dropped and answered with ICMP "fragmentation
// needed" carrying the direction's MTU, back to its sender; a blackhole
// direction drops it silently.
func TestModelAnswersFragNeeded(t *testing.T) {
	for _, tt := range []struct {
		name      string
		blackhole bool
		df        bool
		// answers is how many come back for IPv4, answers6 for IPv6,
		// which routers never fragment.
		answers, answers6 int
	}{
		{"don't fragment", false, true, 1, 1},
		{"fragmentation allowed", false, false, 0, 1},
		{"blackhole", true, true, 0, 0},
	} {
		for _, fam := range families {
			t.Run(fam.name+"/"+tt.name, func(t *testing.T) {
				v := newVirtualLink(t, oneWay(DirConfig{MTU: 1280, Delay: time.Millisecond, Blackhole: tt.blackhole}), 2)
				v.send(0, withTTL(fam.packet(0, 1, 1400, 9), 64, tt.df))
				v.runUntil(int64(time.Second))
				if len(v.ports[1].out) != 0 || v.m.dirStats[0].MTUDrops.Load() != 1 {
					t.Fatalf("%d packets arrived, %d MTU drops: want it dropped", len(v.ports[1].out), v.m.dirStats[0].MTUDrops.Load())
				}
				answers := tt.answers
				if fam.v6 {
					answers = tt.answers6
				}
				if len(v.ports[0].out) != answers {
					t.Fatalf("%d answers, want %d", len(v.ports[0].out), answers)
				}
				if answers == 0 {
					return
				}
				// With no router declared, the destination answers, as the
				// last router before it.
				p := v.ports[0].out[0].data
				icmp := fam.checkError(t, p, fam.addr(addr(1)), 9)
				if [2]uint8(icmp[:2]) != fam.tooBig || binary.BigEndian.Uint32(icmp[4:]) != 1280 {
					t.Errorf("ICMP type %d code %d MTU field %d, want %v with MTU 1280", icmp[0], icmp[1], binary.BigEndian.Uint32(icmp[4:]), fam.tooBig)
				}
				if fam.ttl(p) != icmpTTL || !bytes.Equal(fam.quote(p), withTTL(fam.packet(0, 1, 1400, 9), 64, tt.df)[:len(fam.quote(p))]) {
					t.Errorf("TTL %d, quote not the packet's start", fam.ttl(p))
				}
			})
		}
	}
}

// BenchmarkModelForward is one packet through the model: read into a
// slot, admitted over two directions, released and handed out.
func BenchmarkModelForward(b *testing.B) {
	benchModelForward(b, twoDirs(), packet(0, 1, 1500, 1))
}

// BenchmarkModelForwardIPv6 is BenchmarkModelForward with IPv6 packets.
func BenchmarkModelForwardIPv6(b *testing.B) {
	benchModelForward(b, twoDirs(), packet6(0, 1, 1500, 1))
}

// twoDirs are the directions of BenchmarkModelForward.
func twoDirs() []DirConfig {
	return []DirConfig{{Name: "a->r", Rate: 10e9, Delay: time.Millisecond},
		{Name: "r->b", Rate: 10e9, Delay: time.Millisecond}}
}

// BenchmarkModelForward6 is BenchmarkModelForward over six directions
// with the same delay in all, five of them behind a router that checks
// and decrements the packet's TTL: the cost of a longer path per packet.
func BenchmarkModelForward6(b *testing.B) {
	benchModelForward(b, sixDirs(), packet(0, 1, 1500, 1))
}

// BenchmarkModelForward6IPv6 is BenchmarkModelForward6 with IPv6 packets,
// whose hop limit the routers decrement.
func BenchmarkModelForward6IPv6(b *testing.B) {
	benchModelForward(b, sixDirs(), packet6(0, 1, 1500, 1))
}

// sixDirs are the directions of BenchmarkModelForward6; the routers have
// an address of each family.
func sixDirs() []DirConfig {
	var dirs []DirConfig
	for i := range 6 {
		d := DirConfig{Name: fmt.Sprintf("r%d->r%d", i, i+1), Rate: 10e9, Delay: time.Millisecond / 3}
		if i > 0 {
			d.Entry = netip.AddrFrom4([4]byte{10, 251, 0, byte(i)})
			d.Entry6 = six(d.Entry)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// benchModelForward sends a 10 Gbit/s stream of 1500-byte packets like
// pkt from host 0 to host 1 across dirs, which must add up to 2 ms of
// delay, and times one packet's way through the model.
func benchModelForward(b *testing.B, dirs []DirConfig, pkt []byte) {
	var m model
	path := make([]int, len(dirs))
	for i := range path {
		path[i] = i
	}
	cfg := Config{Dirs: dirs, Paths: map[[2]int][]int{{0, 1}: path}, Seed: 1, MaxPacket: 1500,
		Ports: []PortConfig{{Name: "a", Addr: addr(0), Addr6: addr6(0)}, {Name: "b", Addr: addr(1), Addr6: addr6(1)}}}
	if err := m.init(cfg); err != nil {
		b.Fatal(err)
	}
	pkt = withTTL(pkt, 64, false)
	now := int64(0)
	step := func() {
		slot, buf := m.pool.get(m.pool.largest())
		n := copy(buf, pkt)
		m.ingest(0, slot, n, now)
		now += 1200 // 1500 bytes at 10 Gbit/s
		m.releaseDue(now - 2*int64(time.Millisecond) - 10000)
		for _, d := range m.out {
			m.drop(d.slot)
		}
		m.out = m.out[:0]
	}
	// Fill the two milliseconds of flight first: the pool and the release
	// heap grow to them once.
	for range 10000 {
		step()
	}
	if m.dirStats[len(dirs)-1].Packets.Load() == 0 {
		b.Fatal("no packet crossed the path")
	}
	b.ReportAllocs()
	cpu := cpuMeter(b)
	n := 0
	for b.Loop() {
		step()
		n++
	}
	cpu(n)
}

// TestModelAnswersTimeExceeded: routers sit evenly along a direction's
// delay; a packet whose TTL runs out at one is answered from that router,
// the answer taking as long back as the packet took to get there.
func TestModelAnswersTimeExceeded(t *testing.T) {
	r1, r2 := netip.MustParseAddr("10.251.0.1"), netip.MustParseAddr("10.251.0.2")
	for _, tt := range []struct {
		ttl    byte
		from   netip.Addr
		answer time.Duration // when the answer reaches host 0; 0 for none
		pass   time.Duration // when the packet reaches host 1; 0 for never
	}{
		{1, r1, 2 * time.Millisecond, 0},
		{2, r2, 4 * time.Millisecond, 0},
		{3, netip.Addr{}, 0, 3 * time.Millisecond},
	} {
		for _, fam := range families {
			t.Run(fmt.Sprintf("%s/ttl %d", fam.name, tt.ttl), func(t *testing.T) {
				dir := DirConfig{Delay: 3 * time.Millisecond, Hops: []netip.Addr{r1, r2}, Hops6: []netip.Addr{six(r1), six(r2)}}
				v := newVirtualLink(t, oneWay(dir), 2)
				v.send(0, withTTL(fam.packet(0, 1, 100, 5), tt.ttl, false))
				v.runUntil(int64(time.Second))
				if tt.pass > 0 {
					if got := v.arrivals(1, 0); len(got) != 1 || got[0] != tt.pass || fam.ttl(v.ports[1].out[0].data) != tt.ttl-2 {
						t.Fatalf("arrivals %v, want one at %v with TTL %d", got, tt.pass, tt.ttl-2)
					}
					return
				}
				if got := v.arrivals(0, 0); len(got) != 1 || got[0] != tt.answer {
					t.Fatalf("answers at %v, want one at %v", got, tt.answer)
				}
				p := v.ports[0].out[0].data
				if icmp := fam.checkError(t, p, fam.addr(tt.from), 5); [2]uint8(icmp[:2]) != fam.timeExceeded || binary.BigEndian.Uint32(icmp[4:]) != 0 {
					t.Errorf("ICMP type %d code %d, unused field %#x: want time exceeded %v and 0", icmp[0], icmp[1], binary.BigEndian.Uint32(icmp[4:]), fam.timeExceeded)
				}
				// The answer crosses the hops before the one that sent it.
				if want := icmpTTL + 1 - tt.ttl; fam.ttl(p) != want {
					t.Errorf("the answer's TTL %d, want %d", fam.ttl(p), want)
				}
				if v.m.dirStats[0].Expired.Load() != 1 || len(v.ports[1].out) != 0 {
					t.Errorf("%d expired, %d delivered: want the packet dropped at the router", v.m.dirStats[0].Expired.Load(), len(v.ports[1].out))
				}
			})
		}
	}
}
