package eventdb

// The event store's simulation model (issue 34): what a step does on the
// wire and on the CPUs, as actors of the simulator's model program
// (internal/sim), and the step's figures and jobs read back from what the
// simulation gave, as Run gives them from the roles.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
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
	ParamClientRecv     = "client_cpu_s_per_page"
	ParamBatch          = "pages_per_request"
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
		"The jobs of a client host start reading in turn, each one reply's transfer on its path after the one before, as a link's queue sends the first replies of jobs that asked at once: the flow model shares a link between its flows equally and would keep such jobs in step (their pages all on the wire at once, then none while they all wait for a round trip or their CPU), where a queue serves the replies in turn and keeps the link busy.",
		"A job's pages are spread evenly over its events (the job reads as many pages as the store's geometry gives it, each event the mean number rounded down or up).",
		"A job that times out ends there in the figures, but its simulated actor goes on asking, so its later requests still load the server and the network.",
		"The server's models are its thread limit: single serves one request at a time, threads N at a time, connection any number (the agents' connection limit is left out).",
		"Opening a session costs two round trips (the TCP handshake, then the token and hello) that the server answers outside its request threads, as the real server does.",
		"A server thread is held for a page's work only: it is free once the work is done and the page travels on without it, as a server's write returns once the page is in its socket's buffer (as if the buffer always had room for it).",
		"A server sends at most 64 pages at once (more where its clients' paths are much slower than its fastest: twice the ratio), the others waiting their turn in the order their work ended: where the server's own link is full this changes neither its throughput nor the jobs' mean time (a closed system: Little's law), only which job's page goes first; it keeps the cost of simulating thousands of jobs from growing with their square. Steps of fewer jobs per server are not affected.",
		"The server's CPU per page (the step's server_cpu_per_page, or as calibration fits it: all its CPU over the pages it served) is spent in series, holding its thread.",
		"A client's CPU per event (the step's client_cpu_per_event: the CPU its job burns on each event, which calibration keeps) is spent after the event's pages, in series with its reads; its CPU per page received (client_cpu_s_per_page, 0 uncalibrated: the kernel and runtime taking the page in, which calibration fits as its CPU beyond the events' over the pages it read) is spent beside each event's transfers, overlapping them, and delays the event only when the host's CPU is short (past 1,000 events in a step, beside a few events' transfers and CPU at a time).",
		"A step of 1,000 jobs or more is simulated with an event's pages per request (the event's size over the page size, rounded, at most 8), and one of more than a million page requests with at least the fewest pages per request that keep it within a million: each request's server work and bytes are those of its pages and the client sleeps the round trips of the others. It cuts the simulator's work by about the pages per request; where a server's link is full it keeps the throughput (within 0.3% on monarc-wan's steps), but the jobs take their turns at the server's queue in coarser steps, so they end less together and their mean time comes out shorter, by up to about (pages per request - 1) / (2 x a job's pages) (2% on monarc-wan's steps: 5 pages a request, 75 a job); a timeout covers the whole batch (pages_per_request=1 simulates every page).",
	},
	Params: []kind.Param{
		{Name: ParamBatch, Doc: "how many pages one simulated request stands for (the client sleeping the round trips of the others): 0, the default, is the model's choice (1 below 1,000 jobs in a step, an event's pages from 1,000, more past a million requests); set, at least what keeps a step within a million requests"},
		{Name: ParamServerCPU, Doc: "server CPU per page served, in core-seconds (the step's server_cpu_per_page); read per client host as server_cpu_s_per_page.HOST first"},
		{Name: ParamServerOverhead, Doc: "server CPU per page beyond server_cpu_per_page (reading, copying, the system calls), in core-seconds; 0 uncalibrated"},
		{Name: kind.ParamTCPEfficiency, Doc: "the share of the bytes on the path from the server to a client that are pages, a fraction (1 uncalibrated: no headers); read per path as tcp_efficiency.SERVER->CLIENT first"},
		{Name: ParamClientCPU, Doc: "client CPU per event read, in core-seconds, spent after the event's pages (the step's client_cpu_per_event: what the job burns, which calibration keeps); read per client host as client_cpu_s_per_event.HOST first"},
		{Name: ParamClientRecv, Doc: "client CPU per page received (the kernel and runtime taking it in), in core-seconds, spent beside the page's transfer; read per client host as client_cpu_s_per_page.HOST first; 0 uncalibrated"},
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
	id     int
	host   string // the client's
	server string // the host of the client's server (serverOf)
	actor  string
	pages  int64 // the pages it reads
}

