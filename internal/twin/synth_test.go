package twin

import (
	"math"
	"math/rand/v2"
	"time"
)

// A synthetic path whose truth the tests set, and the campaign its
// measurements would give: the emulator's model (rate, delay with uniform
// jitter, a drop-tail queue, Bernoulli or Gilbert-Elliott loss, cross
// traffic that takes its share of the rate) measured by the plan's steps
// with their noise. The fit never sees the truth.

// dirTruth is one direction's truth.
type dirTruth struct {
	rate   float64 // bit/s
	delay  float64 // s, the centre of the jitter
	jitter float64 // s, half-width
	queue  float64 // BDPs of the base round trip
	loss   float64 // Bernoulli's probability (ge nil)
	ge     *GE
	cross  float64 // share of the rate, mean
	onoff  bool    // cross traffic on at 2x its mean half the time (periods of seconds)
}

// truth is a path, and what happens during its campaign.
type truth struct {
	dir    [2]dirTruth
	synced bool
	mtu    int
	seed   uint64
	// rateStep, at stepAt, multiplies the forward rate; routeStep adds
	// to both delays.
	stepAt    time.Duration
	rateStep  float64
	routeStep float64
	// skip leaves measurements out: "loads", "capacity", "available", "probes".
	skip map[string]bool
	// availables are the available-bandwidth estimates each way (2 unless set).
	availables int
	// tcpLoads makes the loads TCP ones (a campaign before the UDP
	// overload), whose received rate says nothing of the cross traffic.
	tcpLoads bool
	// availLow is the share of the rate the available-bandwidth trains
	// read short (a sender that cannot keep up with a fast path).
	availLow float64
}

// queueBytes is the direction's queue in bytes, as the test-bed would
// have it (at least four full packets).
func (tr truth) queueBytes(i int) float64 {
	d := tr.dir[i]
	return max(d.queue*d.rate*(tr.dir[0].delay+tr.dir[1].delay)/8, 4*1500)
}

// geMean is a chain's long-run loss.
func geMean(g *GE) float64 { return g.P / (g.P + g.R) }

func (d dirTruth) meanLoss() float64 {
	if d.ge != nil {
		return geMean(d.ge)
	}
	return d.loss
}

// synth generates the campaign of a truth, in the order NewPlan lists its
// steps, from t0.
type synth struct {
	tr     truth
	rng    *rand.Rand
	now    time.Time
	t0     time.Time
	bad    [2]bool // each way's Gilbert-Elliott state
	offset time.Duration
	on     [2][]time.Duration // each way's onoff switching times
	c      Campaign
}

var t0 = time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)

func campaignOf(tr truth) Campaign {
	s := &synth{tr: tr, rng: rand.New(rand.NewPCG(tr.seed, 35)), now: t0, t0: t0}
	if !tr.synced {
		s.offset = time.Duration(s.rng.NormFloat64() * float64(50*time.Millisecond))
	}
	for i := range 2 {
		at := time.Duration(0)
		for at < 10*time.Minute {
			at += time.Duration(s.rng.ExpFloat64() * float64(4*time.Second))
			s.on[i] = append(s.on[i], at)
		}
	}
	s.c = Campaign{A: "a", B: "b"}
	ways := [2][2]string{{"a", "b"}, {"b", "a"}}
	for i := range 2 {
		s.c.MTUs = append(s.c.MTUs, MTU{From: ways[i][0], To: ways[i][1], Bytes: tr.mtu, Source: "the hosts' MTU (inventory)"})
	}
	for i := range 2 {
		s.capacity(i)
	}
	s.round(0, 1500)
	for i := range 2 {
		s.available(i)
	}
	for range tr.availables - 2 {
		for i := range 2 {
			s.available(i)
		}
	}
	for i := range 2 {
		s.load(i)
	}
	for i := range 2 {
		s.throughput(i)
	}
	for i := range 2 {
		s.available(i)
	}
	for i := range 2 {
		s.capacity(i)
	}
	s.round(1, 750)
	return s.c
}

func (s *synth) since() time.Duration { return s.now.Sub(s.t0) }

// rate and delay are way i's now, after a step.
func (s *synth) rate(i int) float64 {
	r := s.tr.dir[i].rate
	if i == 0 && s.tr.rateStep > 0 && s.since() >= s.tr.stepAt {
		r *= s.tr.rateStep
	}
	return r
}

