package measure

import (
	"math"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/tcpwatch"
)

// TestWatchedConnSums feeds a sender's samples 10 ms apart whose kernel
// counts busy time in 4 ms jiffies: idle half the time, in 20 ms stretches.
// Over one 10 ms interval the shares are off by up to 40%; over the
// connection, and each point's 100 ms window, they are right.
func TestWatchedConnSums(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	c := &WatchedConn{}
	var busy, acked uint64
	for i := range 101 {
		t0 := start.Add(time.Duration(i) * 10 * time.Millisecond)
		// Busy in the first 20 ms of every 40, counted in 4 ms steps.
		if i > 0 && (i-1)%4 < 2 {
			busy += []uint64{8000, 12000}[i%2]
			acked += 1_250_000 // 1 Gbit/s for 10 ms
		}
		c.add(start, &tcpwatch.Sample{T: t0.UnixNano(), MSS: 1448, Cwnd: 100, RTT: 6000, BytesAcked: acked, Delivered: uint32(acked / 1448), Busy: busy})
	}
	c.finish()
	if !c.Sender {
		t.Fatal("a connection that only sent is not taken as a sender")
	}
	if math.Abs(c.Limited.App-0.5) > 0.01 {
		t.Errorf("application-limited %.3f over the connection, want 0.5", c.Limited.App)
	}
	for _, p := range c.Series[10:] {
		if math.Abs(p.Limited.App-0.5) > 0.15 {
			t.Errorf("at %.2f s application-limited %.2f over the last 100 ms, want about 0.5", p.T, p.Limited.App)
		}
	}
	if math.Abs(c.ThroughputBPS-500e6) > 5e6 {
		t.Errorf("throughput %.4g, want 500e6 (half of 1 Gbit/s)", c.ThroughputBPS)
	}
	if c.Seconds != 1 || c.Bytes != acked {
		t.Errorf("seconds %v and bytes %d, want 1 and %d", c.Seconds, c.Bytes, acked)
	}
	r := &WatchResult{Host: "h", Start: start, Connections: []*WatchedConn{{Local: "10.0.0.1:1", Remote: "10.0.0.2:2", Sender: true, Series: c.Series[:1]}}}
	subjects := map[string]int{}
	for _, s := range r.Samples() {
		subjects[s.Subject]++
		if s.Metric == results.TCPLimitedApp && (s.Value < 0 || s.Value > 1) {
			t.Errorf("a share of %v", s.Value)
		}
	}
	if subjects["tcp h 10.0.0.1:1->10.0.0.2:2"] == 0 {
		t.Errorf("samples named %v", subjects)
	}
}
