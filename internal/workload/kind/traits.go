package kind

// What analysis and report read of a kind, instead of asking which kind it
// is: its Traits (data in Kind) and its specs' capabilities (small
// interfaces a Spec may implement, tested with a type assertion).

import (
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/results"
)

// Traits are what the analysis and the report of a run know of a kind's
// workloads. The zero Traits are a kind with no findings of its own and
// no sweep plots (its steps still get verdicts and summary rows).
type Traits struct {
	// Columns are the figures the summary tables of a run (wanlab run's,
	// the report's) show for each of the kind's steps, after its label and
	// status; none for a kind without (its steps get only those two).
	Columns []results.Column
	// Findings are the analysis's findings that apply to the kind's
	// workloads, in the order they are reported.
	Findings []Finding
	// Concurrency is what a step's concurrency counts, as a noun ("job"),
	// when its steps ramp such a thing (Concurrent says how many); ""
	// when they do not (a sweep's streams, or the step's number, say it).
	Concurrency string
	// Plot is the figure the kind's sweeps are plotted by, against the
	// swept value; none when its Figure is "".
	Plot Plot
	// JobPlots: a sweep also plots the servers' and clients' CPU (% of
	// their quotas) and the mean job wall-clock.
	JobPlots bool
	// JobTimes names what its jobs' times are ("job wall-clock"), whose
	// histogram the report draws; "" for none.
	JobTimes string
	// Heat: a sweep of both streams and window is also shown as a heat
	// map of the Plot's figure.
	Heat bool
	// TCPModel: a step is a memory-to-memory test whose throughput
	// (results.ThroughputMbps) the TCP model of its path bounds: the link's
	// ceiling, its window (Sender) over the round trip and the Mathis bound
	// at the path's loss. Verdicts, the model fit and the limiting factor
	// set it against that.
	TCPModel bool
	// BusyWorkers: a step keeps workers busy with tasks, so that one
	// whose efficiency (results.Efficiency) reached 95% was held by the
	// workers' CPUs, and one that waited on round trips says the workers'
	// idle share (results.WorkerIdleShare).
	BusyWorkers bool
}

// Has says whether finding f applies to the kind's workloads.
func (t Traits) Has(f Finding) bool {
	return slices.Contains(t.Findings, f)
}

// Plot is a figure plotted against a sweep's value.
type Plot struct {
	// Title and Unit say what the figure is ("throughput", "Mbit/s");
	// Figure is its plain name (results.Named).
	Title, Unit, Figure string
	// Ceiling draws the TCP ceiling of the busiest link across the plot.
	Ceiling bool
	// Ideal adds the ideal rate of a farm's steps (Farmed).
	Ideal bool
}

// Finding names one of the analysis's findings on a workload. The
// analysis keeps the table from these names to what finds them; its
// findings report them as their kind (Finding.Kind).
type Finding string

// The findings a kind's Traits may list.
const (
	// Saturation is where throughput peaks and stops growing, and the
	// bottleneck there.
	Saturation Finding = "saturation"
	// EfficientRunning is the largest concurrency whose mean job
	// wall-clock stays under k x the single job's.
	EfficientRunning Finding = "efficient_running"
	// Failures is where jobs start failing, and why.
	Failures Finding = "failures"
	// TaskFarm is what latency costs a task farm (Farmed).
	TaskFarm Finding = "taskfarm"
	// Tuning is the best streams and window of a sweep (Sender), or what
	// a single test achieved.
	Tuning Finding = "tuning"
	// ModelFit sets the steps against the TCP model of their path (on an
	// emulated path only).
	ModelFit Finding = "model_fit"
	// LimitingFactor says what limited each step: the path, the test-bed
	// or TCP (on an emulated path only).
	LimitingFactor Finding = "limiting_factor"
	// Impact is what a load did to others' round trips and loss
	// (Directed, Prober, Sender).
	Impact Finding = "impact"
	// Transfers groups a workload's steps by what limited them.
	Transfers Finding = "transfers"
	// Asymmetry compares repeated tests of one path's two directions,
	// across workloads (Reversible).
	Asymmetry Finding = "asymmetry"
)

// The capabilities of a step's spec: each is what some finding, verdict
// or plot needs to know of a step, whatever its kind.

// Concurrent is a step that runs many jobs at once.
type Concurrent interface {
	// Concurrency is how many jobs run at once, in all.
	Concurrency() float64
}

// Ended is a step with data sources (servers) and sinks (clients), whose
// CPUs may be what limited it.
type Ended interface {
	// Ends are the servers' and clients' hosts; singleThreaded says a
	// server uses one core at most.
	Ends() (servers, clients []string, singleThreaded bool)
}

// Peered is a step among hosts that are all alike, each a source and a
// sink (a mesh's nodes).
type Peered interface {
	Peers() []string
}

// Directed is a step from one host to another.
type Directed interface {
	// Path are the hosts the step's data goes from and to.
	Path() (from, to string)
}

// Reversible is a step from one host to another whose other settings are
// comparable: repeats of it in both directions can be set against each
// other.
type Reversible interface {
	Directed
	// Setting is the step's settings apart from its two hosts, a value
	// comparable with ==: equal for steps that differ only in their path.
	Setting() any
}

// Sender is a step that sends over streams.
type Sender interface {
	Sending() Sending
}

// Sending is how a step sends: over how many streams of which protocol,
// with which window.
type Sending struct {
	Protocol string // "tcp" or "udp"
	Streams  int
	Window   int64 // bytes per stream; 0, autotuned
}

// Legged is a step whose data goes over legs measured on their own (a
// transfer there and back): it is judged by each leg's own rate
// (results.LegMbps on the leg) against its path's and its disks'
// capacities, not by the step's samples.
type Legged interface {
	Legs() []Leg
}

// Leg is one leg of a step: its name (results.There, results.Back) and
// hosts.
type Leg struct {
	Name, From, To string
}

// Prober is a step that probes a path's round trip and loss besides its
// own traffic.
type Prober interface {
	// Probes are the hosts the probes go from and to.
	Probes() (from, to string)
}

// Farmed is a step of workers that take tasks from a master.
type Farmed interface {
	Farm() Farm
}

// Farm is a task farm's shape: its workers in all, how long a task
// works, and how many tasks a worker holds ahead.
type Farm struct {
	Workers  int
	Task     time.Duration
	Prefetch int
}

// Measurer is a step that measures paths: the figures of each path it
// measured, which a run on real hosts sets against the paths its
// scenario expects.
type Measurer interface {
	Measures() []PathFigures
}

// PathFigures are the figures a step holds of one path: its rate (Mbit/s),
// round trip (ms) and loss (%), each a zero Figure when not measured.
type PathFigures struct {
	From, To        string
	Rate, RTT, Loss results.Figure
}

// JobColumns are the first summary columns of a kind whose steps run jobs
// (job.Record): how many, under head, and how many ended ok, timed out and
// failed.
func JobColumns(head string) []results.Column {
	return []results.Column{
		results.Col(head, "%.0f", results.Named(results.Jobs)), results.Col("OK", "%.0f", results.JobsWith("ok")),
		results.Col("TIMEOUT", "%.0f", results.JobsWith("timeout")), results.Col("FAILED", "%.0f", results.JobsWith("failed")),
	}
}

// CPUColumn is the summary column, under head, of a role's CPU: as a share
// of its hosts' quota, or of one core where they have none.
func CPUColumn(head, role string) results.Column {
	return results.Col(head, "%.0f", results.RoleCPUFigures(role)...)
}
