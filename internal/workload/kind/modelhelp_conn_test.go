package kind

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/sim"
)

func TestTCPConnMessage(t *testing.T) {
	path := PathFacts{RTT: 300 * time.Millisecond, MTU: 1500} // MSS 1448, RTO 0.5 s
	type msg struct {
		bytes int64
		idle  float64
		want  int
	}
	for _, tc := range []struct {
		name string
		cc   string
		msgs []msg
	}{
		{"one flight of the initial window", "", []msg{{14480, 0, 0}, {14481, 0, 0}}},
		{"a fresh connection's 100 KB: 10, 20, 40", "", []msg{{100_000, 0, 2}, {100_000, 0.4, 0}}},
		{"nothing to send", "", []msg{{0, 0, 0}}},
		// 79 segments, idle 1.3 s: halved twice to 19: 19, 38, 12.
		{"reno restarts after idle past the RTO", sim.Reno, []msg{{100_000, 0, 2}, {100_000, 1.3, 2}}},
		{"not below the initial window", sim.Cubic, []msg{{100_000, 0, 2}, {100_000, 60, 2}}},
		{"bbr keeps its window", sim.BBR, []msg{{100_000, 0, 2}, {100_000, 1.3, 0}}},
		{"idle within the RTO", sim.Cubic, []msg{{100_000, 0, 2}, {100_000, 0.49, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := path
			p.Congestion = tc.cc
			c := ConnOf(p)
			for i, m := range tc.msgs {
				if got := c.Message(m.bytes, m.idle); got != m.want {
					t.Errorf("message %d (%d bytes after %g s): %d round trips more, want %d", i, m.bytes, m.idle, got, m.want)
				}
			}
		})
	}
}
