package crosscheck

import (
	"context"
	"fmt"
	"time"

	"github.com/wanlab/wanlab/internal/topology"
)

// pingPacket is the IP size of a default ping: 56 bytes of data, 8 of ICMP, 20 of IP.
const pingPacket = 84

// PathCheck is what one direction of a path was configured to do and what
// ping and iperf3 measured on it.
type PathCheck struct {
	From       string      `json:"from"`
	To         string      `json:"to"`
	Configured Configured  `json:"configured"`
	Ping       PingResult  `json:"rtt_ms"`
	TCP        IperfResult `json:"tcp"`
	// TCPShare is the measured TCP goodput over the path's TCP ceiling.
	TCPShare float64 `json:"tcp_share_of_ceiling"`
}

// Configured is what the scenario implies for a path.
type Configured struct {
	// RTTms is the idle round trip of a ping: propagation plus serialisation.
	RTTms         float64 `json:"rtt_ms"`
	BottleneckBPS float64 `json:"bottleneck_bps"`
	// TCPCeilingBPS is the bottleneck less IP and TCP headers.
	TCPCeilingBPS float64 `json:"tcp_ceiling_bps"`
}

// CheckOptions tunes CheckPaths.
type CheckOptions struct {
	Duration time.Duration // of each iperf3 test
	MaxPairs int           // host pairs to check at most; 0 means all
	// Step, if set, is told what is about to be measured.
	Step func(what string)
}

// Pairs returns the ordered pairs CheckPaths measures: both directions of
// every pair of hosts that can reach each other, at most maxPairs pairs.
func Pairs(t *topology.Topology, maxPairs int) []topology.Path {
	byPair := map[[2]string]topology.Path{}
	for _, p := range t.Paths {
		byPair[[2]string{p.From, p.To}] = p
	}
	var out []topology.Path
	pairs := 0
	for i, a := range t.Hosts {
		for _, b := range t.Hosts[i+1:] {
			there, ok1 := byPair[[2]string{a.Name, b.Name}]
			back, ok2 := byPair[[2]string{b.Name, a.Name}]
			if !ok1 || !ok2 || maxPairs > 0 && pairs == maxPairs {
				continue
			}
			pairs++
			out = append(out, there, back)
		}
	}
	return out
}

// CheckPaths measures each pair from Pairs with ping and iperf3 (one TCP
// stream each way) and sets the results beside the configuration.
func CheckPaths(ctx context.Context, r Runner, t *topology.Topology, o CheckOptions) ([]PathCheck, error) {
	if err := Require("ping", "iperf3"); err != nil {
		return nil, err
	}
	addr := map[string]string{}
	for _, h := range t.Hosts {
		addr[h.Name] = h.Addr
	}
	step := o.Step
	if step == nil {
		step = func(string) {}
	}
	var out []PathCheck
	for _, p := range Pairs(t, o.MaxPairs) {
		pc := PathCheck{From: p.From, To: p.To, Configured: Configured{
			RTTms:         float64(t.IdleRTT(p, pingPacket)) / float64(time.Millisecond),
			BottleneckBPS: p.Bottleneck,
			TCPCeilingBPS: p.TCPCeiling(),
		}}
		step(fmt.Sprintf("ping %s -> %s", p.From, p.To))
		var err error
		if pc.Ping, err = r.Ping(ctx, p.From, addr[p.To], 10, 100*time.Millisecond); err != nil {
			return out, err
		}
		step(fmt.Sprintf("iperf3 %s -> %s", p.From, p.To))
		pc.TCP, err = r.Iperf(ctx, IperfOptions{Client: p.From, Server: p.To, ServerAddr: addr[p.To], Duration: o.Duration})
		if err != nil {
			return out, err
		}
		if pc.Configured.TCPCeilingBPS > 0 {
			pc.TCPShare = pc.TCP.ReceivedBPS / pc.Configured.TCPCeilingBPS
		}
		out = append(out, pc)
	}
	return out, nil
}
