package analysis

import (
	"strings"
	"testing"
)

func TestInsideTCP(t *testing.T) {
	// A sender that alternated between full rate and nothing, one that
	// kept its socket fed, and a receiver.
	alternating := &WatchedConn{Step: 1, Workload: "gridftp", Conn: "m 10.0.0.1:1->10.0.0.2:2", Sender: true, App1: []float64{0.4, 0.3}}
	fed := &WatchedConn{Step: 2, Workload: "web", Conn: "m 10.0.0.1:8080->10.0.0.2:3", Sender: true, App1: []float64{0.01, 0}, Cwnd1: []float64{0.9, 0.95}}
	receiver := &WatchedConn{Step: 2, Workload: "web", Conn: "l 10.0.0.2:3->10.0.0.1:8080"}
	for i := range 100 {
		t := float64(i) / 100
		alternating.T, fed.T, receiver.T = append(alternating.T, t), append(fed.T, t), append(receiver.T, t)
		rate := 800e6
		if i%3 == 0 {
			rate = 0
		}
		alternating.BPS = append(alternating.BPS, rate)
		fed.BPS = append(fed.BPS, 900e6)
		receiver.BPS = append(receiver.BPS, 900e6)
	}
	for _, c := range []*WatchedConn{alternating, fed, receiver} {
		c.sum()
	}
	found := InsideTCP([]*WatchedConn{alternating, fed, receiver})
	if len(found) != 2 {
		t.Fatalf("%d findings, want 2 (none for the receiver): %+v", len(found), found)
	}
	for i, want := range []string{"left the path idle: its sender had nothing to send 35% of the time", "kept the socket fed: its sender was idle 0% of the time and held by the congestion window 92%"} {
		if !strings.Contains(found[i].Text, want) || found[i].Kind != "application_limited" {
			t.Errorf("finding %d: %q, want %q", i, found[i].Text, want)
		}
	}
	if s := alternating.Stalled; s < 0.33 || s > 0.35 {
		t.Errorf("stalled %.2f, want 0.34 (every third interval)", s)
	}
	if alternating.BusyBPS != 800e6 || alternating.PeakBPS != 800e6 {
		t.Errorf("busy %v and peak %v, want 800e6", alternating.BusyBPS, alternating.PeakBPS)
	}
}
