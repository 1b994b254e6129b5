package eventdb

// The event store's simulation model (issue 34): what a step does on the
// wire and on the CPUs, as actors of the simulator's model program
// (internal/sim), and the step's figures and jobs read back from what the
// simulation gave, as Run gives them from the roles.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// The model's params, which calibration may fit.
const (
	ParamServerCPU      = "server_cpu_s_per_page"
	ParamServerOverhead = "server_overhead_s_per_page"
	ParamClientCPU      = "client_cpu_s_per_event"
)

// The labels of a job's marks.
const (
	markStart = "start"
	markEnd   = "end"
)

// model is the eventdb kind's kind.Model.
var model = kind.Model{
	Build: func(env kind.ModelEnv, s kind.Spec) ([]sim.Actor, error) {
		e, err := specOf(s)
		if err != nil {
			return nil, err
		}
		return e.build(env)
	},
	Read: func(env kind.ModelEnv, s kind.Spec, out *sim.Output) (*kind.Outcome, error) {
		e, err := specOf(s)
		if err != nil {
			return nil, err
		}
		return e.read(env, out)
	},
	Assumptions: []string{
		"TCP is SimGrid's LV08 flow model: flows share each link fairly from their first byte, with no slow start, no packets and no queueing delay.",
		"Loss is not simulated for requests and pages, which travel in calls whose flows the simulator does not cap (the Mathis bound caps sends): a lost segment costs no retransmission timeout, and a job's retransmissions are its segments times the path's loss.",
		"A job's TCP round trip is the path's base round trip, without queueing.",
		"A job's pages are spread evenly over its events (the job reads as many pages as the store's geometry gives it, each event the mean number rounded down or up).",
		"A job that times out ends there in the figures, but its simulated actor goes on asking, so its later requests still load the server and the network.",
		"The server's models are its thread limit: single serves one request at a time, threads N at a time, connection any number (the agents' connection limit is left out).",
		"Opening a session costs two round trips (the TCP handshake, then the token and hello) that the server answers outside its request threads, as the real server does.",
		"A server thread is held for a page's work and released as the page leaves, as if the socket's buffer always had room for it.",
		"A step of more than a million page requests is simulated with several pages per request (the fewest that keep it within a million), each request's server work and bytes those of its pages and the client sleeping the round trips of the others: the server's queue is coarser and a timeout covers the whole batch.",
	},
	Params: []kind.Param{
		{Name: ParamServerCPU, Doc: "server CPU per page served, in core-seconds (the step's server_cpu_per_page); read per client host as server_cpu_s_per_page.HOST first"},
		{Name: ParamServerOverhead, Doc: "server CPU per page beyond server_cpu_per_page (reading, copying, the system calls), in core-seconds; 0 uncalibrated"},
		{Name: kind.ParamTCPEfficiency, Doc: "the share of the bytes on the path from the server to a client that are pages, a fraction (1 uncalibrated: no headers); read per path as tcp_efficiency.SERVER->CLIENT first"},
		{Name: ParamClientCPU, Doc: "client CPU per event read, in core-seconds (the step's client_cpu_per_event); read per client host as client_cpu_s_per_event.HOST first"},
	},
	Fit: fit,
}

// specOf is s as an eventdb step.
func specOf(s kind.Spec) (*Spec, error) {
	e, ok := s.(*Spec)
	if !ok {
		return nil, fmt.Errorf("an eventdb model with a %T spec", s)
	}
	return e, nil
}

// modelJob is one client job of a step, as the model runs it.
type modelJob struct {
	id    int
	host  string // the client's
	actor string
	pages int64 // the pages it reads
}

// jobs are the step's jobs, each with the pages it reads: from the event
// its client draws, as the client draws it (the step's seed, the job's id).
func (e *Spec) jobs(env kind.ModelEnv) []modelJob {
	var jobs []modelJob
	for i, host := range e.Clients {
		for k := range e.Jobs {
			id := i*e.Jobs + k
			first := rand.New(rand.NewPCG(env.Seed(), uint64(id))).IntN(e.Store.Events)
			jobs = append(jobs, modelJob{id: id, host: host, actor: env.Name(fmt.Sprintf("eventdb.job%d", id)),
				pages: e.Store.jobPages(first, e.EventsPerJob)})
		}
	}
	return jobs
}

// jobPages is how many pages a job reads for n events from first on
// (wrapping at the store's end), the last page read staying in its cache.
func (s Store) jobPages(first, n int) int64 {
	lo, _ := s.eventPages(first)
	if first+n <= s.Events {
		_, hi := s.eventPages(first + n - 1)
		return hi - lo + 1
	}
	_, hiA := s.eventPages(s.Events - 1)
	_, hiB := s.eventPages(first + n - s.Events - 1)
	pages := hiA - lo + 1 + hiB + 1
	if hiA == 0 {
		pages-- // a store of one page: still in the cache
	}
	return pages
}

