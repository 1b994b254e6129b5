package cost

import (
	"errors"
	"math"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func samples(bps ...float64) []Sample {
	var out []Sample
	for i, b := range bps {
		out = append(out, Sample{At: now.Add(-time.Duration(i+1) * time.Minute), BitsPerSecond: b, Streams: 1})
	}
	return out
}

func TestSeconds(t *testing.T) {
	cases := []struct {
		name    string
		bytes   int64
		rate    float64
		rtt     time.Duration
		streams int
		want    float64
	}{
		{"no round trip: bytes over rate", 1e6, 8e6, 0, 1, 1},
		{"within the initial window: half a round trip and the bytes", 10000, 8e6, 100 * time.Millisecond, 1, 0.05 + 10000.0/1e6},
		// 100 Mbit/s over 100 ms: a 1.25 MB window, reached after 7
		// doublings of 14480 bytes (14480*2^7 = 1.85 MB > 1.25 MB).
		{"slow start then the rate", 100e6, 100e6, 100 * time.Millisecond, 1, 0.7 + (100e6-14480*127)/12.5e6},
		{"streams share the rate", 100e6, 100e6, 0, 4, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Seconds(c.bytes, c.rate, c.rtt, c.streams); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("Seconds(%d, %g, %s, %d) = %.9f, want %.9f", c.bytes, c.rate, c.rtt, c.streams, got, c.want)
			}
		})
	}
}

func TestSteadyRateUndoesStartUp(t *testing.T) {
	rtt := 300 * time.Millisecond
	for _, rate := range []float64{5e6, 20e6, 100e6} {
		took := Seconds(10e6, rate, rtt, 1)
		s := Sample{BitsPerSecond: 10e6 * 8 / took, Bytes: 10e6, Streams: 1}
		if got := steadyRate(s, rtt); math.Abs(got-rate)/rate > 1e-3 {
			t.Errorf("steady rate of a %.2f s transfer = %g, want %g", took, got, rate)
		}
	}
}

func TestPredict(t *testing.T) {
	cases := []struct {
		name      string
		ev        Evidence
		disk      bool
		rate      float64
		limit     string
		certainty string
		caveats   int
	}{
		{
			// ../shared/seeds: 619 Mbit/s memory to memory, 250 from disk.
			name: "the source's disk is the limit, not the network",
			ev: Evidence{Throughput: samples(619e6, 600e6, 630e6), RTT: 170 * time.Millisecond,
				SrcRead: samples(250e6), DstWrite: samples(900e6)},
			disk: true, rate: 250e6, limit: "the source's disk read", certainty: "high",
		},
		{
			name: "memory to memory ignores the disks",
			ev: Evidence{Throughput: samples(619e6, 600e6, 630e6), RTT: 170 * time.Millisecond,
				SrcRead: samples(250e6), DstWrite: samples(900e6)},
			rate: 619e6, limit: "network", certainty: "high",
		},
		{
			name: "no disk test: the network, with a caveat",
			ev:   Evidence{Throughput: samples(50e6, 52e6, 48e6), RTT: 10 * time.Millisecond},
			disk: true, rate: 50e6, limit: "network", certainty: "medium", caveats: 2,
		},
		{
			name: "transfers of the path are direct evidence",
			ev:   Evidence{Throughput: samples(100e6), Transfers: []Sample{{At: now, BitsPerSecond: 30e6, Streams: 2}}},
			disk: true, rate: 30e6, limit: "disk-to-disk transfers of the path", certainty: "medium",
		},
		{
			name: "probes alone: a TCP model, low certainty",
			ev:   Evidence{RTT: 100 * time.Millisecond, Loss: 0.01, Probes: 1000, ProbesAt: now},
			rate: 1448 * 8 / 0.1 * math.Sqrt(150), limit: "TCP model of the path's loss and round-trip time", certainty: "low", caveats: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.ev.Src, c.ev.Dst = "a", "b"
			p, err := Predict(c.ev, 1e9, c.disk, now)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p.RateBitsPerSecond-c.rate)/c.rate > 1e-9 || p.Limit != c.limit || p.Certainty != c.certainty || len(p.Caveats) != c.caveats {
				t.Errorf("rate %g limit %q certainty %s caveats %q; want %g, %q, %s, %d caveats", p.RateBitsPerSecond, p.Limit, p.Certainty, p.Caveats, c.rate, c.limit, c.certainty, c.caveats)
			}
			if !(p.IntervalSeconds[0] < p.PredictedSeconds && p.PredictedSeconds < p.IntervalSeconds[1]) {
				t.Errorf("interval %v does not hold the prediction %g", p.IntervalSeconds, p.PredictedSeconds)
			}
			if p.AgeSeconds < 0 || len(p.Basis) == 0 || p.WindowBytes < 64<<10 {
				t.Errorf("age %g, basis %v, window %d", p.AgeSeconds, p.Basis, p.WindowBytes)
			}
		})
	}
}

