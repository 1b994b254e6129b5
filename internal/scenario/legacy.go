package scenario

import (
	"fmt"
	"time"

	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
	"github.com/wanlab/wanlab/internal/workload/taskfarm"
	"github.com/wanlab/wanlab/internal/workload/transfer"
)

// The kinds still decoded here, not yet in a package of their own under
// internal/workload (issue 32): their specs, raw settings and checks. Each
// moves out as command did, and leaves the legacy table (kinds.go).

// EventDB is an event-store server and the client jobs that read from it.
type EventDB struct {
	Server            string
	Clients           []string
	Store             eventdb.Store
	EventsPerJob      int
	Jobs              int // per client
	ClientCPUPerEvent time.Duration
	ServerCPUPerPage  time.Duration
	ServerModel       string
	Threads           int
	Timeout           time.Duration
}

// TaskFarm is a master handing tasks to workers.
type TaskFarm struct {
	Master     string
	Workers    []string // hosts
	Count      int      // workers in all, spread over the hosts
	Tasks      int
	Duration   time.Duration
	Work       string
	ResultSize int
	Prefetch   int
}

// Mesh is the random transfer mesh among hosts.
type Mesh struct {
	Hosts    []string
	Duration time.Duration
	MaxWait  time.Duration
	Sizes    []int64
	Streams  int
	Port     int
	// Disk makes the transfers disk to disk, as the seed's bbFTP ones were.
	Disk bool
}

// Throughput is a memory-to-memory throughput test.
type Throughput struct {
	From, To   string
	Protocol   string // tcp or udp
	Streams    int
	Window     int64
	Duration   time.Duration
	Congestion string
	UDPRate    units.Rate
}

// Transfer is a file transfer, optionally there and back, optionally compressed.
type Transfer struct {
	From, To  string
	Size      int64
	Streams   int
	Window    int64
	Block     int
	Compress  bool
	Roundtrip bool
	// Serial alternates reading and sending each block (read_ahead: false).
	Serial bool
}

// Probe is a round of TWAMP-light probes.
type Probe struct {
	From, To string
	Count    int
	Interval time.Duration
}

// Impact is what a TCP load from From to To does to the round trips and
// loss of probes from ProbeFrom to ProbeTo: probes for Phase before, all
// through the load, and for Phase after.
type Impact struct {
	ProbeFrom, ProbeTo string
	From, To           string
	Streams            int
	Window             int64
	Duration           time.Duration
	Phase              time.Duration
	Interval           time.Duration
}

type rawEventDB struct {
	Server            string   `yaml:"server"`
	Clients           []string `yaml:"clients"`
	Events            *int     `yaml:"events"`
	EventSize         string   `yaml:"event_size"`
	PageSize          string   `yaml:"page_size"`
	EventsPerJob      *int     `yaml:"events_per_job"`
	Jobs              *int     `yaml:"jobs"`
	ClientCPUPerEvent string   `yaml:"client_cpu_per_event"`
	ServerCPUPerPage  string   `yaml:"server_cpu_per_page"`
	ServerModel       string   `yaml:"server_model"`
	Threads           *int     `yaml:"threads"`
	Timeout           string   `yaml:"timeout"`
}

type rawTaskFarm struct {
	Master     string   `yaml:"master"`
	Workers    []string `yaml:"workers"`
	Count      *int     `yaml:"count"`
	Tasks      *int     `yaml:"tasks"`
	Duration   string   `yaml:"duration"`
	Work       string   `yaml:"work"`
	ResultSize string   `yaml:"result_size"`
	Prefetch   *int     `yaml:"prefetch"`
}

type rawMesh struct {
	Hosts    []string `yaml:"hosts"`
	Duration string   `yaml:"duration"`
	MaxWait  string   `yaml:"max_wait"`
	Sizes    []string `yaml:"sizes"`
	Streams  *int     `yaml:"streams"`
	Port     *int     `yaml:"port"`
	Disk     bool     `yaml:"disk"`
}

type rawThroughput struct {
	From       string `yaml:"from"`
	To         string `yaml:"to"`
	Protocol   string `yaml:"protocol"`
	Streams    *int   `yaml:"streams"`
	Window     string `yaml:"window"`
	Duration   string `yaml:"duration"`
	Congestion string `yaml:"congestion"`
	Rate       string `yaml:"rate"`
}

