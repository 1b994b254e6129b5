// Package results names what wanlab measures and keeps, in one place for
// those who write the archive and those who read it: the kinds of
// workload, the figures of a step (docs/run-json.md), the metrics and
// subjects of time series (NMWG names, docs/archive.md), and the versioned
// form of a step's result. A name is built and parsed here and nowhere else.
package results

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Kind is the kind of a workload.
type Kind string

// The workload kinds.
const (
	EventDB    Kind = "eventdb"
	TaskFarm   Kind = "taskfarm"
	Mesh       Kind = "mesh"
	Throughput Kind = "throughput"
	Transfer   Kind = "transfer"
	Probe      Kind = "probe"
	Impact     Kind = "impact"
	Command    Kind = "command"
)

// Kinds lists every kind, in the order documentation lists them.
var Kinds = []Kind{EventDB, TaskFarm, Mesh, Throughput, Transfer, Probe, Impact, Command}

// Metrics are a step's figures by name.
type Metrics map[string]float64

// Names lists the metrics' names in order.
func (m Metrics) Names() []string { return slices.Sorted(maps.Keys(m)) }

// Family is the first part of the name of a step figure about one subject
// (a host, a link direction, the engine or the machine): FAMILY.SUBJECT,
// e.g. cpu_pct.server or link_utilization_pct.a->b.
type Family string

// The families of figures per subject.
const (
	CPUPct             Family = "cpu_pct"       // % of one core
	CPUQuotaPct        Family = "cpu_quota_pct" // % of the host's cpus quota
	DiskReadMBs        Family = "disk_read_mbs"
	DiskWriteMBs       Family = "disk_write_mbs"
	DiskReadPct        Family = "disk_read_pct" // % of the host's disk cap
	DiskWritePct       Family = "disk_write_pct"
	LinkMbps           Family = "link_mbps"
	LinkUtilizationPct Family = "link_utilization_pct" // % of the direction's rate
	LinkDrops          Family = "link_drops"           // packets, by the queue and the loss model
	// LinkFullPct is the share of the step's sampling intervals (%) in
	// which the direction was at least FullUtilizationPct busy: a
	// direction that traffic in bursts fills, idle between them, is full
	// for part of a step that its mean utilisation does not show.
	LinkFullPct Family = "link_full_pct"
)

// FullUtilizationPct is how busy (%) a direction is in a sampling
// interval to count as full there (LinkFullPct).
const FullUtilizationPct = 90

// Subjects of figures and samples that are not hosts or links.
const (
	Engine  = "engine"  // the emulated test-bed's packet engine
	Machine = "machine" // the whole machine, all cores
)

// Of names the family's figure about subject (f.About(subject)).
func (f Family) Of(subject string) string { return f.About(subject).String() }

// In returns the figure of the family about subject, if m has it.
func (f Family) In(m Metrics, subject string) (float64, bool) { return m.Get(f.About(subject)) }

// Subjects returns the subjects m has a figure of the family about, in order.
func (f Family) Subjects(m Metrics) []string {
	var out []string
	for _, fig := range m.Figures() {
		if fig.Family == f && fig.Subject != "" && fig.Leg == "" && fig.Phase == "" {
			out = append(out, fig.Subject)
		}
	}
	return out
}

