package eventdb

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// smallSpec is a step of two clients of two jobs each, whose events are
// one page each.
func smallSpec(model string, threads int) *Spec {
	return &Spec{Server: "srv", Clients: []string{"c1", "c2"}, Store: Store{Events: 100, EventSize: 8192, PageSize: 8192},
		EventsPerJob: 10, Jobs: 2, ClientCPUPerEvent: 2 * time.Millisecond, ServerCPUPerPage: time.Millisecond,
		ServerModel: model, Threads: threads, Timeout: 5 * time.Second}
}

func pathEnv() *kindtest.ModelEnv {
	return &kindtest.ModelEnv{Step: 7, Default: kind.PathFacts{RTT: 20 * time.Millisecond, BottleneckBPS: 1e8, MTU: 1500}}
}

func TestBuild(t *testing.T) {
	page := sim.Op{Do: sim.Call, To: "s0/eventdb.server", Bytes: 8, Reply: 8192, ServerSeconds: 0.001, Timeout: 5}
	open := []sim.Op{
		{Do: sim.Mark, Label: "start"},
		{Do: sim.Call, To: "s0/eventdb.accept", Timeout: 5},
		{Do: sim.Call, To: "s0/eventdb.accept", Bytes: 32, Reply: 36, Timeout: 5},
	}
	reads := []sim.Op{
		{Do: sim.Repeat, Times: 10, Body: []sim.Op{{Do: sim.Repeat, Times: 1, Body: []sim.Op{page}}, {Do: sim.Exec, Seconds: 0.002}}},
		{Do: sim.Mark, Label: "end"},
	}
	job := slices.Concat(open, reads)
	// A host's second job starts reading one page's transfer after its
	// first (8 KiB at 100 Mbit/s).
	second := slices.Concat(open, []sim.Op{{Do: sim.Sleep, Seconds: 8192 * 8 / 1e8}}, reads)
	for _, tc := range []struct {
		model   string
		threads int
		want    int // the server's threads
	}{
		{ModelSingle, 0, 1},
		{ModelThreads, 3, 3},
		{ModelConnection, 0, 0},
	} {
		t.Run(tc.model, func(t *testing.T) {
			env := pathEnv()
			actors, err := Kind.Model.Build(env, smallSpec(tc.model, tc.threads))
			if err != nil {
				t.Fatal(err)
			}
			want := []sim.Actor{
				{Name: "s0/eventdb.server", Host: "srv", Daemon: true, Ops: []sim.Op{{Do: sim.Serve, Threads: tc.want, Sending: MinSending}}},
				{Name: "s0/eventdb.accept", Host: "srv", Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}},
				{Name: "s0/eventdb.job0", Host: "c1", Ops: job},
				{Name: "s0/eventdb.job1", Host: "c1", Ops: second},
				{Name: "s0/eventdb.job2", Host: "c2", Ops: job},
				{Name: "s0/eventdb.job3", Host: "c2", Ops: second},
			}
			if !reflect.DeepEqual(actors, want) {
				t.Errorf("actors\n%+v\nwant\n%+v", actors, want)
			}
			kindtest.CheckModel(t, Kind.Model, env)
		})
	}
}

