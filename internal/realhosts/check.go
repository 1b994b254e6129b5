package realhosts

import (
	"context"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
)

// Status is what a controller learns of one host's agent by saying hello.
type Status struct {
	Host  string `json:"host"`
	Agent string `json:"agent"`
	// Reachable says the agent answered and accepts this controller; Error
	// says why not, in words.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	Version   string `json:"version,omitempty"`
	// Identity is this controller as the agent sees it.
	Identity string `json:"identity,omitempty"`
	// TestAddress is where the host's peers reach its test listeners (of
	// its family), and TestAddress6 its IPv6 address, if it has one.
	TestAddress  string `json:"test_address,omitempty"`
	TestAddress6 string `json:"test_address6,omitempty"`
	Grant        *Grant `json:"grant,omitempty"`
	Clock        *Clock `json:"clock,omitempty"`
	// HelloMs is the round trip of the hello, TLS handshake included.
	HelloMs float64 `json:"hello_ms,omitempty"`
}

// Grant is what the agent's policy grants this controller.
type Grant struct {
	Rule        string   `json:"rule"`
	Kinds       []string `json:"kinds"`
	Peers       []string `json:"peers"`
	MaxDuration string   `json:"max_duration"`
	MaxStreams  uint32   `json:"max_streams"`
	MaxRateBps  uint64   `json:"max_rate_bps"`
	MaxBytes    uint64   `json:"max_bytes"`
	MaxTests    uint32   `json:"max_tests"`
	BytesPerDay uint64   `json:"bytes_per_day"`
	BytesToday  uint64   `json:"bytes_today"`
	Share       bool     `json:"share"`
}

// Clock is the agent's clock state.
type Clock struct {
	Synchronised     bool    `json:"synchronised"`
	EstimatedErrorMs float64 `json:"estimated_error_ms"`
	MaximumErrorMs   float64 `json:"maximum_error_ms"`
}

// Check says hello to every host's agent at once, each within timeout.
func Check(ctx context.Context, b *Bed, timeout time.Duration) []Status {
	out := make([]Status, len(b.inv.Hosts))
	var wg sync.WaitGroup
	for i, h := range b.inv.Hosts {
		wg.Go(func() {
			out[i] = check(ctx, b, h, timeout)
		})
	}
	wg.Wait()
	return out
}

func check(ctx context.Context, b *Bed, h Host, timeout time.Duration) Status {
	st := Status{Host: h.Name, Agent: h.Agent}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	c, err := b.Dial(ctx, h.Name)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	defer c.Close()
	st.HelloMs = float64(time.Since(start).Microseconds()) / 1000
	info := c.Info
	st.Reachable, st.Version, st.Identity = true, info.GetWanlabVersion(), info.GetIdentity()
	if host, ok := b.Topology().Host(h.Name); ok {
		st.TestAddress, st.TestAddress6 = host.Addr, host.Addr6
	}
	if g := info.GetGrant(); g != nil {
		st.Grant = grantOf(g)
	}
	if clk := info.GetClock(); clk != nil {
		st.Clock = &Clock{Synchronised: clk.GetSynchronised(), EstimatedErrorMs: float64(clk.GetEstimatedErrorNs()) / 1e6, MaximumErrorMs: float64(clk.GetMaximumErrorNs()) / 1e6}
	}
	return st
}

func grantOf(g *agentpb.Grant) *Grant {
	l := g.GetLimits()
	return &Grant{Rule: g.GetRule(), Kinds: g.GetKinds(), Peers: g.GetPeers(), MaxDuration: time.Duration(l.GetMaxDurationNs()).String(),
		MaxStreams: l.GetMaxStreams(), MaxRateBps: l.GetMaxRateBps(), MaxBytes: l.GetMaxBytes(), MaxTests: g.GetMaxTests(),
		BytesPerDay: g.GetBytesPerDay(), BytesToday: g.GetBytesToday(), Share: g.GetShare()}
}
