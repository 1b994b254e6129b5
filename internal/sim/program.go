// Package sim is the model program wanlab hands to its simulator (the
// simulated backend, wanlab predict): a platform (hosts, one link per link
// direction, the route of each ordered pair of hosts that talk) and actors
// that run small programs of operations on it, and what a simulation of it
// gives back. The program is data: kinds build it (their kind.Model), the
// predictor adds the platform, and bin/wanlab-sim, a C++ program on
// SimGrid (sim/wanlab-sim.cpp), runs it. Run in this package starts that
// program; everything else here is pure.
package sim

// Program is one simulation: one step of a scenario.
type Program struct {
	Platform Platform `json:"platform"`
	Config   Config   `json:"config"`
	Actors   []Actor  `json:"actors"`
	// Horizon, if not 0, ends the simulation at this simulated time, in
	// seconds: a step that lasts a duration, or a bound on a runaway.
	Horizon float64 `json:"horizon,omitempty"`
}

// Platform is the hosts and the network between them.
type Platform struct {
	Hosts []Host `json:"hosts"`
	// Links are link directions: each its own SimGrid link (a direction's
	// rate is not shared with the other direction).
	Links []Link `json:"links"`
	// Routes are the links each ordered pair of hosts crosses, in order:
	// one per pair that the actors make talk (there and back are two). Two
	// actors of one host talk over its loopback (10 Gbit/s, no delay)
	// unless a route from the host to itself is listed.
	Routes []Route `json:"routes"`
}

// Host is one host.
type Host struct {
	Name string `json:"name"`
	// Cores is how many tasks run at full Speed at once (at least 1).
	Cores int `json:"cores"`
	// Speed is how much of a core each of them gets: 1 is a whole core.
	// An Exec of S seconds takes S/Speed on an idle host (and no quota).
	Speed float64 `json:"speed"`
	// Quota, if not 0, is the host's CPU quota in cores, as Linux's CFS
	// bandwidth control enforces a cgroup's (an emulated host's cpus):
	// in each period of 100 ms from time 0, its Execs run on its Cores
	// at Speed until together they have run Quota x 0.1 s of core time,
	// then none runs until the period ends. A lone task thus runs at full
	// speed in bursts: CPU bursts shorter than the period's budget,
	// between waits, are not slowed at all. A host with a quota has
	// ceil(Quota) Cores; a Quota of Cores or more never throttles.
	Quota float64 `json:"quota,omitempty"`
	// DiskReadBPS and DiskWriteBPS are its disk's rates in bytes per
	// second; 0 means no disk model (reads and writes take no time).
	DiskReadBPS  float64 `json:"disk_read_bps,omitempty"`
	DiskWriteBPS float64 `json:"disk_write_bps,omitempty"`
}

// Link is one link direction.
type Link struct {
	Name string `json:"name"`
	// BPS is its rate in bits per second (what cross traffic leaves of it).
	BPS float64 `json:"bps"`
	// Latency is its one-way propagation delay in seconds.
	Latency float64 `json:"latency"`
}

// Route is the links from one host to another.
type Route struct {
	From  string   `json:"from"`
	To    string   `json:"to"`
	Links []string `json:"links"`
}

// Config is the network model's settings.
type Config struct {
	// TCPWindow is the largest TCP window of a flow in bytes (SimGrid's
	// network/TCP-gamma): a flow gets at most TCPWindow/RTT. 0 is
	// SimGrid's default (4 MiB).
	TCPWindow int64 `json:"tcp_window,omitempty"`
	// BandwidthFactor and LatencyFactor scale what a flow gets of a link's
	// rate and how long it takes to start (network/bandwidth-factor,
	// network/latency-factor): what calibration fits. 0 is SimGrid's
	// default for the model.
	BandwidthFactor float64 `json:"bandwidth_factor,omitempty"`
	LatencyFactor   float64 `json:"latency_factor,omitempty"`
	// Seed seeds what the simulator draws, if anything.
	Seed uint64 `json:"seed"`
}

// Actor is a program that runs on a host from time 0. Its mailbox is its
// Name: a Send, Call or Serve names the actor that receives.
type Actor struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Ops  []Op   `json:"ops"`
	// Daemon actors (servers, sinks) do not keep the simulation going: it
	// ends when every other actor has ended.
	Daemon bool `json:"daemon,omitempty"`
}

