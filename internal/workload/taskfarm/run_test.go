package taskfarm

import (
	"context"
	"errors"
	"math"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// started lists the roles env started, as "host id role", sorted.
func started(env *kindtest.Env) []string {
	var s []string
	for _, r := range env.Started() {
		s = append(s, r.Host+" "+r.ID+" "+r.Name)
	}
	slices.Sort(s)
	return s
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    Spec
		started []string
	}{
		{name: "three workers over two hosts",
			spec:    Spec{Master: "m", Workers: []string{"w1", "w2"}, Count: 3, Tasks: 12, Duration: 10 * time.Millisecond, Work: WorkSleep, ResultSize: 100, Prefetch: 1},
			started: []string{"m step0-master taskfarm-master", "w1 step0-workers0 taskfarm-workers", "w2 step0-workers1 taskfarm-workers"}},
		{name: "one worker, a host left idle",
			spec:    Spec{Master: "m", Workers: []string{"w1", "w2"}, Count: 1, Tasks: 5, Work: WorkCPU, ResultSize: 10, Prefetch: 2},
			started: []string{"m step0-master taskfarm-master", "w1 step0-workers0 taskfarm-workers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := kindtest.NewEnv(t, Kind)
			o, err := Kind.Run(context.Background(), env, &tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Jobs) != tc.spec.Tasks || len(env.Jobs()) != tc.spec.Tasks || env.Expected() != tc.spec.Tasks {
				t.Fatalf("%d jobs, %d done, %d expected; want %d", len(o.Jobs), len(env.Jobs()), env.Expected(), tc.spec.Tasks)
			}
			if got := started(env); !slices.Equal(got, tc.started) {
				t.Errorf("started %q, want %q", got, tc.started)
			}
			m := o.Metrics
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{results.Tasks, m[results.Tasks], float64(tc.spec.Tasks)},
				{results.TasksDone, m[results.TasksDone], float64(tc.spec.Tasks)},
				{results.Workers, m[results.Workers], float64(tc.spec.Count)},
				{results.ResultBytes, m[results.ResultBytes], float64(tc.spec.Tasks * tc.spec.ResultSize)},
				{results.IdealSeconds, m[results.IdealSeconds], math.Ceil(float64(tc.spec.Tasks)/float64(tc.spec.Count)) * tc.spec.Duration.Seconds()},
			} {
				if f.got != f.want {
					t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
				}
			}
			if m[results.Seconds] <= 0 || m[results.TaskRateHz] <= 0 || m[results.RoundtripP50Ms] <= 0 ||
				m[results.RoundtripP99Ms] < m[results.RoundtripP50Ms] || m[results.WorkerIdleShare] < 0 || m[results.WorkerIdleShare] > 1 {
				t.Errorf("figures %v", m)
			}
		})
	}
}

func TestRunWithoutItsMaster(t *testing.T) {
	env := kindtest.NewEnv(t, Kind)
	env.Down = []string{"m"}
	o, err := Kind.Run(context.Background(), env, &Spec{Master: "m", Workers: []string{"w1"}, Count: 1, Tasks: 3, Work: WorkSleep, Prefetch: 1})
	if err == nil || o != nil {
		t.Fatalf("outcome %v, error %v: want an error alone", o, err)
	}
	if got := started(env); len(got) != 0 {
		t.Errorf("started %q with no master", got)
	}
}

func TestRunRefusesAnotherSpec(t *testing.T) {
	var other struct{ kind.Spec }
	if _, err := Kind.Run(context.Background(), kindtest.NewEnv(t, Kind), other); err == nil {
		t.Error("ran a spec of another kind")
	}
}

// TestOutcome: the farm's figures from what the master and the workers said.
func TestOutcome(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var jobs []job.Record
	for i, ms := range []int{10, 20, 30, 40} {
		jobs = append(jobs, job.Record{ID: i, Start: t0, End: t0.Add(time.Duration(ms) * time.Millisecond), Status: job.OK})
	}
	spec := &Spec{Tasks: 10, Count: 4, Duration: time.Second}
	res := Result{Completed: 4, Seconds: 6, TaskRate: 4.0 / 6, MessageRate: 8.0 / 6, ResultBytes: 400}
	o := outcome(spec, res, jobs, 1, 3)
	want := results.Metrics{
		results.Tasks: 10, results.TasksDone: 4, results.Workers: 4, results.Seconds: 6, results.TaskRateHz: 4.0 / 6,
		results.MessageRateHz: 8.0 / 6, results.ResultBytes: 400, results.IdealSeconds: 3, results.Efficiency: 0.5,
		results.WorkerIdleShare: 0.25, results.RoundtripP50Ms: 25, results.RoundtripP99Ms: 39.7, results.RoundtripMeanMs: 25,
	}
	if len(o.Metrics) != len(want) {
		t.Errorf("figures %v, want %v", o.Metrics, want)
	}
	for k, v := range want {
		if math.Abs(o.Metrics[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, o.Metrics[k], v)
		}
	}
	if len(o.Jobs) != 4 {
		t.Errorf("%d jobs", len(o.Jobs))
	}
	if o := outcome(spec, Result{}, nil, 0, 0); o.Metrics[results.Efficiency] != 0 || o.Metrics[results.RoundtripP50Ms] != 0 {
		t.Errorf("a farm that did nothing: %v", o.Metrics)
	}
}

// quietEnv is a role's env on loopback whose controller cannot be told
// where it listens.
type quietEnv struct {
	kind.RoleEnv
	port int
}

func (e *quietEnv) Limits() limits.Limits { return limits.Default }
func (e *quietEnv) Test() bind.Local      { return bind.Local{Addr: "127.0.0.1"} }

func (e *quietEnv) Listening(port int) error {
	e.port = port
	return errors.New("the stream is gone")
}

// TestMasterThatCannotSayWhereClosesItsPort: a master whose listening
// cannot be told ends, its port closed, not left open for nobody.
func TestMasterThatCannotSayWhereClosesItsPort(t *testing.T) {
	env := &quietEnv{}
	spec := &MasterSpec{Tasks: 1, Work: WorkSleep, Prefetch: 1, Workers: 1, Token: token.New()}
	sum, err := runMaster(context.Background(), env, spec)
	if err == nil || sum != nil || env.port == 0 {
		t.Fatalf("summary %v, error %v, port %d: want an error alone, after listening", sum, err, env.port)
	}
	if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(env.port))); err == nil {
		c.Close()
		t.Errorf("port %d still open", env.port)
	}
}