// threads is how many requests the server model serves at once (0: no
// limit).
func (e *Spec) threads() int {
	switch e.ServerModel {
	case ModelSingle:
		return 1
	case ModelThreads:
		return e.Threads
	}
	return 0
}

// MaxCalls bounds the page requests a step's simulation makes: past it,
// each request stands for several pages (batch).
const MaxCalls = 1_000_000

// batch is how many pages one simulated request stands for, for jobs that
// read pages pages in all: 1 up to MaxCalls, then the fewest that keep the
// requests within it.
func batch(pages int64) int64 { return max(1, (pages+MaxCalls-1)/MaxCalls) }

// build makes the step's actors: the server, which serves pages with its
// threads; the accepting side of its sessions, which any number at once;
// and each client job, which opens its session (a handshake, then its
// token and hello) and asks for its pages one at a time, spending its CPU
// on each event.
func (e *Spec) build(env kind.ModelEnv) ([]sim.Actor, error) {
	server, accept := env.Name("eventdb.server"), env.Name("eventdb.accept")
	actors := []sim.Actor{
		{Name: server, Host: e.Server, Daemon: true, Ops: []sim.Op{{Do: sim.Serve, Threads: e.threads()}}},
		{Name: accept, Host: e.Server, Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}},
	}
	jobs := e.jobs(env)
	var total int64
	for _, j := range jobs {
		total += j.pages
	}
	k := batch(total)
	timeout := e.Timeout.Seconds()
	for _, j := range jobs {
		// The pages with their headers: the path's efficiency is the share
		// of the wire's bytes that are pages.
		serverCPU := e.serverCPU(env, j.host)
		if serverCPU < 0 {
			return nil, fmt.Errorf("eventdb model: negative server CPU per page (%g s) for client %s", serverCPU, j.host)
		}
		wire := float64(e.Store.PageSize) / max(kind.TCPEfficiency(env, e.Server, j.host), 1e-3)
		pages := func(n int64) sim.Op {
			return sim.Op{Do: sim.Call, To: server, Bytes: 8 * n, Reply: int64(math.Round(wire * float64(n))), ServerSeconds: serverCPU * float64(n), Timeout: timeout}
		}
		ops := []sim.Op{
			{Do: sim.Mark, Label: markStart},
			{Do: sim.Call, To: accept, Timeout: timeout},
			{Do: sim.Call, To: accept, Bytes: token.MessageLen + helloLen, Reply: token.MessageLen + 16, Timeout: timeout},
		}
		request := []sim.Op{pages(k)}
		if k > 1 {
			// The round trips the other pages of the batch would take.
			path, err := env.Path(j.host, e.Server)
			if err != nil {
				return nil, fmt.Errorf("eventdb model: %w", err)
			}
			request = append(request, sim.Op{Do: sim.Sleep, Seconds: float64(k-1) * path.RTT.Seconds()})
			if rest := j.pages % k; rest > 0 {
				ops = append(ops, pages(rest))
			}
		}
		clientCPU := e.clientCPU(env, j.host)
		if clientCPU < 0 {
			return nil, fmt.Errorf("eventdb model: negative CPU per event (%g s) on client %s", clientCPU, j.host)
		}
		ops = append(ops, readOps(j.pages/k, e.EventsPerJob, request, clientCPU)...)
		ops = append(ops, sim.Op{Do: sim.Mark, Label: markEnd})
		actors = append(actors, sim.Actor{Name: j.actor, Host: j.host, Ops: ops})
	}
	return actors, nil
}

// serverCPU is the server's CPU per page it serves a client host: the
// host's own (server_cpu_s_per_page.HOST: a slower path costs the server
// more, as calibration finds), else every client's, else the step's; with
// server_overhead_s_per_page.
func (e *Spec) serverCPU(env kind.ModelEnv, host string) float64 {
	return env.Param(ParamServerCPU+"."+host, env.Param(ParamServerCPU, e.ServerCPUPerPage.Seconds())) + env.Param(ParamServerOverhead, 0)
}

// clientCPU is the CPU per event of a client host: its own
// (client_cpu_s_per_event.HOST, as calibration fits it), else every
// client's, else the step's.
func (e *Spec) clientCPU(env kind.ModelEnv, host string) float64 {
	return env.Param(ParamClientCPU+"."+host, env.Param(ParamClientCPU, e.ClientCPUPerEvent.Seconds()))
}

