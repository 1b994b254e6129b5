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

// FitWith makes a Model's Fit from fit, as BuildWith its Build.
func FitWith[S Spec](what string, fit func(S, ModelEnv, Measured) (map[string]float64, error)) func(ModelEnv, Measured) (map[string]float64, error) {
	return func(env ModelEnv, m Measured) (map[string]float64, error) {
		s, ok := m.Spec.(S)
		if !ok {
			return nil, fmt.Errorf("%s with a %T spec", what, m.Spec)
		}
		return fit(s, env, m)
	}
}

// The params of StreamRateBPS, which calibration may fit.
const (
	// ParamTCPEfficiency is read per path first (tcp_efficiency.FROM->TO),
	// then for every path.
	ParamTCPEfficiency = "tcp_efficiency"
	ParamAutoWindow    = "autotune_window_bytes"
	// DefaultAutoWindow is the autotuned window uncalibrated: SimGrid's
	// own bound on a flow's window (network/TCP-gamma).
	DefaultAutoWindow = 4 << 20
)

// ParamBottleneckEfficiency is the share of a path's bottleneck that
// TCP streams filling it reach together (StreamRateBPS, GoodputBPS), read
// per path (bottleneck_efficiency.FROM->TO) first, then for every path.
const ParamBottleneckEfficiency = "bottleneck_efficiency"

// TCPParams are StreamRateBPS's params, for a Model's Params.
var TCPParams = []Param{
	{Name: ParamTCPEfficiency, Doc: "the share of its own rate (its window's, under the path's loss, from slow start on) a TCP stream reaches where that rate and not the bottleneck holds it, a fraction (1 uncalibrated); read per path as tcp_efficiency.FROM->TO first"},
	{Name: ParamAutoWindow, Doc: "the window a TCP stream reaches under the kernel's autotuning (window 0), in bytes"},
	{Name: ParamBottleneckEfficiency, Doc: "the share of the path's bottleneck that TCP streams filling it reach together, a fraction (MSS/MTU uncalibrated: the TCP payload of the IP packets the links count); read per path as bottleneck_efficiency.FROM->TO first"},
}

// TCPAssumptions are what StreamRateBPS assumes, for a Model's Assumptions.
var TCPAssumptions = []string{
	"A TCP stream is a flow of SimGrid's LV08 model capped at its mean rate over the test (or over its bytes) in a fluid model of its congestion window, one round trip at a time: slow start from 10 segments; a loss every 1/p segments of the path's loss p (as the Mathis bound assumes), and one whenever it puts more in flight than its share of the bottleneck's bandwidth-delay product and a queue of half that again; the congestion control's cut and regrowth (Reno halves and adds a segment a round trip; CUBIC cuts to 0.7 and follows its cubic or its Reno-friendly line, RFC 9438; BBR does not back off on loss); never more a round trip than its window; times the path's tcp_efficiency. No packets, and no queueing delay.",
	"The congestion control is the test's own (congestion), else the sending host's (its net.ipv4.tcp_congestion_control in the scenario, else the default of the machine predicting, which a test-bed's hosts inherit), else Reno; one the model does not know (highspeed, htcp, ...) is taken as Reno.",
	"Streams that fill a path's bottleneck get bottleneck_efficiency of it together (MSS/MTU uncalibrated: the links count whole IP packets), shared equally.",
	"A window of 0 (the kernel's autotuning) is taken as autotune_window_bytes.",
}

// TCPFlow is what StreamRateBPS needs of a model's TCP stream.
type TCPFlow struct {
	// Window is the socket's window in bytes, 0 for autotuning.
	Window int64
	// Congestion is its congestion control, "" for the path's
	// (PathFacts.Congestion), else Reno.
	Congestion string
	// Streams is how many streams of the test or transfer share the
	// path's bottleneck, itself included.
	Streams int
	// Seconds is how long it sends (a test of a duration); when 0, it
	// sends Bytes.
	Seconds float64
	Bytes   int64
}

