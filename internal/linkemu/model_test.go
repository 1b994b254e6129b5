package linkemu

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

func newTestDir(cfg DirConfig) *direction {
	d := newDirection(cfg, &DirStats{})
	return &d
}

func TestSerialisationAndDelay(t *testing.T) {
	// 1250 bytes at 10 Mbit/s take exactly 1 ms on the wire.
	d := newTestDir(DirConfig{Rate: 10e6, Delay: 25 * time.Millisecond})
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		at, wantRelease int64
	}{
		{0, 26 * ms},       // idle link: 1 ms serialisation + 25 ms delay
		{0, 27 * ms},       // arrives while the first is on the wire: waits 1 ms
		{10 * ms, 36 * ms}, // link idle again
	}
	for i, tt := range tests {
		rel, v := d.admit(tt.at, 1250, rng)
		if v != pass || rel != tt.wantRelease {
			t.Errorf("packet %d at %dms: release %v (%v), want %v", i, tt.at/ms, time.Duration(rel), v, time.Duration(tt.wantRelease))
		}
	}
}

func TestQueueLimits(t *testing.T) {
	tests := []struct {
		name     string
		cfg      DirConfig
		wantPass int
	}{
		// A burst of 10 packets at t=0: the queue counts every packet not yet serialised.
		{"packets", DirConfig{Rate: 1e6, QueuePackets: 4}, 4},
		{"bytes", DirConfig{Rate: 1e6, QueueBytes: 3 * 1500}, 3},
		{"bytes not a whole packet", DirConfig{Rate: 1e6, QueueBytes: 3*1500 - 1}, 2},
		{"unlimited rate never queues", DirConfig{QueuePackets: 1}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newTestDir(tt.cfg)
			rng := rand.New(rand.NewPCG(1, 2))
			passed := 0
			for range 10 {
				if _, v := d.admit(0, 1500, rng); v == pass {
					passed++
				} else if v != dropQueue {
					t.Fatalf("verdict %v, want a queue drop", v)
				}
			}
			if passed != tt.wantPass {
				t.Errorf("%d packets passed, want %d", passed, tt.wantPass)
			}
		})
	}
}

func TestQueueDrainsAsTimePasses(t *testing.T) {
	d := newTestDir(DirConfig{Rate: 12e6, QueuePackets: 2}) // 1 ms per 1500 B
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2 {
		d.admit(0, 1500, rng)
	}
	if _, v := d.admit(0, 1500, rng); v != dropQueue {
		t.Fatal("third packet in a 2-packet queue was not dropped")
	}
	if _, v := d.admit(1*ms, 1500, rng); v != pass {
		t.Fatal("after one serialisation time a place should be free")
	}
}

func TestJitterKeepsOrderUnlessAsked(t *testing.T) {
	for _, reorder := range []bool{false, true} {
		d := newTestDir(DirConfig{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, Reorder: reorder})
		rng := rand.New(rand.NewPCG(3, 4))
		var last int64
		inversions := 0
		for i := range 10000 {
			at := int64(i) * 100_000 // one packet every 0.1 ms
			rel, _ := d.admit(at, 100, rng)
			if rel < at+5*ms || rel > at+15*ms {
				t.Fatalf("release %v outside delay +- jitter for a packet at %v", time.Duration(rel), time.Duration(at))
			}
			if rel < last {
				inversions++
			}
			last = max(last, rel)
		}
		if !reorder && inversions > 0 {
			t.Errorf("reorder off: %d packets overtook an earlier one", inversions)
		}
		if reorder && inversions == 0 {
			t.Error("reorder on: jitter of 5 ms at 0.1 ms spacing never reordered")
		}
	}
}

// binomialOK reports whether k losses in n trials fit probability p at 99.9%.
func binomialOK(k, n int, p float64) bool {
	mean := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(k)-mean) <= 3.3*sd+1
}

func TestLossModels(t *testing.T) {
	const n = 200000
	tests := []struct {
		name string
		loss LossConfig
		want float64
	}{
		{"none", LossConfig{}, 0},
		{"bernoulli 1%", LossConfig{Random: 0.01}, 0.01},
		{"bernoulli 0.1%", LossConfig{Random: 0.001}, 0.001},
		{"gilbert-elliott", LossConfig{GE: &GilbertElliott{P: 0.01, R: 0.2, BadLoss: 1}}, 0.01 / 0.21},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newTestDir(DirConfig{Loss: tt.loss})
			rng := rand.New(rand.NewPCG(5, 6))
			lost, bursts, inBurst := 0, 0, false
			for i := range n {
				_, v := d.admit(int64(i), 100, rng)
				if v == dropLoss {
					lost++
					if !inBurst {
						bursts++
					}
				}
				inBurst = v == dropLoss
			}
			if tt.loss.GE == nil {
				if !binomialOK(lost, n, tt.want) {
					t.Errorf("lost %d of %d, want about %.0f", lost, n, tt.want*n)
				}
				return
			}
			// The burst model: mean loss P/(P+R) and mean burst length 1/R.
			rate := float64(lost) / n
			if math.Abs(rate-tt.want) > 0.15*tt.want {
				t.Errorf("loss rate %.4f, want about %.4f", rate, tt.want)
			}
			if burst := float64(lost) / float64(bursts); math.Abs(burst-5) > 1 {
				t.Errorf("mean burst %.2f packets, want about 1/R = 5", burst)
			}
		})
	}
}