func TestBuildCosts(t *testing.T) {
	page := func(cpu float64) sim.Op {
		return sim.Op{Do: sim.Call, To: "s0/eventdb.server", Bytes: 8, Reply: 8192, ServerSeconds: cpu, Timeout: 5}
	}
	for _, tc := range []struct {
		name   string
		fitted map[string]float64
		client time.Duration
		want   []sim.Op // the job's reads
	}{
		{"no client CPU: one repeat of the pages", nil, 0,
			[]sim.Op{{Do: sim.Repeat, Times: 10, Body: []sim.Op{page(0.001)}}}},
		{"fitted costs", map[string]float64{ParamServerCPU: 0.003, ParamServerOverhead: 0.0005, ParamClientCPU: 0.01}, 0,
			[]sim.Op{{Do: sim.Repeat, Times: 10, Body: []sim.Op{{Do: sim.Repeat, Times: 1, Body: []sim.Op{page(0.0035)}}, {Do: sim.Exec, Seconds: 0.01}}}}},
		{"fitted receiving, per host first", map[string]float64{ParamClientRecv: 0.5, ParamClientRecv + ".c1": 0.0002}, 0,
			[]sim.Op{{Do: sim.Repeat, Times: 10, Body: []sim.Op{{Do: sim.Par, Branches: [][]sim.Op{
				{{Do: sim.Repeat, Times: 1, Body: []sim.Op{{Do: sim.Repeat, Times: 1, Body: []sim.Op{page(0.001)}}}}}, {{Do: sim.Exec, Seconds: 0.0002}}}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := pathEnv()
			env.Fitted = tc.fitted
			s := smallSpec(ModelSingle, 0)
			s.ClientCPUPerEvent = tc.client
			actors, err := Kind.Model.Build(env, s)
			if err != nil {
				t.Fatal(err)
			}
			ops := actors[2].Ops
			if got := ops[3 : len(ops)-1]; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("reads %+v, want %+v", got, tc.want)
			}
		})
	}
	if _, err := Kind.Model.Build(pathEnv(), &struct{ Spec }{}); err == nil {
		t.Error("a spec of another kind built")
	}
}

func TestBuildBatches(t *testing.T) {
	// Two jobs of 600,001 one-page events: 1,200,002 pages, 2 a request.
	s := smallSpec(ModelSingle, 0)
	s.Clients, s.Jobs, s.ClientCPUPerEvent = []string{"c1", "c2"}, 1, 0
	s.Store.Events, s.EventsPerJob = 1<<20, 600_001
	env := pathEnv()
	actors, err := Kind.Model.Build(env, s)
	if err != nil {
		t.Fatal(err)
	}
	call := func(n int64) sim.Op {
		return sim.Op{Do: sim.Call, To: "s0/eventdb.server", Bytes: 8 * n, Reply: 8192 * n, ServerSeconds: 0.001 * float64(n), Timeout: 5}
	}
	want := []sim.Op{call(1), {Do: sim.Repeat, Times: 300_000, Body: []sim.Op{call(2), {Do: sim.Sleep, Seconds: 0.02}}}}
	if ops := actors[2].Ops; !reflect.DeepEqual(ops[3:len(ops)-1], want) {
		t.Errorf("reads %+v, want %+v", ops[3:len(ops)-1], want)
	}
	out := &sim.Output{End: 1, Ended: true}
	o, err := Kind.Model.Read(env, s, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Notes) != 1 || !strings.Contains(o.Notes[0], "1200002 page requests 2 pages at a time") {
		t.Errorf("notes %q: want the batches said", o.Notes)
	}
}

func TestBatch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		jobs      int
		pages     int64
		eventSize int64
		set       float64 // pages_per_request, 0 unset
		want      int64
		bad       bool
	}{
		{name: "few jobs", jobs: BatchJobs - 1, pages: 75 * (BatchJobs - 1), eventSize: 40_000, want: 1},
		{name: "an event's pages", jobs: BatchJobs, pages: 75 * BatchJobs, eventSize: 40_000, want: 5},
		{name: "events of one page", jobs: 6000, pages: 15 * 6000, eventSize: 8192, want: 1},
		{name: "large events", jobs: 6000, pages: 6000 * 100, eventSize: 1 << 20, want: MaxEventBatch},
		{name: "past a million requests", jobs: 10, pages: 2_500_000, eventSize: 40_000, want: 3},
		{name: "past a million, many jobs", jobs: 2000, pages: 20_000_000, eventSize: 40_000, want: 20},
		{name: "set to every page", jobs: 6000, pages: 75 * 6000, eventSize: 40_000, set: 1, want: 1},
		{name: "set", jobs: 10, pages: 750, eventSize: 40_000, set: 3, want: 3},
		{name: "set, past a million", jobs: 6000, pages: 2_500_000, eventSize: 40_000, set: 1, want: 3},
		{name: "negative", jobs: 10, pages: 750, eventSize: 40_000, set: -1, bad: true},
		{name: "fraction", jobs: 10, pages: 750, eventSize: 40_000, set: 1.5, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := smallSpec(ModelThreads, 4)
			s.Store.EventSize = tc.eventSize
			env := pathEnv()
			if tc.set != 0 {
				env.Fitted = map[string]float64{ParamBatch: tc.set}
			}
			got, err := s.batch(env, tc.jobs, tc.pages)
			if (err != nil) != tc.bad || got != tc.want {
				t.Errorf("batch = %d, %v; want %d (an error: %v)", got, err, tc.want, tc.bad)
			}
		})
	}
}