// jobs are the step's jobs, each with the pages it reads: from the event
// its client draws, as the client draws it (the step's seed, the job's id).
func (e *Spec) jobs(env kind.ModelEnv) []modelJob {
	var jobs []modelJob
	for i, host := range e.Clients {
		for k := range e.Jobs {
			id := i*e.Jobs + k
			first := rand.New(rand.NewPCG(env.Seed(), uint64(id))).IntN(e.Store.Events)
			jobs = append(jobs, modelJob{id: id, host: host, server: e.serverOf(i), actor: env.Name(fmt.Sprintf("eventdb.job%d", id)),
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

// BatchJobs is the fewest jobs of a step that the model simulates with an
// event's pages per request, and MaxEventBatch the most pages it batches
// so: at grid scale, where the simulator's cost is the number of
// transfers, a server's link is full and the jobs queue for it.
const (
	BatchJobs     = 1000
	MaxEventBatch = 8
)

// batch is how many pages one simulated request stands for, for the
// step's jobs (n of them) that read pages pages in all: the
// pages_per_request param if set (0 is unset), else an event's pages for a
// step of BatchJobs jobs or more (at most MaxEventBatch), else 1; and at
// least the fewest that keep the requests within MaxCalls.
func (e *Spec) batch(env kind.ModelEnv, n int, pages int64) (int64, error) {
	k := int64(1)
	switch set := env.Param(ParamBatch, 0); {
	case set < 0 || set != math.Trunc(set) || set > math.MaxInt32:
		return 0, fmt.Errorf("eventdb model: %s must be a whole number of pages, 0 for the model's choice (got %g)", ParamBatch, set)
	case set > 0:
		k = int64(set)
	case n >= BatchJobs:
		k = min(MaxEventBatch, max(1, int64(math.Round(float64(e.Store.EventSize)/float64(e.Store.PageSize)))))
	}
	return max(k, (pages+MaxCalls-1)/MaxCalls), nil
}

// build makes the step's actors: the server, which serves pages with its
// threads; the accepting side of its sessions, which any number at once;
// and each client job, which opens its session (a handshake, then its
// token and hello) and asks for its pages one at a time, spending its CPU
// on each event.
func (e *Spec) build(env kind.ModelEnv) ([]sim.Actor, error) {
	var actors []sim.Actor
	for _, host := range e.servers() {
		server, accept := e.serverActors(env, host)
		sending, err := e.sending(env, host)
		if err != nil {
			return nil, err
		}
		actors = append(actors,
			sim.Actor{Name: server, Host: host, Daemon: true, Ops: []sim.Op{{Do: sim.Serve, Threads: e.threads(), Sending: sending}}},
			sim.Actor{Name: accept, Host: host, Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}})
	}
	jobs := e.jobs(env)
	var total int64
	for _, j := range jobs {
		total += j.pages
	}
	k, err := e.batch(env, len(jobs), total)
	if err != nil {
		return nil, err
	}
	timeout := e.Timeout.Seconds()
	ranks := map[string]int{} // the jobs of each client host so far
	for _, j := range jobs {
		server, accept := e.serverActors(env, j.server)
		// The pages with their headers: the path's efficiency is the share
		// of the wire's bytes that are pages.
		serverCPU := e.serverCPU(env, j.host)
		if serverCPU < 0 {
			return nil, fmt.Errorf("eventdb model: negative server CPU per page (%g s) for client %s", serverCPU, j.host)
		}
		wire := float64(e.Store.PageSize) / max(kind.TCPEfficiency(env, j.server, j.host), 1e-3)
		pages := func(n int64) sim.Op {
			return sim.Op{Do: sim.Call, To: server, Bytes: 8 * n, Reply: int64(math.Round(wire * float64(n))), ServerSeconds: serverCPU * float64(n), Timeout: timeout}
		}
		ops := []sim.Op{
			{Do: sim.Mark, Label: markStart},
			{Do: sim.Call, To: accept, Timeout: timeout},
			{Do: sim.Call, To: accept, Bytes: token.MessageLen + helloLen, Reply: token.MessageLen + 16, Timeout: timeout},
		}
		wait, err := firstWait(env, j.server, j.host, ranks[j.host], wire*float64(k))
		if err != nil {
			return nil, err
		}
		ranks[j.host]++
		if wait > 0 {
			ops = append(ops, sim.Op{Do: sim.Sleep, Seconds: wait})
		}
		request := []sim.Op{pages(k)}
		if k > 1 {
			// The round trips the other pages of the batch would take.
			path, err := env.Path(j.host, j.server)
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
		recv := e.clientRecv(env, j.host)
		if recv < 0 {
			return nil, fmt.Errorf("eventdb model: negative CPU per page received (%g s) on client %s", recv, j.host)
		}
		group := (len(jobs)*e.EventsPerJob + MaxPars - 1) / MaxPars
		ops = append(ops, readOps(j.pages/k, e.EventsPerJob, request, clientCPU, recv*float64(k), group)...)
		ops = append(ops, sim.Op{Do: sim.Mark, Label: markEnd})
		actors = append(actors, sim.Actor{Name: j.actor, Host: j.host, Ops: ops})
	}
	return actors, nil
}

// firstWait is how long a client host's rank-th job (from 0) waits
// before its first request: the rank replies of reply bytes before it,
// one after the other at the rate of the path from its server. A step's
// jobs ask for their first pages at once, and the link's queue sends the
// replies in turn, so the jobs go on taking turns on the path; the flow
// model shares a link between its flows equally, which would keep them in
// step: their pages all on the wire at once, then none while they all
// wait for a round trip or their CPU.
func firstWait(env kind.ModelEnv, server, host string, rank int, reply float64) (float64, error) {
	if rank == 0 {
		return 0, nil
	}
	path, err := env.Path(server, host)
	if err != nil {
		return 0, fmt.Errorf("eventdb model: %w", err)
	}
	if path.BottleneckBPS <= 0 {
		return 0, nil
	}
	return float64(rank) * reply * 8 / path.BottleneckBPS, nil
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

// clientRecv is the CPU a client host spends taking in each page it
// receives: its own (client_cpu_s_per_page.HOST, as calibration fits it),
// else every client's, else none.
func (e *Spec) clientRecv(env kind.ModelEnv, host string) float64 {
	return env.Param(ParamClientRecv+"."+host, env.Param(ParamClientRecv, 0))
}

// MaxPars bounds the Pars of a step's jobs: each Par's branches are actors
// of their own, whose memory the simulator keeps when they made calls.
const MaxPars = 1000

// readOps are a job's requests, spread over its events, with its CPU per
// event (cpu) after each event's requests, and its CPU per request
// received (recv) beside them: each event's reads are a Par of them and
// of their receiving, which costs time only when the host's CPU is short.
// Past MaxPars in the step (jobs of a step), one Par holds several events
// (group of them, at least one), its receiving beside all their reads.
func readOps(requests int64, events int, request []sim.Op, cpu, recv float64, group int) []sim.Op {
	if cpu == 0 && recv == 0 {
		return []sim.Op{{Do: sim.Repeat, Times: int(requests), Body: request}}
	}
	per, more := int(requests)/events, int(requests)%events
	event := func(n int) []sim.Op {
		var ops []sim.Op
		if n > 0 {
			ops = append(ops, sim.Op{Do: sim.Repeat, Times: n, Body: request})
		}
		if cpu > 0 {
			ops = append(ops, sim.Op{Do: sim.Exec, Seconds: cpu})
		}
		return ops
	}
	// run is events a to b (from 0), each of per requests, or per+1 for
	// the first more of the job.
	run := func(a, b int) (ops []sim.Op, n int) {
		if hi := min(b, more); hi > a {
			ops = append(ops, sim.Op{Do: sim.Repeat, Times: hi - a, Body: event(per + 1)})
			n += (hi - a) * (per + 1)
		}
		if lo := max(a, more); b > lo && len(event(per)) > 0 {
			ops = append(ops, sim.Op{Do: sim.Repeat, Times: b - lo, Body: event(per)})
			n += (b - lo) * per
		}
		return ops, n
	}
	if recv == 0 {
		ops, _ := run(0, events)
		return ops
	}
	group = max(1, group)
	var ops []sim.Op
	for a := 0; a < events; a += group {
		reads, n := run(a, min(events, a+group))
		if len(reads) == 0 {
			continue // events without requests or CPU
		}
		op := reads
		if n > 0 {
			op = []sim.Op{{Do: sim.Par, Branches: [][]sim.Op{reads, {{Do: sim.Exec, Seconds: recv * float64(n)}}}}}
		}
		// Groups alike are one Repeat.
		if last := len(ops) - 1; last >= 0 && ops[last].Do == sim.Repeat && reflect.DeepEqual(ops[last].Body, op) {
			ops[last].Times++
			continue
		}
		ops = append(ops, sim.Op{Do: sim.Repeat, Times: 1, Body: op})
	}
	return ops
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
	all := e.jobs(env)
	for _, j := range all {
		total += j.pages
		m := marks[j.actor]
		if m == nil {
			m = &jobMarks{}
		}
		rec := job.Record{ID: j.id, Host: j.host, Subject: e.subject(j.server), Start: simTime(m.start)}
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
		if err := e.addTCP(env, &rec, j.server); err != nil {
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
	if k, err := e.batch(env, len(all), total); err == nil && k > 1 {
		o.Notes = append(o.Notes, fmt.Sprintf("the eventdb model simulated its %d page requests %d pages at a time", total, k))
	}
	return o, nil
}

// addTCP gives a job its connection's TCP figures, to server: the path's
// round trip and, of the segments its pages took, those the path's loss
// costs.
func (e *Spec) addTCP(env kind.ModelEnv, rec *job.Record, server string) error {
	there, err := env.Path(rec.Host, server)
	if err != nil {
		return fmt.Errorf("eventdb model: %w", err)
	}
	back, err := env.Path(server, rec.Host)
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