func TestEventHeapOrder(t *testing.T) {
	var h eventHeap
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 5000 {
		h.push(event{at: rng.Int64N(1000), seq: uint64(i)})
	}
	prev := event{at: -1}
	for h.len() > 0 {
		ev := h.pop()
		if less(ev, prev) {
			t.Fatalf("popped %+v after %+v", ev, prev)
		}
		prev = ev
	}
}

// TestPoolCap: the pool gives slots of each class up to its byte cap,
// reuses a freed one, and frees a parent only when its last piece goes.
func TestPoolCap(t *testing.T) {
	var p pool
	per := chunkBytes / 1500
	smallChunk := int64(chunkBytes / smallSlot * smallSlot)
	p.init(1500, smallChunk+2*int64(per)*1500, false)
	got, last := 0, int32(-1)
	for {
		s, buf := p.get(classPacket)
		if s < 0 {
			break
		}
		last = s
		if len(buf) != 1500 {
			t.Fatalf("slot buffer of %d bytes, want 1500", len(buf))
		}
		got++
	}
	if got != 2*per {
		t.Errorf("pool gave %d slots, want %d", got, 2*per)
	}
	p.put(last)
	if s, _ := p.get(classPacket); s != last {
		t.Errorf("freed slot not reused: got %d, want %d", s, last)
	}

	var q pool
	q.init(1500, 1<<30, true)
	parent, _ := q.get(classSuper)
	piece, _ := q.get(classSmall)
	superFree := len(q.free[classSuper])
	q.parent[piece] = parent
	q.refs[parent]++
	q.put(parent) // the packet is done; its piece still reads its payload
	if len(q.free[classSuper]) != superFree {
		t.Fatalf("the parent was freed while its piece holds it")
	}
	q.put(piece)
	if len(q.free[classSuper]) != superFree+1 || q.free[classSuper][len(q.free[classSuper])-1] != parent {
		t.Errorf("the parent was not freed with its last piece")
	}
}

func BenchmarkAdmit(b *testing.B) {
	d := newTestDir(DirConfig{Rate: 1e9, Delay: 10 * time.Millisecond, Jitter: time.Millisecond, QueueBytes: 1 << 20, Loss: LossConfig{Random: 0.001}})
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		d.admit(int64(i)*12000, 1500, rng)
	}
}

func BenchmarkEventHeap(b *testing.B) {
	var h eventHeap
	for i := range 4096 {
		h.push(event{at: int64(i), seq: uint64(i)})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ev := h.pop()
		ev.at += 4096
		h.push(ev)
	}
}

func TestAutoCoalesce(t *testing.T) {
	tests := []struct {
		name string
		cfg  DirConfig
		want time.Duration
	}{
		{"no rate", DirConfig{}, DefaultCoalesce},
		{"10 Gbit/s", DirConfig{Rate: 10e9, MTU: 9000}, DefaultCoalesce},
		{"1 Gbit/s", DirConfig{Rate: 1e9}, DefaultCoalesce},
		{"100 Mbit/s: half a 1500-byte packet", DirConfig{Rate: 100e6}, 60 * time.Microsecond},
		{"50 Mbit/s, MTU 9000", DirConfig{Rate: 50e6, MTU: 9000}, MaxAutoCoalesce},
		{"20 Mbit/s", DirConfig{Rate: 20e6, MTU: 1500}, 250 * time.Microsecond},
		{"40 Mbit/s", DirConfig{Rate: 40e6, MTU: 1500}, 150 * time.Microsecond},
		{"10 Mbit/s", DirConfig{Rate: 10e6}, MaxAutoCoalesce},
		{"a trace decides the rate", DirConfig{Rate: 10e6, Trace: &Trace{}}, DefaultCoalesce},
	}
	for _, tt := range tests {
		if got := AutoCoalesce(tt.cfg); got != tt.want {
			t.Errorf("%s: AutoCoalesce = %v, want %v", tt.name, got, tt.want)
		}
	}
}