// StreamRateBPS is the mean rate, in bit/s, of one TCP stream from one host
// to another on path, for an Op's RateBPS: a fluid model of its window
// (sim.TCPStream: slow start, the path's loss, the congestion control's
// response to it) over flow's seconds or bytes, under its window
// (autotune_window_bytes when 0) and its share of GoodputBPS, times the
// path's tcp_efficiency; or that share where the stream's window over the
// round trip and its loss bound are both above it. 0 (no cap) when
// nothing caps it.
func StreamRateBPS(env ModelEnv, path PathFacts, from, to string, flow TCPFlow) float64 {
	own, rate, share := streamRate(env, path, from, to, flow)
	if !own {
		return share
	}
	rate *= TCPEfficiency(env, from, to)
	if share > 0 {
		rate = math.Min(rate, share)
	}
	return rate
}

// StreamLimited says whether what holds a stream of flow on path is its own
// rate (its window or the loss: true) rather than its share of the
// bottleneck, with that rate before any efficiency, in bit/s; for a
// model's Fit to say which efficiency a measured figure estimates.
func StreamLimited(env ModelEnv, path PathFacts, from, to string, flow TCPFlow) (bool, float64) {
	own, rate, share := streamRate(env, path, from, to, flow)
	if !own {
		return false, share
	}
	return true, rate
}

// streamRate is StreamRateBPS before the efficiency, with the stream's
// share of the bottleneck (0 when the path has no rate) and whether the
// stream's own bounds, its window over the round trip or its congestion
// control's loss bound (sim.LossBoundBPS), are below that share (or the
// path has no rate): then it, not the bottleneck, holds it.
func streamRate(env ModelEnv, path PathFacts, from, to string, flow TCPFlow) (own bool, rate, share float64) {
	window := flow.Window
	if window <= 0 {
		window = int64(env.Param(ParamAutoWindow, DefaultAutoWindow))
	}
	cc := flow.Congestion
	if cc == "" {
		cc = path.Congestion
	}
	mss := path.MSS()
	s := sim.TCPStream{MSS: mss, RTT: path.RTT, Loss: path.Loss, MaxSegments: float64(window) / float64(mss), CC: cc}
	g := GoodputBPS(env, path, from, to)
	if g <= 0 {
		rate = s.MeanBPS(flow.Seconds, float64(flow.Bytes))
		return rate > 0, rate, 0
	}
	share = g / float64(max(flow.Streams, 1))
	rtt := path.RTT.Seconds()
	if rtt <= 0 || math.Min(float64(window)*8/rtt, sim.LossBoundBPS(cc, mss, path.RTT, path.Loss)) >= share {
		return false, share, share
	}
	s.PipeSegments = share * rtt / 8 / float64(mss)
	return true, s.MeanBPS(flow.Seconds, float64(flow.Bytes)), share
}

// GoodputBPS is what TCP streams filling the path's bottleneck get of it
// together, in bit/s: the bottleneck times its bottleneck_efficiency (the
// path's, else every path's, else MSS/MTU); 0 when the path has no rate.
func GoodputBPS(env ModelEnv, path PathFacts, from, to string) float64 {
	if path.BottleneckBPS <= 0 {
		return 0
	}
	all := env.Param(ParamBottleneckEfficiency, path.WireShare())
	return path.BottleneckBPS * env.Param(PathParam(ParamBottleneckEfficiency, from, to), all)
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

// WireShare is the share of the IP bytes of a full TCP segment that is
// its payload: MSS over MTU. A model sends a stream's payload as
// payload/WireShare bytes at rate/WireShare, so that the links carry (and
// the steps' link figures count) the headers, as the test-bed's do.
func (p PathFacts) WireShare() float64 {
	mtu := p.MTU
	if mtu <= 0 {
		mtu = 1500
	}
	return float64(p.MSS()) / float64(mtu)
}

// PathParam is the key of a param of the path from one host to another:
// name.FROM->TO (tcp_efficiency.server->client).
func PathParam(name, from, to string) string { return name + "." + from + "->" + to }

// TCPEfficiency is the path's tcp_efficiency: the path's own
// (tcp_efficiency.FROM->TO), else every path's, else 1.
func TCPEfficiency(env ModelEnv, from, to string) float64 {
	return env.Param(PathParam(ParamTCPEfficiency, from, to), env.Param(ParamTCPEfficiency, 1))
}
