package eventdb

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// TestSending: a server lets MinSending replies travel at once, or twice
// the ratio of its fastest client path to its slowest where that is more;
// only its own clients count.
func TestSending(t *testing.T) {
	path := func(bps float64) kind.PathFacts { return kind.PathFacts{RTT: time.Millisecond, BottleneckBPS: bps} }
	for _, tc := range []struct {
		name  string
		paths map[[2]string]kind.PathFacts
		want  int
	}{
		{"alike paths", map[[2]string]kind.PathFacts{{"s1", "a"}: path(100e6), {"s1", "c"}: path(100e6)}, MinSending},
		{"a slow client", map[[2]string]kind.PathFacts{{"s1", "a"}: path(100e6), {"s1", "c"}: path(1e6)}, 200},
		{"unlimited paths", map[[2]string]kind.PathFacts{{"s1", "a"}: path(0), {"s1", "c"}: path(0)}, MinSending},
		{"too unlike to bound", map[[2]string]kind.PathFacts{{"s1", "a"}: path(1e12), {"s1", "c"}: path(1e3)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// clients a, b, c, d on servers s1, s2 in turn: s1 serves a and c
			e := &Spec{Servers: []string{"s1", "s2"}, Clients: []string{"a", "b", "c", "d"}}
			env := &kindtest.ModelEnv{Paths: tc.paths, Default: path(10e3)} // s2's slow paths must not count
			got, err := e.sending(env, "s1")
			if err != nil || got != tc.want {
				t.Errorf("sending = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