// Names of the figures a step may have, besides the families above. Each
// workload kind has some of them; docs/run-json.md says which.
const (
	ThroughputMbps = "throughput_mbps"
	AggregateMbps  = "aggregate_mbps"
	TaskRateHz     = "task_rate_hz"
	MessageRateHz  = "message_rate_hz"
	Streams        = "streams"
	WindowBytes    = "window_bytes"
	Retransmits    = "retransmits"
	// HostRcvbufErrors are datagrams the hosts' full UDP sockets refused
	// during a step: a test-bed artefact, never the path's loss.
	HostRcvbufErrors = "host_rcvbuf_errors"
	LostPercent      = "lost_percent"
	JitterMs         = "jitter_ms"
	SenderCPUPct     = "sender_cpu_pct"   // CPUPct.OfRole("sender"): iperf3's own figure of the sending host
	ReceiverCPUPct   = "receiver_cpu_pct" // CPUPct.OfRole("receiver")
	Jobs             = "jobs"
	// AppLimitedPct is the largest share of time a watched sender had
	// nothing to send (%), over a step's watches.
	AppLimitedPct   = "tcp_application_limited_pct"
	JobsPerClient   = "jobs_per_client"
	ServerPages     = "server_pages"
	MeanWallclockS  = "mean_wallclock_s"
	MinWallclockS   = "min_wallclock_s"
	MaxWallclockS   = "max_wallclock_s"
	TCPRTTMeanMs    = "tcp_rtt_mean_ms"
	TCPRetransmits  = "tcp_retransmits"
	Tasks           = "tasks"
	TasksDone       = "tasks_done"
	Workers         = "workers"
	Seconds         = "seconds"
	ResultBytes     = "result_bytes"
	IdealSeconds    = "ideal_seconds"
	Efficiency      = "efficiency"
	WorkerIdleShare = "worker_idle_share"
	RoundtripP50Ms  = "roundtrip_p50_ms"
	RoundtripP99Ms  = "roundtrip_p99_ms"
	RoundtripMeanMs = "roundtrip_mean_ms"
	Transfers       = "transfers"
	Bytes           = "bytes"
	Compress        = "compress"
	ChecksumOK      = "checksum_ok"
	RTTP50Ms        = "rtt_p50_ms"
	RTTP99Ms        = "rtt_p99_ms"
	RTTAvgMs        = "rtt_avg_ms"
	RTTInflationMs  = "rtt_inflation_ms"
	LossIncreasePts = "loss_increase_points"
	LoadMbps        = "load_mbps"
	// TestsAlongside is the most other tests an agent of the step ran
	// while it ran (real hosts serve several controllers): 0 when the step
	// had its hosts to itself.
	TestsAlongside = "tests_alongside"
)

// JobsEnded names the count of a step's jobs that ended with status (ok,
// timeout, failed, corrupt, cancelled): jobs_ok, jobs_timeout, ...
// (JobsWith(status)).
func JobsEnded(status string) string { return JobsWith(status).String() }

// Leg names a figure of one leg of a transfer ("there" or "back"), e.g.
// there_mbps, back_sender_cpu_pct (Figure.OnLeg).
func Leg(leg, figure string) string {
	f, _ := ParseFigure(figure)
	return f.OnLeg(leg).String()
}

// The legs of a transfer.
const (
	There = "there"
	Back  = "back"
)

// Phase names a figure of one phase of an impact test ("idle", "loaded",
// "after"), e.g. loaded_rtt_p50_ms (Figure.InPhase).
func Phase(phase, figure string) string {
	f, _ := ParseFigure(figure)
	return f.InPhase(phase).String()
}

// Role names a figure about a workload role's hosts: the mean over them,
// e.g. server_cpu_pct (Family.OfRole).
func Role(role string, f Family) string { return f.OfRole(role).String() }

// StepVersion is the version of a step's result that this wanlab writes.
const StepVersion = 2

// Step is a step's result as the archive keeps it. Version 2 says so in
// the JSON; a result with no version is the form wanlab wrote up to
// a223ce5, which has the same fields.
type Step struct {
	Version int     `json:"version"`
	Kind    Kind    `json:"kind"`
	Seconds float64 `json:"seconds"`
	// TestbedLimited says the emulator or the machine was saturated, so the
	// figures describe the test-bed rather than the scenario; LimitedBy says how.
	TestbedLimited bool     `json:"testbed_limited"`
	LimitedBy      []string `json:"limited_by,omitempty"`
	Metrics        Metrics  `json:"metrics"`
}

// DecodeStep reads a step's result from the archive, of any version this
// wanlab knows.
func DecodeStep(raw []byte) (Step, error) {
	var s Step
	if len(raw) == 0 {
		return Step{Version: StepVersion, Metrics: Metrics{}}, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("reading a step's result: %w", err)
	}
	switch s.Version {
	case 0: // wanlab a223ce5 and before: the same fields, unversioned
		s.Version = StepVersion
	case StepVersion:
	default:
		return s, fmt.Errorf("a step's result of version %d, newer than this wanlab knows (%d): upgrade wanlab", s.Version, StepVersion)
	}
	if s.Metrics == nil {
		s.Metrics = Metrics{}
	}
	return s, nil
}
