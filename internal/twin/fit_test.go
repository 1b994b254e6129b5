package twin

import (
	"fmt"
	"math"
	"testing"
)

// check compares a twin with the truth it was fitted to, against the
// issue's targets: capacity within 5%, base round trip within 1 ms or 2%,
// queue within 25%, cross traffic's mean within 10% of the capacity, the
// loss's truth within the fit's interval, the right loss model.
type verdict struct {
	rate, rtt, oneWay, queue, cross, lossIn, model bool
	decided                                        bool
}

func judge(tr truth, tw *Twin) (v verdict, msgs []string) {
	fits := [2]*Fit{&tw.Forward, &tw.Reverse}
	v = verdict{rate: true, rtt: true, oneWay: true, queue: true, cross: true, lossIn: true, model: true, decided: true}
	fail := func(ok *bool, format string, args ...any) {
		*ok = false
		msgs = append(msgs, fmt.Sprintf(format, args...))
	}
	rtt := tr.dir[0].delay + tr.dir[1].delay + 2*tr.routeStep
	if got := fits[0].DelayS + fits[1].DelayS; !within(got, rtt, 0.02, 1e-3) {
		fail(&v.rtt, "base RTT %.4f ms, truth %.4f ms", got*1e3, rtt*1e3)
	}
	for i, f := range fits {
		d := tr.dir[i]
		rate := d.rate
		if i == 0 && tr.rateStep > 0 {
			rate *= tr.rateStep
		}
		if !within(f.RateBPS, rate, 0.05, 0) {
			fail(&v.rate, "way %d: rate %.4g, truth %.4g", i, f.RateBPS, rate)
		}
		if tr.synced && !within(f.DelayS, d.delay+tr.routeStep, 0.02, 1e-3) {
			fail(&v.oneWay, "way %d: delay %.4f ms, truth %.4f ms", i, f.DelayS*1e3, (d.delay+tr.routeStep)*1e3)
		}
		q := tr.queueBytes(i)
		if tr.rateStep > 0 && i == 0 {
			q *= tr.rateStep
		}
		if !within(float64(f.QueueBytes), q, 0.25, 0) {
			fail(&v.queue, "way %d: queue %d, truth %.0f (%s)", i, f.QueueBytes, q, f.Evidence[KeyQueue].Evidence)
		}
		if !within(f.CrossBPS, d.cross*rate, 0, 0.1*rate) {
			fail(&v.cross, "way %d: cross %.4g, truth %.4g", i, f.CrossBPS, d.cross*rate)
		}
		e := f.Evidence[KeyLoss]
		if m := d.meanLoss(); m < e.Low || m > e.High {
			fail(&v.lossIn, "way %d: loss truth %.4g outside %.4g-%.4g (%s)", i, m, e.Low, e.High, e.Evidence)
		}
		want := Bernoulli
		if d.ge != nil {
			want = GilbertElliott
		}
		if f.Evidence[KeyModel].Default {
			v.decided = false
		} else if f.LossModel != want {
			fail(&v.model, "way %d: model %s, truth %s (%s)", i, f.LossModel, want, f.Evidence[KeyModel].Evidence)
		}
	}
	return v, msgs
}