// readOps are a job's requests, spread over its events, with its CPU per
// event after each.
func readOps(requests int64, events int, request []sim.Op, cpu float64) []sim.Op {
	if cpu == 0 {
		return []sim.Op{{Do: sim.Repeat, Times: int(requests), Body: request}}
	}
	per, more := int(requests)/events, int(requests)%events
	event := func(n int) []sim.Op {
		if n == 0 {
			return []sim.Op{{Do: sim.Exec, Seconds: cpu}}
		}
		return []sim.Op{{Do: sim.Repeat, Times: n, Body: request}, {Do: sim.Exec, Seconds: cpu}}
	}
	var ops []sim.Op
	if more > 0 {
		ops = append(ops, sim.Op{Do: sim.Repeat, Times: more, Body: event(per + 1)})
	}
	return append(ops, sim.Op{Do: sim.Repeat, Times: events - more, Body: event(per)})
}

// simTime is a time of the simulation as a job's time.
func simTime(t float64) time.Time {
	return time.Unix(0, 0).UTC().Add(time.Duration(math.Round(t * 1e9)))
}

// jobMarks are what the marks of one job's actor say.
type jobMarks struct {
	start, end, timeout float64
	started, ended      bool
	timedOut            bool
}

// marksOf sorts out the marks of each actor.
func marksOf(out *sim.Output) map[string]*jobMarks {
	by := map[string]*jobMarks{}
	for _, m := range out.Marks {
		j := by[m.Actor]
		if j == nil {
			j = &jobMarks{}
			by[m.Actor] = j
		}
		switch {
		case m.Label == markStart && !j.started:
			j.start, j.started = m.T, true
		case m.Label == markEnd && !j.ended:
			j.end, j.ended = m.T, true
		case m.Label == sim.TimeoutLabel && !j.timedOut:
			j.timeout, j.timedOut = m.T, true
		}
	}
	return by
}

// read makes the step's figures and jobs, as Run does: each job ends at its
// end or its first timeout; the server's pages are those of the jobs, a
// job that timed out having read its pages at an even pace until then.
func (e *Spec) read(env kind.ModelEnv, out *sim.Output) (*kind.Outcome, error) {
	marks := marksOf(out)
	var jobs []job.Record
	var pages, total int64
	for _, j := range e.jobs(env) {
		total += j.pages
		m := marks[j.actor]
		if m == nil {
			m = &jobMarks{}
		}
		rec := job.Record{ID: j.id, Host: j.host, Start: simTime(m.start)}
		done := j.pages
		switch {
		case m.timedOut:
			last := out.End
			if m.ended {
				last = m.end
			}
			if last > m.start {
				done = int64(float64(j.pages) * (m.timeout - m.start) / (last - m.start))
			}
			rec.End, rec.Status = simTime(m.timeout), job.Timeout
			rec.Reason = fmt.Sprintf("job %d: no answer within the RPC timeout (%v)", j.id, e.Timeout)
		case m.ended:
			rec.End, rec.Status = simTime(m.end), job.OK
		default:
			done = 0
			rec.End, rec.Status = simTime(out.End), job.Failed
			rec.Reason = fmt.Sprintf("job %d: still running when the simulation ended at %.1f s", j.id, out.End)
		}
		rec.Bytes = done * int64(e.Store.PageSize)
		pages += done
		if err := e.addTCP(env, &rec); err != nil {
			return nil, err
		}
		jobs = append(jobs, rec)
	}
	o := &kind.Outcome{Jobs: jobs, Metrics: kind.JobMetrics(jobs)}
	o.Metrics[results.Jobs] = float64(e.Jobs * len(e.Clients))
	o.Metrics[results.JobsPerClient] = float64(e.Jobs)
	if span := kind.JobSpan(jobs); span > 0 {
		o.Metrics[results.ThroughputMbps] = float64(pages*int64(e.Store.PageSize)) * 8 / span / 1e6
	}
	o.Metrics[results.ServerPages] = float64(pages)
	if k := batch(total); k > 1 {
		o.Notes = append(o.Notes, fmt.Sprintf("the eventdb model simulated its %d page requests %d pages at a time", total, k))
	}
	return o, nil
}

// addTCP gives a job its connection's TCP figures: the path's round trip
// and, of the segments its pages took, those the path's loss costs.
func (e *Spec) addTCP(env kind.ModelEnv, rec *job.Record) error {
	there, err := env.Path(rec.Host, e.Server)
	if err != nil {
		return fmt.Errorf("eventdb model: %w", err)
	}
	back, err := env.Path(e.Server, rec.Host)
	if err != nil {
		return fmt.Errorf("eventdb model: %w", err)
	}
	rec.TCPRTTms = float64(there.RTT) / float64(time.Millisecond)
	mss := int64(1460)
	if back.MTU > 40 {
		mss = int64(back.MTU - 40)
	}
	segments := (rec.Bytes + mss - 1) / mss
	rec.TCPRetransmits = uint32(math.Round(float64(segments) * back.Loss))
	return nil
}
