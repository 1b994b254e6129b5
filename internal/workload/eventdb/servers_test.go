package eventdb

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

// callees are the actors ops call, in order, inside repeats and
// parallel branches too.
func callees(ops []sim.Op) []string {
	var out []string
	for _, op := range ops {
		if op.Do == sim.Call {
			out = append(out, op.To)
		}
		out = append(out, callees(op.Body)...)
		for _, branch := range op.Branches {
			out = append(out, callees(branch)...)
		}
	}
	return out
}

// TestModelSeveralServers: the model of a step of two servers has each
// server's actors on its host, and each client's jobs call only their own
// server (client i's, servers[i mod 2]); reading it back, each job names
// its server and has the round trip of its own path.
func TestModelSeveralServers(t *testing.T) {
	s := smallSpec(ModelThreads, 2)
	s.Server, s.Servers, s.Clients, s.Jobs = "", []string{"s1", "s2"}, []string{"c1", "c2", "c3"}, 1
	env := pathEnv()
	env.Paths = map[[2]string]kind.PathFacts{{"c2", "s2"}: {RTT: 40 * time.Millisecond, MTU: 1500}}
	actors, err := Kind.Model.Build(env, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(actors) != 4+3 {
		t.Fatalf("%d actors, want 4 of the servers and 3 jobs: %+v", len(actors), actors)
	}
	for i, want := range []sim.Actor{
		{Name: "s0/eventdb.server.s1", Host: "s1", Daemon: true, Ops: []sim.Op{{Do: sim.Serve, Threads: 2, Sending: MinSending}}},
		{Name: "s0/eventdb.accept.s1", Host: "s1", Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}},
		{Name: "s0/eventdb.server.s2", Host: "s2", Daemon: true, Ops: []sim.Op{{Do: sim.Serve, Threads: 2, Sending: MinSending}}},
		{Name: "s0/eventdb.accept.s2", Host: "s2", Daemon: true, Ops: []sim.Op{{Do: sim.Serve}}},
	} {
		if a := actors[i]; !reflect.DeepEqual(a, want) {
			t.Errorf("actor %d: %+v, want %+v", i, a, want)
		}
	}
	for i, server := range []string{"s1", "s2", "s1"} {
		a := actors[4+i]
		calls := callees(a.Ops)
		if len(calls) < 3 {
			t.Fatalf("job %d calls %q: want the two of its session, then its pages", i, calls)
		}
		for k, to := range calls {
			want := "s0/eventdb.server." + server
			if k < 2 {
				want = "s0/eventdb.accept." + server
			}
			if to != want {
				t.Errorf("job %d on %s: call %d to %s, want %s", i, a.Host, k, to, want)
			}
		}
	}
	out := &sim.Output{End: 2, Ended: true}
	for _, a := range actors[4:] {
		out.Marks = append(out.Marks, sim.MarkAt{Actor: a.Name, Label: "start", Iter: -1}, sim.MarkAt{Actor: a.Name, Label: "end", T: 2, Iter: -1})
	}
	o, err := Kind.Model.Read(env, s, out)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		subject string
		rtt     float64
	}{{"s1", 20}, {"s2", 40}, {"s1", 20}} {
		if j := o.Jobs[i]; j.Subject != want.subject || j.TCPRTTms != want.rtt || j.Status != job.OK {
			t.Errorf("job %d: %+v, want subject %s and a round trip of %v ms", i, j, want.subject, want.rtt)
		}
	}
	if o.Metrics[results.ServerPages] != 30 {
		t.Errorf("figures %v: want the 30 pages of both servers", o.Metrics)
	}
}

// TestSimulatedSeveralServers runs a step of two single-threaded servers
// on bin/wanlab-sim: each serves two of the four clients at once, so that
// the step, held by the servers' CPUs, lasts half as long as on one
// server: 2 x E x c.
func TestSimulatedSeveralServers(t *testing.T) {
	const events, c = 20, 0.01
	hosts := []sim.Host{{Name: "s1", Cores: 1, Speed: 1}, {Name: "s2", Cores: 1, Speed: 1}}
	clients := []string{"c1", "c2", "c3", "c4"}
	for _, h := range clients {
		hosts = append(hosts, sim.Host{Name: h, Cores: 1, Speed: 1})
	}
	plat, env := kindtest.Star(hosts, 1e9, 50*time.Microsecond)
	s := &Spec{Servers: []string{"s1", "s2"}, Clients: clients, Store: Store{Events: 1000, EventSize: 8192, PageSize: 8192},
		EventsPerJob: events, Jobs: 1, ServerCPUPerPage: time.Duration(c * float64(time.Second)), ServerModel: ModelSingle, Timeout: 25 * time.Second}
	actors, err := Kind.Model.Build(env, s)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Kind.Model.Read(env, s, kindtest.Simulate(t, plat, actors))
	if err != nil {
		t.Fatal(err)
	}
	want := 2 * events * c
	if span := kind.JobSpan(o.Jobs); math.Abs(span-want) > 0.05*want || o.Metrics[results.JobsEnded(job.OK)] != 4 || o.Metrics[results.ServerPages] != 4*events {
		t.Errorf("the step took %.4f s, want %.4f s within 5%%; figures %v", span, want, o.Metrics)
	}
}