// TestBuildBatchesEvents builds a step of BatchJobs jobs: each request
// is an event's pages, with the round trips of the others slept.
func TestBuildBatchesEvents(t *testing.T) {
	s := smallSpec(ModelThreads, 4)
	s.Clients, s.Jobs, s.ClientCPUPerEvent = []string{"c1"}, BatchJobs, 0
	s.Store.EventSize, s.EventsPerJob = 5*8192, 10
	env := pathEnv()
	actors, err := Kind.Model.Build(env, s)
	if err != nil {
		t.Fatal(err)
	}
	// A job of 10 events of 5 pages each, in 10 requests of 5 pages.
	call := sim.Op{Do: sim.Call, To: "s0/eventdb.server", Bytes: 40, Reply: 5 * 8192, ServerSeconds: 0.005, Timeout: 5}
	want := []sim.Op{{Do: sim.Repeat, Times: 10, Body: []sim.Op{call, {Do: sim.Sleep, Seconds: 0.08}}}}
	if ops := actors[2].Ops; !reflect.DeepEqual(ops[3:len(ops)-1], want) {
		t.Errorf("reads %+v, want %+v", ops[3:len(ops)-1], want)
	}
	env.Fitted = map[string]float64{ParamBatch: 1}
	if actors, err = Kind.Model.Build(env, s); err != nil {
		t.Fatal(err)
	}
	call = sim.Op{Do: sim.Call, To: "s0/eventdb.server", Bytes: 8, Reply: 8192, ServerSeconds: 0.001, Timeout: 5}
	want = []sim.Op{{Do: sim.Repeat, Times: 50, Body: []sim.Op{call}}}
	if ops := actors[2].Ops; !reflect.DeepEqual(ops[3:len(ops)-1], want) {
		t.Errorf("with %s=1: reads %+v, want %+v", ParamBatch, ops[3:len(ops)-1], want)
	}
}

// brutePages counts a job's page requests as the client's loop makes them.
func brutePages(s Store, first, n int) int64 {
	var count int64
	last := int64(-1)
	for k := range n {
		lo, hi := s.eventPages((first + k) % s.Events)
		for p := lo; p <= hi; p++ {
			if p != last {
				count++
				last = p
			}
		}
	}
	return count
}

func TestJobPages(t *testing.T) {
	for _, s := range []Store{
		{Events: 10, EventSize: 40000, PageSize: 8192},
		{Events: 7, EventSize: 8192, PageSize: 8192},
		{Events: 13, EventSize: 9000, PageSize: 4096},
		{Events: 1, EventSize: 8192, PageSize: 8192},
	} {
		for first := range s.Events {
			for n := 1; n <= s.Events; n++ {
				if got, want := s.jobPages(first, n), brutePages(s, first, n); got != want {
					t.Errorf("%+v from event %d, %d events: %d pages, want %d", s, first, n, got, want)
				}
			}
		}
	}
}