// The operations, by Op.Do.
const (
	// Exec uses Seconds of CPU (one core at Speed 1) on the actor's host,
	// sharing its cores with the host's other Execs.
	Exec = "exec"
	// Sleep waits Seconds.
	Sleep = "sleep"
	// Send sends Bytes to actor To and waits until they arrived; RateBPS,
	// if not 0, caps the flow (what TCP gets beside losses: the Mathis
	// bound). To's actor must Serve or Recv (the bytes move whether or not
	// it waits for them yet, as into a socket's buffer).
	Send = "send"
	// Recv waits for one message sent to this actor.
	Recv = "recv"
	// Call sends a request of Bytes to actor To, which Serves it: To's
	// host works ServerSeconds for it, then sends Reply bytes back; the
	// call ends when they arrived. With Timeout (seconds) the call gives
	// up when no reply arrived by then (it is marked "timeout", and the
	// server's work for it still happens, but no reply is sent to a caller
	// that gave up; the request itself is always delivered, and a call
	// whose request alone outlasts Timeout is marked when it arrived). A
	// call to a Serve whose Stock ran out is refused: the reply is empty
	// and, inside a Repeat with UntilRefused, ends the loop (the rest of
	// its body is skipped).
	Call = "call"
	// Serve answers the Calls and takes the Sends made to this actor until
	// the simulation ends, Threads at once (0: each as it comes, no limit;
	// 1: one after the other; a call holds its thread from when it is
	// taken until its work is done: its reply then travels on its own, as
	// a server's write returns once the reply is in its socket's buffer).
	// Stock, if not 0, is how many Calls it
	// grants; later ones are refused at once. Sending, if not 0, is how
	// many of its replies travel at once: the others wait their turn in
	// the order their work ended, as in a transmit queue. Where the
	// server's own link is the bottleneck, this changes neither its
	// throughput nor its callers' mean wait (a closed system: Little's
	// law), only the order of the replies; it bounds the flows that share
	// the link, whose cost to simulate grows with their square.
	Serve = "serve"
	// Read and Write move Bytes through the host's disk.
	Read  = "read"
	Write = "write"
	// Repeat runs Body Times times (with UntilRefused: until a Call in it
	// is refused, at most Times when Times is not 0).
	Repeat = "repeat"
	// Par runs each of Branches at once on the actor's host and waits for
	// all of them (parallel streams, prefetching).
	Par = "par"
	// Mark records Label with the simulated time (and the Repeat
	// iteration it is in) in the output: the start and end of a job.
	Mark = "mark"
)

// Op is one operation of an actor's program; Do says which, and the
// fields it uses are listed with it above.
type Op struct {
	Do            string  `json:"do"`
	Seconds       float64 `json:"seconds,omitempty"`
	Bytes         int64   `json:"bytes,omitempty"`
	To            string  `json:"to,omitempty"`
	RateBPS       float64 `json:"rate_bps,omitempty"`
	Reply         int64   `json:"reply,omitempty"`
	ServerSeconds float64 `json:"server_seconds,omitempty"`
	Timeout       float64 `json:"timeout,omitempty"`
	Threads       int     `json:"threads,omitempty"`
	Stock         int     `json:"stock,omitempty"`
	Sending       int     `json:"sending,omitempty"`
	Times         int     `json:"times,omitempty"`
	UntilRefused  bool    `json:"until_refused,omitempty"`
	Body          []Op    `json:"body,omitempty"`
	Branches      [][]Op  `json:"branches,omitempty"`
	Label         string  `json:"label,omitempty"`
}

// Output is what a simulation gave back.
type Output struct {
	// End is the simulated time, in seconds, when the last non-daemon
	// actor ended (or the Horizon).
	End float64 `json:"end"`
	// Marks are the actors' Marks and their calls' timeouts, in time order.
	Marks []MarkAt `json:"marks"`
	// HostCPU is the CPU seconds each host's Execs (and the work of the
	// Calls it served) used.
	HostCPU map[string]float64 `json:"host_cpu"`
	// LinkBytes is what each link direction carried.
	LinkBytes map[string]float64 `json:"link_bytes"`
	// Ended says whether every non-daemon actor ended before the Horizon.
	Ended bool `json:"ended"`
}

// MarkAt is one Mark as it happened.
type MarkAt struct {
	Actor string  `json:"actor"`
	Label string  `json:"label"`
	T     float64 `json:"t"`
	// Iter is the iteration of the innermost Repeat the Mark was in
	// (from 0), -1 outside any.
	Iter int `json:"iter"`
}

// TimeoutLabel is the Label of the mark a Call that timed out leaves.
const TimeoutLabel = "timeout"
