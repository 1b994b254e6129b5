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
	job := append(slices.Clone(open),
		sim.Op{Do: sim.Repeat, Times: 10, Body: []sim.Op{{Do: sim.Repeat, Times: 1, Body: []sim.Op{page}}, {Do: sim.Exec, Seconds: 0.002}}},
		sim.Op{Do: sim.Mark, Label: "end"})
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
				{Name: "s0/eventdb.server", Host: "srv", Daemon: true, Ops: []sim.Op{{Do: sim.Serve, Threads: tc.want}}},
				{Name: "s0/eventdb.accept", Host: "srv", Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}},
				{Name: "s0/eventdb.job0", Host: "c1", Ops: job},
				{Name: "s0/eventdb.job1", Host: "c1", Ops: job},
				{Name: "s0/eventdb.job2", Host: "c2", Ops: job},
				{Name: "s0/eventdb.job3", Host: "c2", Ops: job},
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
	got := readOps(11, 2, []sim.Op{page}, 0.5)
	want := []sim.Op{
		{Do: sim.Repeat, Times: 1, Body: []sim.Op{{Do: sim.Repeat, Times: 6, Body: []sim.Op{page}}, {Do: sim.Exec, Seconds: 0.5}}},
		{Do: sim.Repeat, Times: 1, Body: []sim.Op{{Do: sim.Repeat, Times: 5, Body: []sim.Op{page}}, {Do: sim.Exec, Seconds: 0.5}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ops %+v, want %+v", got, want)
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