func TestReadOps(t *testing.T) {
	page := sim.Op{Do: sim.Call}
	pages := func(n int) sim.Op { return sim.Op{Do: sim.Repeat, Times: n, Body: []sim.Op{page}} }
	exec := func(s float64) sim.Op { return sim.Op{Do: sim.Exec, Seconds: s} }
	events := func(times int, body ...sim.Op) sim.Op { return sim.Op{Do: sim.Repeat, Times: times, Body: body} }
	beside := func(recv float64, reads ...sim.Op) sim.Op {
		return sim.Op{Do: sim.Par, Branches: [][]sim.Op{reads, {exec(recv)}}}
	}
	for _, tc := range []struct {
		name      string
		requests  int64
		events    int
		cpu, recv float64
		group     int
		want      []sim.Op
	}{
		{"no CPU: one repeat of the requests", 11, 2, 0, 0, 1, []sim.Op{pages(11)}},
		{"CPU per event after its requests", 11, 2, 0.5, 0, 1,
			[]sim.Op{events(1, pages(6), exec(0.5)), events(1, pages(5), exec(0.5))}},
		{"receiving beside each event's reads", 11, 2, 0.5, 0.25, 1, []sim.Op{
			events(1, beside(6*0.25, events(1, pages(6), exec(0.5)))),
			events(1, beside(5*0.25, events(1, pages(5), exec(0.5))))}},
		{"events alike are one repeat", 4, 2, 0, 0.25, 1, []sim.Op{events(2, beside(0.5, events(1, pages(2))))}},
		{"receiving beside a group of events", 7, 6, 0.5, 0.25, 3, []sim.Op{
			events(1, beside(4*0.25, events(1, pages(2), exec(0.5)), events(2, pages(1), exec(0.5)))),
			events(1, beside(3*0.25, events(3, pages(1), exec(0.5))))}},
		{"events without requests keep their CPU", 1, 3, 0.5, 0.25, 1, []sim.Op{
			events(1, beside(0.25, events(1, pages(1), exec(0.5)))), events(2, events(1, exec(0.5)))}},
		{"events without requests or CPU are left out", 1, 3, 0, 0.25, 1, []sim.Op{events(1, beside(0.25, events(1, pages(1))))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readOps(tc.requests, tc.events, []sim.Op{page}, tc.cpu, tc.recv, tc.group); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ops %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRead(t *testing.T) {
	s := smallSpec(ModelSingle, 0)
	s.Clients, s.Jobs = []string{"c1", "c2"}, 1
	at := func(sec float64) time.Time { return time.Unix(0, 0).UTC().Add(time.Duration(sec * 1e9)) }
	out := &sim.Output{End: 3, Ended: true, Marks: []sim.MarkAt{
		{Actor: "s0/eventdb.job0", Label: "start", Iter: -1},
		{Actor: "s0/eventdb.job1", Label: "start", Iter: -1},
		{Actor: "s0/eventdb.job1", Label: sim.TimeoutLabel, T: 1.5, Iter: 4},
		{Actor: "s0/eventdb.job0", Label: "end", T: 2, Iter: -1},
		{Actor: "s0/eventdb.job1", Label: "end", T: 3, Iter: -1},
	}}
	env := pathEnv()
	env.Paths = map[[2]string]kind.PathFacts{{"srv", "c2"}: {RTT: 20 * time.Millisecond, Loss: 0.05, MTU: 1500}}
	o, err := Kind.Model.Read(env, s, out)
	if err != nil {
		t.Fatal(err)
	}
	wantJobs := []job.Record{
		{ID: 0, Host: "c1", Start: at(0), End: at(2), Bytes: 10 * 8192, Status: job.OK, TCPRTTms: 20},
		{ID: 1, Host: "c2", Start: at(0), End: at(1.5), Bytes: 5 * 8192, Status: job.Timeout,
			Reason: "job 1: no answer within the RPC timeout (5s)", TCPRTTms: 20, TCPRetransmits: 1}, // 29 segments at 5%
	}
	if !reflect.DeepEqual(o.Jobs, wantJobs) {
		t.Errorf("jobs\n%+v\nwant\n%+v", o.Jobs, wantJobs)
	}
	for name, want := range map[string]float64{
		results.Jobs: 2, results.JobsPerClient: 1, results.JobsEnded(job.OK): 1, results.JobsEnded(job.Timeout): 1,
		results.MeanWallclockS: 2, results.ServerPages: 15, results.ThroughputMbps: 15 * 8192 * 8 / 2.0 / 1e6,
		results.TCPRTTMeanMs: 20, results.TCPRetransmits: 1,
	} {
		if got := o.Metrics[name]; math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}

	// A job still running when the simulation stopped failed.
	out = &sim.Output{End: 4, Marks: []sim.MarkAt{{Actor: "s0/eventdb.job0", Label: "start", T: 1}}}
	o, err = Kind.Model.Read(pathEnv(), s, out)
	if err != nil {
		t.Fatal(err)
	}
	if j := o.Jobs[0]; j.Status != job.Failed || !j.End.Equal(at(4)) || j.Bytes != 0 || o.Metrics[results.ServerPages] != 0 {
		t.Errorf("an unfinished job: %+v, figures %v", j, o.Metrics)
	}
}

// TestSimulated runs the model on bin/wanlab-sim: jobs of E one-page
// events against a server spending c of CPU per page, on a LAN where a
// page's round trip (0.4 ms of latency, 66 µs of transfer) is small
// beside c. Once the server's CPU saturates, the step lasts as long as its
// CPU work: N x E x c over its threads (one for single, two cores for
// threads 2 and connection), whatever N.
func TestSimulated(t *testing.T) {
	const events, c = 20, 0.01
	for _, tc := range []struct {
		model   string
		threads int
		clients int
		timeout time.Duration
		want    float64 // the step's seconds; 0: some jobs time out
	}{
		{ModelSingle, 0, 1, 25 * time.Second, 1 * events * c},
		{ModelSingle, 0, 2, 25 * time.Second, 2 * events * c},
		{ModelSingle, 0, 4, 25 * time.Second, 4 * events * c},
		{ModelThreads, 2, 4, 25 * time.Second, 4 * events * c / 2},
		{ModelConnection, 0, 4, 25 * time.Second, 4 * events * c / 2},
		// Each request waits for the three others' pages: 30 ms.
		{ModelSingle, 0, 4, 25 * time.Millisecond, 0},
	} {
		t.Run(fmt.Sprintf("%s %d clients timeout %v", tc.model, tc.clients, tc.timeout), func(t *testing.T) {
			hosts := []sim.Host{{Name: "srv", Cores: 2, Speed: 1}}
			var clients []string
			for i := range tc.clients {
				clients = append(clients, fmt.Sprintf("c%d", i+1))
				hosts = append(hosts, sim.Host{Name: clients[i], Cores: 1, Speed: 1})
			}
			plat, env := kindtest.Star(hosts, 1e9, 50*time.Microsecond)
			s := &Spec{Server: "srv", Clients: clients, Store: Store{Events: 1000, EventSize: 8192, PageSize: 8192},
				EventsPerJob: events, Jobs: 1, ServerCPUPerPage: time.Duration(c * float64(time.Second)),
				ServerModel: tc.model, Threads: tc.threads, Timeout: tc.timeout}
			actors, err := Kind.Model.Build(env, s)
			if err != nil {
				t.Fatal(err)
			}
			o, err := Kind.Model.Read(env, s, kindtest.Simulate(t, plat, actors))
			if err != nil {
				t.Fatal(err)
			}
			span := kind.JobSpan(o.Jobs)
			t.Logf("%d jobs over %.4f s, mean wall-clock %.4f s, %v pages, %.2f Mbit/s, %v timed out",
				len(o.Jobs), span, o.Metrics[results.MeanWallclockS], o.Metrics[results.ServerPages],
				o.Metrics[results.ThroughputMbps], o.Metrics[results.JobsEnded(job.Timeout)])
			if tc.want == 0 {
				if o.Metrics[results.JobsEnded(job.Timeout)] == 0 {
					t.Errorf("no job timed out: %v", o.Metrics)
				}
				return
			}
			if math.Abs(span-tc.want) > 0.05*tc.want {
				t.Errorf("the step took %.4f s, want %.4f s within 5%%", span, tc.want)
			}
			pages := float64(tc.clients * events)
			if o.Metrics[results.JobsEnded(job.OK)] != float64(tc.clients) || o.Metrics[results.ServerPages] != pages ||
				math.Abs(o.Metrics[results.ThroughputMbps]-pages*8192*8/span/1e6) > 1e-9 {
				t.Errorf("figures %v: want %d jobs ok, %v pages", o.Metrics, tc.clients, pages)
			}
		})
	}
}

// TestSimulatedReceive runs one job of 10 one-page events on
// bin/wanlab-sim over 8 Mbit/s links of 0.5 ms a hop: a page's request
// and reply take 2 ms of latency and 8.2 ms of transfer, then the client
// spends 5 ms of its one core on the event. Its CPU per page received runs
// beside the job's reads: a little of it costs some time where it shares
// the core with the events' CPU, but far less than in series; much of it
// holds the job to its core (all its CPU, one core-second a second). The
// client's CPU is all of it either way.
func TestSimulatedReceive(t *testing.T) {
	const events, cpu = 10, 0.005
	const request = 0.002 + 8*8/8e6 + 8192*8/8e6 // a page's call: latency and transfers
	// The session's two calls, then each event's page and CPU.
	const open = 0.002 + 0.002 + (token.MessageLen+helloLen+token.MessageLen+16)*8/8e6
	const alone = open + events*(request+cpu)
	for _, tc := range []struct {
		name     string
		recv     float64
		min, max float64 // the job's wall-clock
	}{
		{"no receiving", 0, alone, alone},
		{"receiving beside the reads", 0.004, alone, alone + events*0.004/2},
		{"receiving longer than the reads: the core holds the job", 0.030, open + events*(0.030+cpu), open + events*(0.030+cpu)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hosts := []sim.Host{{Name: "srv", Cores: 1, Speed: 1}, {Name: "c1", Cores: 1, Speed: 1}}
			plat, env := kindtest.Star(hosts, 8e6, 500*time.Microsecond)
			env.Fitted = map[string]float64{ParamClientRecv: tc.recv}
			s := &Spec{Server: "srv", Clients: []string{"c1"}, Store: Store{Events: 1000, EventSize: 8192, PageSize: 8192},
				EventsPerJob: events, Jobs: 1, ClientCPUPerEvent: 5 * time.Millisecond,
				ServerModel: ModelSingle, Timeout: 25 * time.Second}
			actors, err := Kind.Model.Build(env, s)
			if err != nil {
				t.Fatal(err)
			}
			out := kindtest.Simulate(t, plat, actors)
			o, err := Kind.Model.Read(env, s, out)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Metrics[results.MeanWallclockS]; got < 0.97*tc.min || got > 1.03*tc.max {
				t.Errorf("wall-clock %.4f s, want %.4f-%.4f s (3%% either side)", got, tc.min, tc.max)
			}
			if got, want := out.HostCPU["c1"], events*(cpu+tc.recv); math.Abs(got-want) > 1e-9 {
				t.Errorf("the client's CPU %.6f s, want %.6f s", got, want)
			}
		})
	}
}

// TestFirstWait: a client host's jobs start reading one reply's transfer
// after another on the path from their server; a path without a rate
// staggers nothing, and an unknown path is an error.
func TestFirstWait(t *testing.T) {
	env := pathEnv()
	env.Paths = map[[2]string]kind.PathFacts{{"srv", "slow"}: {RTT: time.Millisecond, BottleneckBPS: 1e6}, {"srv", "norate"}: {RTT: time.Millisecond}}
	for _, tc := range []struct {
		host  string
		rank  int
		reply float64
		want  float64
	}{
		{"c1", 0, 8192, 0},
		{"c1", 3, 8192, 3 * 8192 * 8 / 1e8},
		{"slow", 2, 1000, 2 * 1000 * 8 / 1e6},
		{"norate", 5, 8192, 0},
	} {
		got, err := firstWait(env, "srv", tc.host, tc.rank, tc.reply)
		if err != nil || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("job %d of %s, replies of %g B: waits %g s (%v), want %g s", tc.rank, tc.host, tc.reply, got, err, tc.want)
		}
	}
	env.Default = kind.PathFacts{}
	if _, err := firstWait(env, "srv", "elsewhere", 1, 8192); err == nil {
		t.Error("a path the platform does not know: no error")
	}
}