type rawTransfer struct {
	From      string `yaml:"from"`
	To        string `yaml:"to"`
	Size      string `yaml:"size"`
	Streams   *int   `yaml:"streams"`
	Window    string `yaml:"window"`
	Block     string `yaml:"block"`
	Compress  bool   `yaml:"compress"`
	Roundtrip bool   `yaml:"roundtrip"`
	ReadAhead *bool  `yaml:"read_ahead"`
}

type rawProbe struct {
	From     string `yaml:"from"`
	To       string `yaml:"to"`
	Count    *int   `yaml:"count"`
	Interval string `yaml:"interval"`
}

type rawImpact struct {
	ProbeFrom string `yaml:"probe_from"`
	ProbeTo   string `yaml:"probe_to"`
	From      string `yaml:"from"`
	To        string `yaml:"to"`
	Streams   *int   `yaml:"streams"`
	Window    string `yaml:"window"`
	Duration  string `yaml:"duration"`
	Phase     string `yaml:"phase"`
	Interval  string `yaml:"interval"`
}

func (v *validator) eventDB(field string, r rawEventDB, tb *Testbed) *EventDB {
	before := v.Count()
	e := &EventDB{
		Server:  r.Server,
		Clients: r.Clients,
		Store: eventdb.Store{
			Events:    v.count(field+".events", r.Events, 50000, 1, 1<<30),
			EventSize: v.size(field+".event_size", r.EventSize, 40000),
			PageSize:  int(v.size(field+".page_size", r.PageSize, 8192)),
		},
		EventsPerJob:      v.count(field+".events_per_job", r.EventsPerJob, 3000, 1, 1<<30),
		Jobs:              v.count(field+".jobs", r.Jobs, 1, 1, 10000),
		ClientCPUPerEvent: v.duration(field+".client_cpu_per_event", r.ClientCPUPerEvent, 0),
		ServerCPUPerPage:  v.duration(field+".server_cpu_per_page", r.ServerCPUPerPage, 0),
		ServerModel:       r.ServerModel,
		Threads:           v.count(field+".threads", r.Threads, 0, 1, 10000),
		Timeout:           v.duration(field+".timeout", r.Timeout, 25*time.Second),
	}
	v.hub(field, "server", r.Server, "clients", r.Clients, "list the client hosts, such as [client1, client2]", tb)
	if e.ServerModel == "" {
		e.ServerModel = eventdb.ModelSingle
		if e.Threads > 0 {
			e.ServerModel = eventdb.ModelThreads
		}
	}
	// The specs' checks repeat those of the fields, at the workload's
	// line: they are for what the fields' checks do not see.
	if v.Count() > before {
		// said already
	} else if err := (eventdb.ServerSpec{Store: e.Store, Model: e.ServerModel, Threads: e.Threads, CPUPerPage: e.ServerCPUPerPage}).Validate(agentLimits); err != nil {
		v.fail(field, "%v", err)
	} else if err := (eventdb.ClientSpec{Store: e.Store, Jobs: e.Jobs, EventsPerJob: min(e.EventsPerJob, e.Store.Events), Timeout: max(e.Timeout, 1), CPUPerEvent: e.ClientCPUPerEvent}).Validate(agentLimits); err != nil {
		v.fail(field, "each client: %v", err)
	}
	if e.EventsPerJob > e.Store.Events {
		v.fail(field+".events_per_job", "%d is more than the store holds (%d events)", e.EventsPerJob, e.Store.Events)
	}
	if e.Timeout <= 0 {
		v.fail(field+".timeout", "must be positive")
	}
	return e
}

