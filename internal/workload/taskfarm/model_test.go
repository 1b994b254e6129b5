package taskfarm

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
)

func farmSpec(prefetch int, work string) *Spec {
	return &Spec{Master: "m", Workers: []string{"w1", "w2"}, Count: 3, Tasks: 5, Duration: time.Second,
		Work: work, ResultSize: 100, Prefetch: prefetch}
}

func farmEnv() *kindtest.ModelEnv {
	return &kindtest.ModelEnv{Default: kind.PathFacts{RTT: 100 * time.Millisecond, BottleneckBPS: 1e8, MTU: 1500}}
}

func TestBuild(t *testing.T) {
	const master = "s0/taskfarm.master"
	ask := sim.Op{Do: sim.Call, To: master, Bytes: 108, Reply: taskLen}
	hello := sim.Op{Do: sim.Call, To: master, Bytes: helloBytes, Reply: taskLen}
	mark := func(l string) sim.Op { return sim.Op{Do: sim.Mark, Label: l} }
	oneInFlight := func(work ...sim.Op) []sim.Op {
		return []sim.Op{{Do: sim.Repeat, Times: 1, UntilRefused: true, Body: []sim.Op{
			hello,
			{Do: sim.Repeat, UntilRefused: true, Body: append(append([]sim.Op{mark("task")}, work...), ask)},
		}}, mark("done")}
	}
	pipelined := func(work ...sim.Op) []sim.Op {
		return []sim.Op{{Do: sim.Repeat, Times: 1, UntilRefused: true, Body: []sim.Op{
			hello,
			{Do: sim.Repeat, UntilRefused: true, Body: []sim.Op{mark("task"), {Do: sim.Par, Branches: [][]sim.Op{work, {ask}}}}},
		}}, mark("last"), ask, mark("done")}
	}
	workers := func(ops []sim.Op, names ...string) []sim.Actor {
		actors := []sim.Actor{{Name: master, Host: "m", Daemon: true, Ops: []sim.Op{{Do: sim.Serve, Stock: 5}}}}
		for _, n := range names {
			host := "w1"
			if strings.HasPrefix(n, "worker1") {
				host = "w2"
			}
			actors = append(actors, sim.Actor{Name: "s0/taskfarm." + n, Host: host, Ops: ops})
		}
		return actors
	}
	sleep, exec := sim.Op{Do: sim.Sleep, Seconds: 1}, sim.Op{Do: sim.Exec, Seconds: 1}
	for _, tc := range []struct {
		name     string
		prefetch int
		work     string
		task     time.Duration
		want     []sim.Actor
	}{
		{"prefetch 1, asleep", 1, WorkSleep, time.Second, workers(oneInFlight(sleep), "worker0.0", "worker0.1", "worker1.0")},
		{"prefetch 1, on the CPU", 1, WorkCPU, time.Second, workers(oneInFlight(exec, mark("did")), "worker0.0", "worker0.1", "worker1.0")},
		{"prefetch 3 of tasks longer than the round trip", 3, WorkSleep, time.Second, workers(pipelined(sleep), "worker0.0", "worker0.1", "worker1.0")},
		{"prefetch 2 on the CPU", 2, WorkCPU, time.Second, workers(pipelined(exec, mark("did")), "worker0.0", "worker0.1", "worker1.0")},
		{"prefetch 2 of tasks shorter than the round trip: lanes", 2, WorkSleep, 50 * time.Millisecond,
			workers(oneInFlight(sim.Op{Do: sim.Sleep, Seconds: 0.05}),
				"worker0.0.lane0", "worker0.0.lane1", "worker0.1.lane0", "worker0.1.lane1", "worker1.0.lane0", "worker1.0.lane1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := farmEnv()
			s := farmSpec(tc.prefetch, tc.work)
			s.Duration = tc.task
			actors, err := Kind.Model.Build(env, s)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(actors, tc.want) {
				t.Errorf("actors\n%+v\nwant\n%+v", actors, tc.want)
			}
			kindtest.CheckModel(t, Kind.Model, env)
		})
	}
}

func TestBuildCosts(t *testing.T) {
	env := farmEnv()
	env.Fitted = map[string]float64{ParamTaskSeconds: 2, ParamMasterCPU: 0.001}
	actors, err := Kind.Model.Build(env, farmSpec(1, WorkSleep))
	if err != nil {
		t.Fatal(err)
	}
	body := actors[1].Ops[0].Body
	loop := body[1].Body
	if body[0].ServerSeconds != 0.001 || loop[1].Seconds != 2 || loop[2].ServerSeconds != 0.001 {
		t.Errorf("body %+v: want master CPU 0.001 s, tasks of 2 s", body)
	}
	if _, err := Kind.Model.Build(env, &struct{ Spec }{}); err == nil {
		t.Error("a spec of another kind built")
	}
}

