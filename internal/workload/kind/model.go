package kind

import (
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// Model is what a kind does on the wire and on the CPUs, as actors of a
// simulation (package sim), for the simulated backend: Build makes one
// step's actors, Read says what the step measured from what the
// simulation gave back, with the figures and jobs Run would give.
type Model struct {
	// Build returns the step's actors. Their names are unique within
	// the step: ModelEnv.Name makes them so.
	Build func(env ModelEnv, s Spec) ([]sim.Actor, error)
	// Read makes the step's outcome from the simulation's output. Its
	// jobs' and samples' times are the simulated seconds from the Unix
	// epoch (time.Unix(0, 0) is the step's start): the controller moves
	// them to when the step ran.
	Read func(env ModelEnv, s Spec, out *sim.Output) (*Outcome, error)
	// Assumptions are what the model leaves out or approximates, one
	// sentence each, for the report ("queues add no delay", ...).
	Assumptions []string
	// Params are the figures the model reads through ModelEnv.Param, which
	// calibration may fit from a measured run.
	Params []Param
	// Horizon, if set, is how long a step's simulation may run, 0 for as
	// long as its actors run; without it, the step's Length (a test of a
	// duration stops then).
	Horizon func(s Spec) time.Duration
	// Fit, if set, estimates some of Params from one step that was
	// measured (on a test-bed or real hosts), for calibration (wanlab
	// predict --calibrate): closed forms of the step's figures, such as
	// the server's CPU seconds over the pages it served. env is the
	// measured run's test-bed, uncalibrated (Param gives declared). A
	// param it cannot estimate from this step is left out of the map; the
	// calibration combines the estimates of a run's steps (their median).
	Fit func(env ModelEnv, m Measured) (map[string]float64, error)
}

// Measured is one measured step, as the archive keeps it, for Model.Fit.
type Measured struct {
	// Spec is the step's workload as the scenario defines it.
	Spec Spec
	// Metrics are the step's stored figures (results.Metrics).
	Metrics results.Metrics
	// Seconds is how long the step ran, 0 when not known.
	Seconds float64
	// Jobs are the step's jobs, if it has any.
	Jobs []job.Record
}

// HorizonOf is how long the simulation of step s of a kind of model m may
// run (Model.Horizon), 0 for as long as its actors run.
func (m *Model) HorizonOf(s Spec) time.Duration {
	if m.Horizon != nil {
		return m.Horizon(s)
	}
	return s.Length()
}

// Param is one figure of a model that calibration can fit.
type Param struct {
	// Name is the param's key (server_cpu_s_per_event).
	Name string
	// Doc says what it is, with its unit.
	Doc string
}

// ModelEnv is what a kind's model builds and reads a step with.
type ModelEnv interface {
	// Seed is the step's seed: a model that draws (random waits, peers)
	// draws from it, so that a prediction is repeatable.
	Seed() uint64
	// Hosts are the test-bed's hosts, in the scenario's order.
	Hosts() []string
	// Path is what the platform says of the path from one host to
	// another (there only).
	Path(from, to string) (PathFacts, error)
	// Name makes an actor's name unique within the step from a kind's
	// own (role and host, e.g. "client.a.3").
	Name(s string) string
	// Param is a model's figure: the calibrated value when the prediction
	// is calibrated and calibration fitted it, else declared (what the
	// scenario says, or the model's default).
	Param(name string, declared float64) float64
}

// PathFacts are a path's figures as the platform has them.
type PathFacts struct {
	// RTT is the base round trip: the propagation delays there and back.
	RTT time.Duration
	// BottleneckBPS is the lowest rate along the path (what cross traffic
	// leaves), in bits per second.
	BottleneckBPS float64
	// Loss is the chance a packet is lost along the path, there.
	Loss float64
	// MTU is the path's smallest MTU in bytes.
	MTU int
	// Congestion is the TCP congestion control of the sending host (its
	// net.ipv4.tcp_congestion_control), "" when the platform does not say.
	Congestion string
	// AccessBPS is the rate of the receiving host's site access link (the
	// lower of its directions, as declared), which a kind's Run weighs
	// peers by (Env.Bottleneck); 0 when the platform does not say.
	AccessBPS float64
}