func (v *validator) taskFarm(field string, r rawTaskFarm, tb *Testbed) *TaskFarm {
	before := v.Count()
	t := &TaskFarm{
		Master:     r.Master,
		Workers:    r.Workers,
		Tasks:      v.count(field+".tasks", r.Tasks, 3000, 1, 10_000_000),
		Duration:   v.duration(field+".duration", r.Duration, time.Second),
		Work:       r.Work,
		ResultSize: int(v.size(field+".result_size", r.ResultSize, 512)),
		Prefetch:   v.count(field+".prefetch", r.Prefetch, 1, 1, 1000),
	}
	v.hub(field, "master", r.Master, "workers", r.Workers, "list the worker hosts", tb)
	t.Count = v.count(field+".count", r.Count, len(r.Workers), max(1, len(r.Workers)), 100000)
	if t.Work == "" {
		t.Work = taskfarm.WorkSleep
	}
	if v.Count() > before {
		// said already, at the fields
	} else if err := (taskfarm.MasterSpec{Tasks: t.Tasks, Duration: t.Duration, Work: t.Work, ResultSize: t.ResultSize, Prefetch: t.Prefetch, Workers: t.Count}).Validate(agentLimits); err != nil {
		v.fail(field, "%v", err)
	}
	return t
}

// hub checks a step's central host (the setting hubName, such as server)
// and the hosts of the setting spokesName (such as clients), of which there
// must be at least one (missing says how to list them): each a known host,
// not the hub, and one the hub reaches.
func (v *validator) hub(field, hubName, hub, spokesName string, spokes []string, missing string, tb *Testbed) {
	v.host(field+"."+hubName, hub, tb)
	if len(spokes) == 0 {
		v.fail(field+"."+spokesName, "missing: %s", missing)
	}
	for i, h := range spokes {
		if v.fine(h, hub, tb) {
			continue
		}
		f := fmt.Sprintf("%s.%s[%d]", field, spokesName, i)
		v.host(f, h, tb)
		if h == hub {
			v.fail(f, "%q is the %s", h, hubName)
		}
		v.reaches(f, hub, h, tb)
	}
}

// DefaultMeshPort is where mesh nodes listen unless the scenario says
// otherwise: the first of the test ports agents are deployed with
// (5201-5299, docs/deploy.md), and not an agent's own 7400.
const DefaultMeshPort = 5201

func (v *validator) mesh(field string, r rawMesh, tb *Testbed) *Mesh {
	m := &Mesh{
		Hosts:    r.Hosts,
		Duration: v.duration(field+".duration", r.Duration, 10*time.Minute),
		MaxWait:  v.duration(field+".max_wait", r.MaxWait, time.Minute),
		Streams:  v.count(field+".streams", r.Streams, 16, 1, 256),
		Port:     v.count(field+".port", r.Port, DefaultMeshPort, 1, 65535),
		Disk:     r.Disk,
	}
	if len(m.Hosts) == 0 {
		m.Hosts = v.allHosts(tb)
	}
	for i, h := range r.Hosts {
		v.host(fmt.Sprintf("%s.hosts[%d]", field, i), h, tb)
	}
	v.meshReaches(field+".hosts", m.Hosts, tb)
	if len(m.Hosts) < 2 {
		v.fail(field+".hosts", "a mesh needs at least two hosts")
	}
	sizes := r.Sizes
	if len(sizes) == 0 {
		sizes = []string{"1.6GB", "0.8GB", "0.3GB"}
	}
	for i, s := range sizes {
		z := v.size(fmt.Sprintf("%s.sizes[%d]", field, i), s, 0)
		if z < int64(m.Streams) {
			v.fail(fmt.Sprintf("%s.sizes[%d]", field, i), "%s is smaller than one byte per stream", s)
		}
		m.Sizes = append(m.Sizes, z)
	}
	if m.Duration <= 0 {
		v.fail(field+".duration", "must be positive")
	}
	v.limit(field+".duration", agentLimits.Duration("duration", m.Duration))
	v.limit(field+".max_wait", agentLimits.Duration("max_wait", m.MaxWait))
	for i, z := range m.Sizes {
		v.limit(fmt.Sprintf("%s.sizes[%d]", field, i), agentLimits.Bytes("file size", z))
	}
	return m
}