// TestBuildSlowStart: a worker's results of 100 KB on a fresh connection
// take three flights from 10 segments (10, 20, 40), two round trips more
// than one; later ones go in one flight, unless the connection idled past
// its RTO (round trip + 200 ms) and its congestion control restarts slow
// start (not BBR's).
func TestBuildSlowStart(t *testing.T) {
	const rtt = 0.3
	for _, tc := range []struct {
		name   string
		cc     string
		task   time.Duration
		prefix []float64 // the prefix's waits, then the loop's
	}{
		{"short tasks: the first result only", "", 100 * time.Millisecond, []float64{2 * rtt, 0}},
		{"long tasks, bbr keeps its window", sim.BBR, time.Second, []float64{2 * rtt, 0}},
		// After 79 segments, 1.3 s idle halves twice (RTO 0.5 s): 19
		// segments, three flights (19, 38, 12); then 88 -> 22: (22, 44, 3).
		{"long tasks, cubic restarts after idle", sim.Cubic, time.Second, []float64{2 * rtt}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &kindtest.ModelEnv{Default: kind.PathFacts{RTT: time.Duration(rtt * float64(time.Second)), BottleneckBPS: 1e8, MTU: 1500, Congestion: tc.cc}}
			s := farmSpec(1, WorkSleep)
			s.ResultSize, s.Duration = 100_000, tc.task
			actors, err := Kind.Model.Build(env, s)
			if err != nil {
				t.Fatal(err)
			}
			var waits []float64
			var walk func(ops []sim.Op)
			walk = func(ops []sim.Op) {
				for i, op := range ops {
					switch {
					case op.Do == sim.Repeat:
						walk(op.Body)
					case op.Do == sim.Call && op.Bytes > helloBytes:
						w := 0.0
						if i > 0 && ops[i-1].Do == sim.Sleep && ops[i-1].Seconds != tc.task.Seconds() {
							w = ops[i-1].Seconds
						}
						waits = append(waits, w)
					}
				}
			}
			walk(actors[1].Ops)
			if len(waits) != len(tc.prefix) {
				t.Fatalf("waits before the results' calls %v, want %v", waits, tc.prefix)
			}
			for i := range waits {
				if math.Abs(waits[i]-tc.prefix[i]) > 1e-9 {
					t.Errorf("waits before the results' calls %v, want %v", waits, tc.prefix)
				}
			}
			kindtest.CheckModel(t, Kind.Model, env)
		})
	}
}

func at(sec float64) time.Time {
	return time.Unix(0, 0).UTC().Add(time.Duration(math.Round(sec * 1e9)))
}

