package eventdb

import (
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// Kind is the event-store workload: its settings and their checks, its
// driver, its agent roles and what analysis reads of it (capabilities.go),
// one unit (issue 32).
var Kind = kind.Kind{Name: results.EventDB, Decode: kind.DecodeWith(Check), Run: kind.RunWith("an eventdb step", run), Roles: roles, Traits: traits, Model: &model}

// Spec is one step of an event-store workload: a server, or several, and
// the client jobs that read from them.
type Spec struct {
	// Server is the step's one server; a step of several has Servers
	// instead (and Server ""): client i reads from Servers[i mod
	// len(Servers)] (serverOf). Every server holds the same store, with
	// the same model, threads and costs.
	Server            string
	Servers           []string
	Clients           []string
	Store             Store
	EventsPerJob      int
	Jobs              int // per client
	ClientCPUPerEvent time.Duration
	ServerCPUPerPage  time.Duration
	ServerModel       string
	Threads           int
	Timeout           time.Duration
}

// Length is 0: the step ends as its jobs do.
func (e *Spec) Length() time.Duration { return 0 }

// RoleHosts are the servers' and the clients' hosts.
func (e *Spec) RoleHosts() map[string][]string {
	return map[string][]string{"server": e.servers(), "client": e.Clients}
}

// Raw is an event-store step's settings as written.
type Raw struct {
	Server            string   `yaml:"server"`
	Servers           []string `yaml:"servers"`
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

// Check checks an event-store step's settings, reporting every problem to
// c, and returns the step they make.
func Check(c kind.Check, r Raw) *Spec {
	before := c.Problems()
	e := &Spec{
		Server:  r.Server,
		Servers: r.Servers,
		Clients: r.Clients,
		Store: Store{
			Events:    c.Count("events", r.Events, 50000, 1, 1<<30),
			EventSize: c.Size("event_size", r.EventSize, 40000),
			PageSize:  int(c.Size("page_size", r.PageSize, 8192)),
		},
		EventsPerJob:      c.Count("events_per_job", r.EventsPerJob, 3000, 1, 1<<30),
		Jobs:              c.Count("jobs", r.Jobs, 1, 1, 10000),
		ClientCPUPerEvent: c.Duration("client_cpu_per_event", r.ClientCPUPerEvent, 0),
		ServerCPUPerPage:  c.Duration("server_cpu_per_page", r.ServerCPUPerPage, 0),
		ServerModel:       r.ServerModel,
		Threads:           c.Count("threads", r.Threads, 0, 1, 10000),
		Timeout:           c.Duration("timeout", r.Timeout, 25*time.Second),
	}
	checkHosts(c, r)
	if e.ServerModel == "" {
		e.ServerModel = ModelSingle
		if e.Threads > 0 {
			e.ServerModel = ModelThreads
		}
	}
	// The roles' checks repeat those of the settings, at the workload's
	// line: they are for what the settings' checks do not see.
	if c.Problems() > before {
		// said already
	} else if err := e.server(0, token.Token{}).Validate(c.Limits()); err != nil {
		c.Fail("", "%v", err)
	} else if err := e.clientToCheck().Validate(c.Limits()); err != nil {
		c.Fail("", "each client: %v", err)
	}
	if e.EventsPerJob > e.Store.Events {
		c.Fail("events_per_job", "%d is more than the store holds (%d events)", e.EventsPerJob, e.Store.Events)
	}
	if e.Timeout <= 0 {
		c.Fail("timeout", "must be positive")
	}
	return e
}

// server is the spec of the step's k-th server (servers), which opens
// sessions with tok: those of the jobs of its clients.
func (e *Spec) server(k int, tok token.Token) ServerSpec {
	return ServerSpec{Store: e.Store, Model: e.ServerModel, Threads: e.Threads, CPUPerPage: e.ServerCPUPerPage,
		Sessions: e.Jobs * e.clientsOf(k), Token: tok}
}

// client is the spec of the step's i-th client, whose jobs read from its
// server (serverOf) at address with tok.
func (e *Spec) client(i int, address string, seed uint64, tok token.Token) ClientSpec {
	return ClientSpec{Store: e.Store, Address: address, Jobs: e.Jobs, EventsPerJob: e.EventsPerJob,
		FirstJob: i * e.Jobs, CPUPerEvent: e.ClientCPUPerEvent, Timeout: e.Timeout, Seed: seed, Token: tok}
}

// clientToCheck is a client's spec for the scenario's check, with the
// settings that have checks of their own (events_per_job, timeout) made
// fine, so that the client's check does not say again what theirs say.
func (e *Spec) clientToCheck() ClientSpec {
	s := e.client(0, "", 0, token.Token{})
	s.EventsPerJob = min(s.EventsPerJob, s.Events)
	s.Timeout = max(s.Timeout, 1)
	return s
}
