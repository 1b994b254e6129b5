package kind

// Helpers of the kinds' models (issue 34): a Model's Build and Read of the
// kind's own spec type, and the cap of one TCP stream on a path, which the
// models of the kinds that stream (throughput, transfer, mesh) share.

import (
	"fmt"
	"math"

	"github.com/wanlab/wanlab/internal/sim"
)

// BuildWith makes a Model's Build from build, which takes the kind's own
// spec type S: a spec of another type is refused as "what with a T spec"
// (what such as "a probe model").
func BuildWith[S Spec](what string, build func(S, ModelEnv) ([]sim.Actor, error)) func(ModelEnv, Spec) ([]sim.Actor, error) {
	return func(env ModelEnv, spec Spec) ([]sim.Actor, error) {
		s, ok := spec.(S)
		if !ok {
			return nil, fmt.Errorf("%s with a %T spec", what, spec)
		}
		return build(s, env)
	}
}

// ReadWith makes a Model's Read from read, as BuildWith its Build.
func ReadWith[S Spec](what string, read func(S, ModelEnv, *sim.Output) (*Outcome, error)) func(ModelEnv, Spec, *sim.Output) (*Outcome, error) {
	return func(env ModelEnv, spec Spec, out *sim.Output) (*Outcome, error) {
		s, ok := spec.(S)
		if !ok {
			return nil, fmt.Errorf("%s with a %T spec", what, spec)
		}
		return read(s, env, out)
	}
}

// The params of StreamCapBPS, which calibration may fit.
const (
	// ParamTCPEfficiency is read per path first (tcp_efficiency.FROM->TO),
	// then for every path.
	ParamTCPEfficiency = "tcp_efficiency"
	ParamAutoWindow    = "autotune_window_bytes"
	// DefaultAutoWindow is the autotuned window uncalibrated: SimGrid's
	// own bound on a flow's window (network/TCP-gamma).
	DefaultAutoWindow = 4 << 20
)

// TCPParams are StreamCapBPS's params, for a Model's Params.
var TCPParams = []Param{
	{Name: ParamTCPEfficiency, Doc: "the share of its cap (window, loss bound, bottleneck) a TCP stream reaches, a fraction (1 uncalibrated); read per path as tcp_efficiency.FROM->TO first"},
	{Name: ParamAutoWindow, Doc: "the window a TCP stream reaches under the kernel's autotuning (window 0), in bytes"},
}

// TCPAssumptions are what StreamCapBPS assumes, for a Model's Assumptions.
var TCPAssumptions = []string{
	"A TCP stream is a flow of SimGrid's LV08 model capped at the lowest of its window over the path's round trip, the Mathis bound of the path's loss and the path's bottleneck, times the path's TCP efficiency: no packets, no slow start beyond the model's start-up latency, no queueing delay.",
	"A window of 0 (the kernel's autotuning) is taken as autotune_window_bytes, and the congestion control algorithm plays no part.",
}

// MSS is a TCP segment's payload on the path (an MTU of 1500 when not
// known): less the IPv4 and TCP headers and TCP timestamps.
func (p PathFacts) MSS() int {
	mtu := p.MTU
	if mtu <= 0 {
		mtu = 1500
	}
	return mtu - 52
}

// StreamCapBPS is the most one TCP stream from one host to another gets
// on path, in bit/s, for an Op's RateBPS: the lowest of its window
// (autotune_window_bytes when 0) over the round trip, the Mathis bound of
// the path's loss and the path's bottleneck, times the path's TCP
// efficiency; 0 (no cap) when nothing caps it.
func StreamCapBPS(env ModelEnv, path PathFacts, from, to string, window int64) float64 {
	if window <= 0 {
		window = int64(env.Param(ParamAutoWindow, DefaultAutoWindow))
	}
	bound := sim.MathisBPS(path.MSS(), path.RTT, path.Loss)
	if path.BottleneckBPS > 0 {
		bound = math.Min(bound, path.BottleneckBPS)
	}
	if rtt := path.RTT.Seconds(); rtt > 0 {
		bound = math.Min(bound, float64(window)*8/rtt)
	}
	if math.IsInf(bound, 1) || math.IsNaN(bound) {
		return 0
	}
	return bound * TCPEfficiency(env, from, to)
}

// PathParam is the key of a param of the path from one host to another:
// name.FROM->TO (tcp_efficiency.server->client).
func PathParam(name, from, to string) string { return name + "." + from + "->" + to }

// TCPEfficiency is the path's tcp_efficiency: the path's own
// (tcp_efficiency.FROM->TO), else every path's, else 1.
func TCPEfficiency(env ModelEnv, from, to string) float64 {
	return env.Param(PathParam(ParamTCPEfficiency, from, to), env.Param(ParamTCPEfficiency, 1))
}