func TestRead(t *testing.T) {
	task := func(id int, start, end float64) job.Record {
		return job.Record{ID: id, Subject: "task", Start: at(start), End: at(end), Bytes: 100, Status: job.OK}
	}
	w := func(k int) string {
		return []string{"s0/taskfarm.worker0.0", "s0/taskfarm.worker0.1", "s0/taskfarm.worker1.0"}[k]
	}
	for _, tc := range []struct {
		name     string
		prefetch int
		task     time.Duration
		marks    []sim.MarkAt
		jobs     []job.Record
		figures  map[string]float64
	}{
		{
			name: "prefetch 1: a task from its arrival to the next call's answer", prefetch: 1,
			marks: []sim.MarkAt{
				{Actor: w(0), Label: "task", T: 0.1}, {Actor: w(1), Label: "task", T: 0.1}, {Actor: w(2), Label: "task", T: 0.1},
				{Actor: w(0), Label: "task", T: 1.3}, {Actor: w(1), Label: "task", T: 1.3},
				{Actor: w(2), Label: "done", T: 1.3}, {Actor: w(0), Label: "done", T: 2.5}, {Actor: w(1), Label: "done", T: 2.5},
			},
			jobs: []job.Record{task(0, 0.05, 1.25), task(1, 0.05, 1.25), task(2, 0.05, 1.25), task(3, 1.25, 2.45), task(4, 1.25, 2.45)},
			figures: map[string]float64{
				results.Tasks: 5, results.TasksDone: 5, results.Workers: 3, results.Seconds: 2.4,
				results.TaskRateHz: 5 / 2.4, results.MessageRateHz: 10 / 2.4, results.ResultBytes: 500,
				results.IdealSeconds: 2, results.Efficiency: 2 / 2.4,
				// 5 s busy; 2.5+2.5+1.3 s of the workers' lives.
				results.WorkerIdleShare: 1.3 / 6.3, results.RoundtripP50Ms: 1200, results.RoundtripMeanMs: 1200,
			},
		},
		{
			name: "prefetch 2, pipelined: dispatched as the result before came back", prefetch: 2,
			marks: []sim.MarkAt{
				{Actor: w(0), Label: "task", T: 0.1}, {Actor: w(0), Label: "task", T: 1.1}, {Actor: w(0), Label: "task", T: 2.1},
				{Actor: w(0), Label: "last", T: 3.1}, {Actor: w(0), Label: "done", T: 3.2},
				// A worker refused its first task.
				{Actor: w(1), Label: "last", T: 0.1}, {Actor: w(1), Label: "done", T: 0.2},
			},
			jobs: []job.Record{task(0, 0.05, 1.15), task(1, 0.05, 2.15), task(2, 1.15, 3.15)},
			figures: map[string]float64{
				results.TasksDone: 3, results.Seconds: 3.1, results.ResultBytes: 300,
				// 3 s busy; 3.2+0.2+3.3 (the third never marked: the
				// simulation's end) of the workers' lives.
				results.WorkerIdleShare: 3.7 / 6.7,
			},
		},
		{
			name: "prefetch 2 of short tasks: a lane per task in flight", prefetch: 2, task: 50 * time.Millisecond,
			marks: []sim.MarkAt{
				{Actor: w(0) + ".lane0", Label: "task", T: 0.1}, {Actor: w(0) + ".lane1", Label: "task", T: 0.1},
				{Actor: w(0) + ".lane0", Label: "task", T: 0.25}, {Actor: w(0) + ".lane1", Label: "done", T: 0.25},
				{Actor: w(0) + ".lane0", Label: "done", T: 0.4},
			},
			jobs:    []job.Record{task(0, 0.05, 0.2), task(1, 0.05, 0.2), task(2, 0.2, 0.35)},
			figures: map[string]float64{results.TasksDone: 3, results.Seconds: 0.3},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := farmSpec(tc.prefetch, WorkSleep)
			if tc.task > 0 {
				s.Duration = tc.task
			}
			o, err := Kind.Model.Read(farmEnv(), s, &sim.Output{End: 3.3, Ended: true, Marks: tc.marks})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(o.Jobs, tc.jobs) {
				t.Errorf("tasks\n%+v\nwant\n%+v", o.Jobs, tc.jobs)
			}
			for name, want := range tc.figures {
				if got := o.Metrics[name]; math.Abs(got-want) > 1e-6 {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
		})
	}
}

func TestReadRefusesMoreTasksThanGranted(t *testing.T) {
	var marks []sim.MarkAt
	for i := range 6 {
		marks = append(marks, sim.MarkAt{Actor: "s0/taskfarm.worker0.0", Label: "task", T: float64(i)})
	}
	if _, err := Kind.Model.Read(farmEnv(), farmSpec(1, WorkSleep), &sim.Output{End: 6, Marks: marks}); err == nil {
		t.Error("6 tasks of 5 read")
	}
}

// TestSimulated runs the model on bin/wanlab-sim: 4 workers on two hosts
// 50 ms of round trip from the master (100 Mbit/s, where a result of
// 520 B takes 42 µs), against closed forms of the farm's time from its
// first dispatch to its last result, for n = tasks/workers rounds of
// tasks of D seconds over a round trip R:
//   - prefetch 1: every task pays the round trip: n x (D + R);
//   - prefetch 2 with D >= R: the next task is there as the last ends:
//     n x D + R (the first task's way there, the last result's way back);
//   - prefetch 2 with D < R: two tasks in flight, each D + R long:
//     n/2 x (D + R).
func TestSimulated(t *testing.T) {
	for _, tc := range []struct {
		name     string
		prefetch int
		tasks    int
		task     time.Duration
		want     float64
	}{
		{"prefetch 1", 1, 8, 500 * time.Millisecond, 2 * (0.5 + 0.05)},
		{"prefetch 2 of long tasks", 2, 8, 500 * time.Millisecond, 2*0.5 + 0.05},
		{"prefetch 2 of short tasks", 2, 16, 20 * time.Millisecond, 4 / 2.0 * (0.02 + 0.05)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hosts := []sim.Host{{Name: "m", Cores: 1, Speed: 1}, {Name: "w1", Cores: 4, Speed: 1}, {Name: "w2", Cores: 4, Speed: 1}}
			plat, env := kindtest.Star(hosts, 1e8, 12500*time.Microsecond)
			s := &Spec{Master: "m", Workers: []string{"w1", "w2"}, Count: 4, Tasks: tc.tasks, Duration: tc.task,
				Work: WorkSleep, ResultSize: 512, Prefetch: tc.prefetch}
			actors, err := Kind.Model.Build(env, s)
			if err != nil {
				t.Fatal(err)
			}
			o, err := Kind.Model.Read(env, s, kindtest.Simulate(t, plat, actors))
			if err != nil {
				t.Fatal(err)
			}
			m := o.Metrics
			t.Logf("%v tasks in %.4f s (%.2f Hz), round trip p50 %.1f ms, idle share %.3f",
				m[results.TasksDone], m[results.Seconds], m[results.TaskRateHz], m[results.RoundtripP50Ms], m[results.WorkerIdleShare])
			if m[results.TasksDone] != float64(tc.tasks) || len(o.Jobs) != tc.tasks {
				t.Fatalf("%v tasks done, %d jobs; want %d", m[results.TasksDone], len(o.Jobs), tc.tasks)
			}
			if got := m[results.Seconds]; math.Abs(got-tc.want) > 0.02*tc.want {
				t.Errorf("the farm took %.4f s, want %.4f s within 2%%", got, tc.want)
			}
		})
	}
}