func (v *validator) throughput(field string, r rawThroughput, tb *Testbed) *Throughput {
	t := &Throughput{
		From: r.From, To: r.To, Protocol: r.Protocol, Congestion: r.Congestion,
		Streams:  v.count(field+".streams", r.Streams, 1, 1, 256),
		Window:   v.size(field+".window", r.Window, 0),
		Duration: v.duration(field+".duration", r.Duration, 10*time.Second),
	}
	v.pair(field, r.From, r.To, tb)
	if t.Protocol == "" {
		t.Protocol = "tcp"
	}
	switch t.Protocol {
	case "tcp":
		if r.Rate != "" {
			v.fail(field+".rate", "rate is for udp tests")
		}
	case "udp":
		if r.Rate == "" {
			v.fail(field+".rate", "missing: a udp test needs a target rate, such as 10Mbit")
		} else if rate, err := units.ParseRate(r.Rate); err != nil {
			v.fail(field+".rate", "%v", err)
		} else {
			t.UDPRate = rate
		}
	default:
		v.fail(field+".protocol", "%q: tcp or udp", t.Protocol)
	}
	if t.Duration <= 0 {
		v.fail(field+".duration", "must be positive")
	}
	v.limit(field+".duration", agentLimits.Duration("duration", t.Duration))
	if t.Protocol == "udp" && t.UDPRate > 0 {
		v.limit(field+".rate", agentLimits.Rate(float64(t.UDPRate)))
	}
	return t
}

func (v *validator) transfer(field string, r rawTransfer, tb *Testbed) *Transfer {
	before := v.Count()
	t := &Transfer{
		From: r.From, To: r.To, Compress: r.Compress, Roundtrip: r.Roundtrip, Serial: r.ReadAhead != nil && !*r.ReadAhead,
		Size:    v.size(field+".size", r.Size, 100_000_000),
		Streams: v.count(field+".streams", r.Streams, 1, 1, 256),
		Window:  v.size(field+".window", r.Window, 0),
		Block:   int(v.size(field+".block", r.Block, transfer.DefaultBlock)),
	}
	v.pair(field, r.From, r.To, tb)
	if v.Count() > before {
		// said already, at the fields
	} else if err := (transfer.Spec{Streams: t.Streams, Window: int(t.Window), Block: t.Block}).Validate(agentLimits); err != nil {
		v.fail(field, "%v", err)
	}
	if t.Size <= 0 {
		v.fail(field+".size", "must be positive")
	}
	v.limit(field+".size", agentLimits.Bytes("size", t.Size))
	return t
}

func (v *validator) probe(field string, r rawProbe, tb *Testbed) *Probe {
	p := &Probe{
		From: r.From, To: r.To,
		Count:    v.count(field+".count", r.Count, 100, 1, 1_000_000),
		Interval: v.duration(field+".interval", r.Interval, 100*time.Millisecond),
	}
	v.pair(field, r.From, r.To, tb)
	if p.Interval <= 0 {
		v.fail(field+".interval", "must be positive")
	}
	v.limit(field+".count", agentLimits.Repeated("the probes", int64(p.Count), p.Interval))
	return p
}

func (v *validator) impact(field string, r rawImpact, tb *Testbed) *Impact {
	i := &Impact{
		ProbeFrom: r.ProbeFrom, ProbeTo: r.ProbeTo, From: r.From, To: r.To,
		Streams:  v.count(field+".streams", r.Streams, 1, 1, 256),
		Window:   v.size(field+".window", r.Window, 0),
		Duration: v.duration(field+".duration", r.Duration, 10*time.Second),
		Phase:    v.duration(field+".phase", r.Phase, 5*time.Second),
		Interval: v.duration(field+".interval", r.Interval, 100*time.Millisecond),
	}
	v.pair(field, r.From, r.To, tb)
	v.host(field+".probe_from", r.ProbeFrom, tb)
	v.host(field+".probe_to", r.ProbeTo, tb)
	if r.ProbeFrom != "" && r.ProbeFrom == r.ProbeTo {
		v.fail(field+".probe_to", "probe_from and probe_to are the same host %q", r.ProbeFrom)
	}
	v.reaches(field+".probe_to", r.ProbeFrom, r.ProbeTo, tb)
	if i.Duration <= 0 || i.Phase <= 0 || i.Interval <= 0 {
		v.fail(field, "duration, phase and interval must be positive")
	}
	v.limit(field+".duration", agentLimits.Duration("duration", i.Duration))
	v.limit(field+".phase", agentLimits.Duration("phase", i.Phase))
	return i
}