func (s *synth) delay(i int) float64 {
	d := s.tr.dir[i].delay
	if s.tr.routeStep != 0 && s.since() >= s.tr.stepAt {
		d += s.tr.routeStep
	}
	return d
}

// crossNow is way i's share of cross traffic now.
func (s *synth) crossNow(i int) float64 {
	d := s.tr.dir[i]
	if !d.onoff {
		return d.cross
	}
	k := 0
	for k < len(s.on[i]) && s.on[i][k] <= s.since() {
		k++
	}
	if k%2 == 0 {
		return 2 * d.cross
	}
	return 0
}

// owd is a packet's one-way delay on way i now: the delay, the jitter,
// the probe's time at the rate and its wait in the queue: queued where a
// load fills it (cross traffic's packets are among those), else behind
// cross traffic (queued < 0).
func (s *synth) owd(i int, size int, queued float64) float64 {
	d := s.tr.dir[i]
	rate := s.rate(i)
	v := s.delay(i) + (2*s.rng.Float64()-1)*d.jitter + float64(8*(size+headerBytes))/rate + max(0, queued)
	if rho := s.crossNow(i); queued < 0 && rho > 0 && s.rng.Float64() < rho {
		pkt := 1500 * 8 / rate
		v += s.rng.ExpFloat64() * pkt * (0.5 + rho/(2*(1-rho)))
	}
	return v
}

// lost draws way i's loss of one packet.
func (s *synth) lost(i int) bool {
	d := s.tr.dir[i]
	if d.ge == nil {
		return s.rng.Float64() < d.loss
	}
	if s.bad[i] {
		s.bad[i] = s.rng.Float64() >= d.ge.R
	} else {
		s.bad[i] = s.rng.Float64() < d.ge.P
	}
	return s.bad[i]
}

const synthSize = 64

// probes sends n probes out on way i0 (10 ms apart), queued is the
// added delay of each way at a time since the probes began.
func (s *synth) probes(i0, n int, queued func(i int, at time.Duration) float64, lossy bool) ProbeRound {
	ways := [2][2]string{{"a", "b"}, {"b", "a"}}
	r := ProbeRound{From: ways[i0][0], To: ways[i0][1], Size: synthSize, Synchronised: s.tr.synced}
	count := uint32(0)
	start := s.now
	for range n {
		at := s.now.Sub(start)
		p := Probe{Sent: s.now}
		out, back := s.owd(i0, synthSize, queued(i0, at)), s.owd(1-i0, synthSize, queued(1-i0, at))
		switch {
		case lossy && s.lost(i0):
			p.Lost = true
		default:
			count++
			if lossy && s.lost(1-i0) {
				p.Lost = true
				break
			}
			p.ReflectorCount = count
			off := s.offset
			if i0 == 1 {
				off = -off
			}
			p.Forward = time.Duration((out)*1e9) + off
			p.Back = time.Duration((back)*1e9) - off
			p.RTT = time.Duration((out + back) * 1e9)
		}
		r.Probes = append(r.Probes, p)
		s.now = s.now.Add(10 * time.Millisecond)
	}
	s.now = s.now.Add(2 * time.Second)
	return r
}

func none(int, time.Duration) float64 { return -1 }

func (s *synth) round(i0, n int) {
	if s.tr.skip["probes"] {
		return
	}
	s.c.Probes = append(s.c.Probes, s.probes(i0, n, none, true))
}

func (s *synth) way(i int) (string, string) {
	if i == 0 {
		return "a", "b"
	}
	return "b", "a"
}

// capacity is a capacity estimate: the highest cluster of the trains is
// the rate within 1%; cross traffic pulls the quartiles down.
func (s *synth) capacity(i int) {
	s.now = s.now.Add(1500 * time.Millisecond)
	if s.tr.skip["capacity"] {
		return
	}
	from, to := s.way(i)
	c := s.rate(i)
	s.c.Capacity = append(s.c.Capacity, RateSample{From: from, To: to, At: s.now, BPS: c * (1 + 0.01*s.rng.NormFloat64()),
		Low: c * (1 - 0.3*s.crossNow(i)), High: c * 1.01, N: 30})
}