// knownTruth are paths across the ranges: rates 5 Mbit/s-1
// Gbit/s, round trips 1-300 ms, queues 0.2-4 BDP, Bernoulli and
// Gilbert-Elliott loss, 0-60% cross traffic, asymmetric paths, clocks
// synchronised or not.
var knownTruth = []struct {
	name string
	tr   truth
}{
	{"5Mbit-300ms-bernoulli", truth{seed: 1, mtu: 1500, dir: [2]dirTruth{
		{rate: 5e6, delay: 0.15, jitter: 0.5e-3, queue: 0.5, loss: 0.01, cross: 0.2},
		{rate: 5e6, delay: 0.15, jitter: 0.5e-3, queue: 0.5, loss: 0.01, cross: 0.2}}}},
	{"1Gbit-1ms-ge-synced", truth{seed: 2, mtu: 9000, synced: true, dir: [2]dirTruth{
		{rate: 1e9, delay: 0.5e-3, jitter: 20e-6, queue: 4, ge: &GE{P: 0.004, R: 0.2, BadLoss: 1}},
		{rate: 1e9, delay: 0.5e-3, jitter: 20e-6, queue: 4, ge: &GE{P: 0.004, R: 0.2, BadLoss: 1}}}}},
	{"100Mbit-asymmetric-synced", truth{seed: 3, mtu: 1500, synced: true, dir: [2]dirTruth{
		{rate: 100e6, delay: 0.02, jitter: 0.2e-3, queue: 1, ge: &GE{P: 0.005, R: 0.3, BadLoss: 1}, cross: 0.6},
		{rate: 20e6, delay: 0.03, jitter: 0.1e-3, queue: 2, loss: 0.005, cross: 0.1}}}},
	{"20Mbit-80ms-small-queue", truth{seed: 4, mtu: 1500, dir: [2]dirTruth{
		{rate: 20e6, delay: 0.04, jitter: 0.3e-3, queue: 0.2, ge: &GE{P: 0.01, R: 0.4, BadLoss: 1}, cross: 0.4},
		{rate: 50e6, delay: 0.04, jitter: 0.3e-3, queue: 0.3, loss: 0.02, cross: 0}}}},
	{"300Mbit-150ms-2BDP", truth{seed: 5, mtu: 1500, dir: [2]dirTruth{
		{rate: 300e6, delay: 0.075, jitter: 0.1e-3, queue: 2, loss: 0.005, cross: 0.3},
		{rate: 300e6, delay: 0.075, jitter: 0.1e-3, queue: 2, loss: 0.005, cross: 0.3}}}},
	{"10Mbit-10ms-lossless", truth{seed: 6, mtu: 1500, dir: [2]dirTruth{
		{rate: 10e6, delay: 0.005, jitter: 0.1e-3, queue: 1, cross: 0.5},
		{rate: 10e6, delay: 0.005, jitter: 0.1e-3, queue: 1}}}},
	{"rate-step", truth{seed: 7, mtu: 1500, stepAt: 35e9, rateStep: 0.5, dir: [2]dirTruth{
		{rate: 200e6, delay: 0.01, jitter: 0.1e-3, queue: 1, loss: 0.01, cross: 0.2},
		{rate: 200e6, delay: 0.01, jitter: 0.1e-3, queue: 1, loss: 0.01}}}},
	{"route-change", truth{seed: 8, mtu: 1500, stepAt: 25e9, routeStep: 0.015, dir: [2]dirTruth{
		{rate: 50e6, delay: 0.02, jitter: 0.2e-3, queue: 1, loss: 0.01},
		{rate: 50e6, delay: 0.02, jitter: 0.2e-3, queue: 1, loss: 0.01}}}},
	// A fast path whose available-bandwidth trains read 40% short: the
	// loads above the capacity see no cross traffic.
	{"1Gbit-trains-short", truth{seed: 10, mtu: 1500, availLow: 0.4, dir: [2]dirTruth{
		{rate: 1e9, delay: 0.02, jitter: 0.1e-3, queue: 1, loss: 0.002},
		{rate: 600e6, delay: 0.02, jitter: 0.1e-3, queue: 2, cross: 0.2}}}},
	// An older campaign's TCP loads: the cross traffic from the trains.
	{"tcp-loads", truth{seed: 11, mtu: 1500, tcpLoads: true, dir: [2]dirTruth{
		{rate: 100e6, delay: 0.02, jitter: 0.2e-3, queue: 1, loss: 0.005, cross: 0.3},
		{rate: 50e6, delay: 0.02, jitter: 0.2e-3, queue: 0.5}}}},
	{"onoff-cross", truth{seed: 9, mtu: 1500, availables: 12, dir: [2]dirTruth{
		{rate: 100e6, delay: 0.03, jitter: 0.2e-3, queue: 1, loss: 0.01, cross: 0.3, onoff: true},
		{rate: 100e6, delay: 0.03, jitter: 0.2e-3, queue: 1, loss: 0.01}}}},
}

func TestKnownTruth(t *testing.T) {
	for _, tc := range knownTruth {
		t.Run(tc.name, func(t *testing.T) {
			tw, err := New(campaignOf(tc.tr))
			if err != nil {
				t.Fatal(err)
			}
			_, msgs := judge(tc.tr, tw)
			for _, m := range msgs {
				t.Error(m)
			}
			loadsScenario(t, tw)
		})
	}
}

// TestKnownTruthSuite fits random paths across the ranges and counts how
// often each target is met: the issue asks the model's choice in 90% of
// cases at least, and so the loss's 95% interval (the others are met in
// every case above).
func TestKnownTruthSuite(t *testing.T) {
	const n = 40
	var met struct{ rate, rtt, queue, cross, lossIn, model, decided int }
	for k := range n {
		tr := randomTruth(uint64(100 + k))
		tw, err := New(campaignOf(tr))
		if err != nil {
			t.Fatal(err)
		}
		v, msgs := judge(tr, tw)
		for _, m := range msgs {
			t.Logf("path %d: %s", k, m)
		}
		loadsScenario(t, tw)
		count := func(ok bool, c *int) {
			if ok {
				*c++
			}
		}
		count(v.rate, &met.rate)
		count(v.rtt, &met.rtt)
		count(v.queue, &met.queue)
		count(v.cross, &met.cross)
		count(v.lossIn, &met.lossIn)
		count(v.model, &met.model)
		count(v.decided, &met.decided)
	}
	t.Logf("of %d paths: rate %d, rtt %d, queue %d, cross %d, loss interval %d, model %d (decided %d)", n, met.rate, met.rtt, met.queue, met.cross, met.lossIn, met.model, met.decided)
	for name, c := range map[string]int{"rate": met.rate, "rtt": met.rtt, "queue": met.queue, "cross": met.cross, "loss interval": met.lossIn, "model": met.model} {
		if float64(c) < 0.9*n {
			t.Errorf("%s met in %d of %d paths, want 90%%", name, c, n)
		}
	}
}

// randomTruth is a path drawn across the ranges (log-uniform
// rates and round trips).
func randomTruth(seed uint64) truth {
	r := newRand(seed)
	logU := func(lo, hi float64) float64 { return math.Exp(math.Log(lo) + r.Float64()*(math.Log(hi)-math.Log(lo))) }
	tr := truth{seed: seed, mtu: 1500, synced: r.IntN(2) == 0}
	rtt := logU(1e-3, 0.3)
	split := 0.3 + 0.4*r.Float64()
	for i := range 2 {
		d := dirTruth{rate: logU(5e6, 1e9), delay: rtt * split, jitter: min(0.5e-3, rtt*0.02*r.Float64()), queue: logU(0.2, 4), cross: 0.6 * r.Float64()}
		if i == 1 {
			d.delay = rtt * (1 - split)
		}
		if r.IntN(2) == 0 {
			d.ge = &GE{P: logU(0.002, 0.01), R: 0.15 + 0.3*r.Float64(), BadLoss: 1}
		} else {
			d.loss = logU(0.005, 0.03)
		}
		tr.dir[i] = d
	}
	return tr
}