func TestPredictRefuses(t *testing.T) {
	if _, err := Predict(Evidence{Src: "a", Dst: "b", SrcRead: samples(1e9)}, 1e9, true, now); !errors.Is(err, ErrNoData) {
		t.Errorf("a path with no data: %v, want ErrNoData", err)
	}
	if _, err := Predict(Evidence{Throughput: samples(1e9)}, 0, true, now); err == nil {
		t.Error("a zero size was accepted")
	}
}

func TestWindowIsTheBandwidthDelayProduct(t *testing.T) {
	// 1 Gbit/s over 100 ms: 12.5 MB, in 64 KiB units.
	if got := window(1e9, 100*time.Millisecond, 1); got != 191*64<<10 {
		t.Errorf("window = %d, want %d", got, 191*64<<10)
	}
	if got := window(1e9, 100*time.Millisecond, 4); got != 48*64<<10 {
		t.Errorf("window of 4 streams = %d, want %d", got, 48*64<<10)
	}
}

func TestRank(t *testing.T) {
	ev := func(src string, bps float64) Evidence {
		return Evidence{Src: src, Dst: "d", Throughput: samples(bps), RTT: 20 * time.Millisecond}
	}
	ranked, refused := Rank([]Evidence{ev("slow", 10e6), {Src: "unknown", Dst: "d"}, ev("fast", 100e6), ev("mid", 50e6)}, 100e6, false, now)
	var order []string
	for _, p := range ranked {
		order = append(order, p.Src)
	}
	if len(order) != 3 || order[0] != "fast" || order[1] != "mid" || order[2] != "slow" {
		t.Errorf("ranking %v, want fast, mid, slow", order)
	}
	if len(refused) != 1 || refused[0].Src != "unknown" {
		t.Errorf("refused %v, want unknown", refused)
	}
}

// TestPredictNamesTheTwin: a prediction names the twin of its history
// only when the history holds a measured rate and round trip of the path.
func TestPredictNamesTheTwin(t *testing.T) {
	ref := &TwinRef{Href: "/api/v1/paths/a/b/twin?from=F&to=T", FittedFrom: now.Add(-24 * time.Hour), To: now}
	for _, c := range []struct {
		name string
		ev   Evidence
		want bool
	}{
		{"TCP tests and probes", Evidence{Throughput: samples(50e6), RTT: 10 * time.Millisecond, Probes: 100, Twin: ref}, true},
		{"transfers and probes", Evidence{Transfers: samples(20e6), RTT: 10 * time.Millisecond, Probes: 100, Twin: ref}, true},
		{"no round trip", Evidence{Throughput: samples(50e6), Twin: ref}, false},
		{"probes alone: no measured rate", Evidence{RTT: 10 * time.Millisecond, Loss: 0.01, Probes: 100, ProbesAt: now, Twin: ref}, false},
		{"none offered", Evidence{Throughput: samples(50e6), RTT: 10 * time.Millisecond}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.ev.Src, c.ev.Dst = "a", "b"
			p, err := Predict(c.ev, 1e9, false, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Twin != nil; got != c.want || got && *p.Twin != *ref {
				t.Errorf("twin %+v, want one: %v", p.Twin, c.want)
			}
		})
	}
}