// available is an available-bandwidth estimate (its own capacity first):
// the rate less the cross traffic then, within pathload's resolution.
func (s *synth) available(i int) {
	s.capacity(i)
	s.now = s.now.Add(5 * time.Second)
	if s.tr.skip["available"] {
		return
	}
	from, to := s.way(i)
	c := s.rate(i)
	a := min(c, max(0, c*(1-s.crossNow(i)-s.tr.availLow)+0.02*c*s.rng.NormFloat64()))
	s.c.Available = append(s.c.Available, RateSample{From: from, To: to, At: s.now, BPS: a, Low: a - 0.02*c, High: a + 0.02*c, N: 8})
}

// load is an impact test of way i: 2 s of probes, then 8 s of a TCP
// load whose window saws the queue from half of what it holds (with the
// path) up to full, where it loses.
func (s *synth) load(i int) {
	if s.tr.skip["loads"] {
		s.now = s.now.Add(15 * time.Second)
		return
	}
	if !s.tr.tcpLoads {
		s.overload(i)
		return
	}
	from, to := s.way(i)
	l := LoadTest{LoadFrom: from, LoadTo: to, Start: s.now, Streams: 1, Retransmits: 40}
	l.Before = s.probes(i, 200, none, true)
	rate := s.rate(i)
	full := s.tr.queueBytes(i) * 8 / rate
	rtt := s.delay(0) + s.delay(1)
	low := max(0, full-(full+rtt)/2)
	saw := time.Duration((0.3 + 2*(full+rtt)) * 1e9)
	queued := func(w int, at time.Duration) float64 {
		if w != i {
			return -1
		}
		x := float64(at%saw) / float64(saw)
		return low + x*(full-low)
	}
	s.now = s.now.Add(time.Second)
	l.During = s.probes(i, 650, queued, false)
	l.ThroughputBPS = rate * (1 - s.tr.dir[i].cross) * 0.9
	s.c.Loads = append(s.c.Loads, l)
	s.c.Throughput = append(s.c.Throughput, ThroughputSample{From: from, To: to, At: l.Start, Streams: 1, BPS: l.ThroughputBPS, Retransmits: 40, Seconds: 8})
}

// overload is an impact test of way i under a UDP load at Overload
// times the rate for 6 s: the queue fills at what the load and the cross
// traffic bring above the rate, then stays full (probes drop in
// proportion); what gets through is the rate less the cross traffic,
// thinned by the random loss.
func (s *synth) overload(i int) {
	from, to := s.way(i)
	l := LoadTest{LoadFrom: from, LoadTo: to, Start: s.now, UDP: true, Streams: 2}
	l.Before = s.probes(i, 200, none, true)
	rate := s.rate(i)
	full := s.tr.queueBytes(i) * 8 / rate
	l.TargetBPS = Overload * rate * (1 + 0.01*s.rng.NormFloat64())
	var crossSum float64
	var elapsed time.Duration
	queued := func(w int, at time.Duration) float64 {
		if w != i {
			return -1
		}
		cross := s.crossNow(i)
		crossSum, elapsed = crossSum+cross, elapsed+1
		// Seconds of queue gained a second: the excess arrival over the rate.
		return min(full, (at+time.Second).Seconds()*max(l.TargetBPS/rate+cross-1, 0.01))
	}
	s.now = s.now.Add(time.Second)
	l.During = s.probes(i, 450, queued, true)
	for k := range l.During.Probes {
		// A full queue drops what arrives above the rate.
		if s.rng.Float64() < 1-1/(l.TargetBPS/rate+s.tr.dir[i].cross) {
			l.During.Probes[k] = Probe{Sent: l.During.Probes[k].Sent, Lost: true}
		}
	}
	l.SentBPS = l.TargetBPS * 0.995
	l.ThroughputBPS = rate * (1 - crossSum/max(float64(elapsed), 1)) * (1 - s.tr.dir[i].meanLoss()) * (1 + 0.005*s.rng.NormFloat64())
	s.c.Loads = append(s.c.Loads, l)
}

func (s *synth) throughput(i int) {
	from, to := s.way(i)
	s.now = s.now.Add(6 * time.Second)
	s.c.Throughput = append(s.c.Throughput, ThroughputSample{From: from, To: to, At: s.now, Streams: 8,
		BPS: s.rate(i) * (1 - s.tr.dir[i].cross) * 0.95, Retransmits: 200, Seconds: 5})
}

// within says got is within tol of want (relative) or abs of it.
func within(got, want, rel, abs float64) bool {
	return math.Abs(got-want) <= max(rel*math.Abs(want), abs)
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 7)) }
