package taskfarm

// The task farm's simulation model (issue 34): the master and its workers
// as actors of the simulator's model program (internal/sim), and the
// farm's figures and tasks read back from what the simulation gave, as
// Run gives them from the roles.

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/wanlab/wanlab/internal/sim"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// The model's params, which calibration may fit.
const (
	ParamTaskSeconds = "task_s"
	ParamMasterCPU   = "master_cpu_s_per_task"
)

// The labels of a worker's marks: a task at hand, its work done (CPU
// work only), its last result leaving (pipelined), and the worker told
// there are no more tasks.
const (
	markTask = "task"
	markDid  = "did"
	markLast = "last"
	markDone = "done"
)

// resultHeader is the bytes a result carries beside its payload.
const resultHeader = 8

// helloBytes is a worker's first call: its token's greeting and hello.
const helloBytes = 64

// model is the taskfarm kind's kind.Model.
var model = kind.Model{
	Build: func(env kind.ModelEnv, s kind.Spec) ([]sim.Actor, error) {
		t, err := specOf(s)
		if err != nil {
			return nil, err
		}
		return t.build(env)
	},
	Read: func(env kind.ModelEnv, s kind.Spec, out *sim.Output) (*kind.Outcome, error) {
		t, err := specOf(s)
		if err != nil {
			return nil, err
		}
		return t.read(env, out)
	},
	Assumptions: []string{
		"TCP is SimGrid's LV08 flow model: flows share each link fairly from their first byte, with no packets and no queueing delay; a result's slow start is added before its call as the round trips its window's flights take beyond the first (tasks, of a few bytes, take one).",
		kind.ConnAssumption,
		"Every worker starts at once: the master's wait for all of them to connect, and their TCP handshakes, are not simulated.",
		"A result and the task the master answers it with are one call, as on the wire; the first call is the worker's hello.",
		"With prefetch above 1, a worker whose tasks last at least a round trip asks for its next task while it works on the current one, so the master never keeps it waiting (as the real prefetch does); its tasks' round trips are timed from when the real prefetch would dispatch them.",
		"With prefetch above 1 and tasks shorter than a round trip, a worker is simulated as that many lanes with one task in flight each, which may work on several tasks at once where the real worker queues them.",
		"Loss is not simulated: tasks and results travel in calls, whose flows the simulator does not cap (the Mathis bound caps sends), and a lost segment costs no retransmission timeout.",
		"The master's times (a task's dispatch, its result's arrival) are the worker's shifted by half the path's round trip.",
		"Tasks are numbered in the order they were dispatched.",
	},
	Params: []kind.Param{
		{Name: ParamTaskSeconds, Doc: "a task's work, in seconds asleep or core-seconds of CPU (the step's duration)"},
		{Name: ParamMasterCPU, Doc: "master CPU per task handed out, in core-seconds; 0 uncalibrated"},
	},
	Fit: fit,
}

// specOf is s as a task farm step.
func specOf(s kind.Spec) (*Spec, error) {
	t, ok := s.(*Spec)
	if !ok {
		return nil, fmt.Errorf("a task farm model with a %T spec", s)
	}
	return t, nil
}

// modelWorker is one worker of a farm, as the model runs it: one actor,
// or one per lane.
type modelWorker struct {
	host   string
	actors []string
	// pipelined: it asks for its next task while it works.
	pipelined bool
}

// workers are the farm's workers, shared out over its hosts as Run shares
// them, each run the way the model runs it: pipelined when its prefetch
// and its tasks hide its round trip, else one lane per task in flight.
func (s *Spec) workers(env kind.ModelEnv) ([]modelWorker, error) {
	task := env.Param(ParamTaskSeconds, s.Duration.Seconds())
	var ws []modelWorker
	for i, host := range s.Workers {
		n := s.workersOn(i)
		if n == 0 {
			continue
		}
		rtt, err := s.roundTrip(env, host)
		if err != nil {
			return nil, err
		}
		pipelined := s.Prefetch > 1 && task >= rtt
		for k := range n {
			name := fmt.Sprintf("taskfarm.worker%d.%d", i, k)
			w := modelWorker{host: host, pipelined: pipelined}
			if s.Prefetch == 1 || pipelined {
				w.actors = []string{env.Name(name)}
			} else {
				for j := range s.Prefetch {
					w.actors = append(w.actors, env.Name(fmt.Sprintf("%s.lane%d", name, j)))
				}
			}
			ws = append(ws, w)
		}
	}
	return ws, nil
}

// resultPrefix bounds the results whose own round trips the model works
// out one by one: past them, every result takes the last one's.
const resultPrefix = 8

// resultRounds are the round trips a worker's results take under slow
// start, beyond one flight, in seconds: the first results' one by one
// (its connection is fresh, its hello too small to grow the window), and
// the last of them for every result after. Between two results the
// connection idles the task's round trip and its work (work only,
// pipelined), which past the RTO restarts slow start (kind.TCPConn).
func (s *Spec) resultRounds(env kind.ModelEnv, host string, work float64, pipelined bool) ([]float64, error) {
	path, err := env.Path(host, s.Master)
	if err != nil {
		return nil, fmt.Errorf("task farm model: %w", err)
	}
	rtt := path.RTT.Seconds()
	idle := work
	if !pipelined {
		idle += rtt
	}
	conn := kind.ConnOf(path)
	extra := make([]float64, resultPrefix)
	for i := range extra {
		extra[i] = float64(conn.Message(int64(resultHeader+s.ResultSize), idle)) * rtt
	}
	// The prefix up to where the rounds stay what they end with.
	n := len(extra)
	for n > 1 && extra[n-2] == extra[n-1] {
		n--
	}
	return extra[:n], nil
}

// roundTrip is a task's round trip to a worker on host beside its work,
// in seconds: the path's there and back, and the time a result and a task
// take at its bottleneck.
func (s *Spec) roundTrip(env kind.ModelEnv, host string) (float64, error) {
	there, err := env.Path(host, s.Master)
	if err != nil {
		return 0, fmt.Errorf("task farm model: %w", err)
	}
	back, err := env.Path(s.Master, host)
	if err != nil {
		return 0, fmt.Errorf("task farm model: %w", err)
	}
	rtt := there.RTT.Seconds()
	if there.BottleneckBPS > 0 {
		rtt += float64(resultHeader+s.ResultSize) * 8 / there.BottleneckBPS
	}
	if back.BottleneckBPS > 0 {
		rtt += taskLen * 8 / back.BottleneckBPS
	}
	return rtt, nil
}

// build makes the farm's actors: the master, which grants the tasks, and
// the workers, which ask for them until refused (workerOps).
func (s *Spec) build(env kind.ModelEnv) ([]sim.Actor, error) {
	master := env.Name("taskfarm.master")
	task := env.Param(ParamTaskSeconds, s.Duration.Seconds())
	masterCPU := env.Param(ParamMasterCPU, 0)
	if task < 0 || masterCPU < 0 {
		return nil, fmt.Errorf("task farm model: negative task time (%g s) or master CPU per task (%g s)", task, masterCPU)
	}
	workers, err := s.workers(env)
	if err != nil {
		return nil, err
	}
	work := []sim.Op{{Do: sim.Sleep, Seconds: task}}
	if s.Work == WorkCPU {
		work = []sim.Op{{Do: sim.Exec, Seconds: task}, {Do: sim.Mark, Label: markDid}}
	}
	actors := []sim.Actor{{Name: master, Host: s.Master, Daemon: true, Ops: []sim.Op{{Do: sim.Serve, Stock: s.Tasks}}}}
	ops := map[string][]sim.Op{}
	for _, w := range workers {
		if ops[w.host] == nil {
			extra, err := s.resultRounds(env, w.host, task+masterCPU, w.pipelined)
			if err != nil {
				return nil, err
			}
			ops[w.host] = s.workerOps(master, work, masterCPU, w.pipelined, extra)
		}
		for _, a := range w.actors {
			actors = append(actors, sim.Actor{Name: a, Host: w.host, Ops: ops[w.host]})
		}
	}
	return actors, nil
}

// workerOps is a worker's program (or a lane's): a hello, then calls
// that each carry a result and bring the next task, until the master
// refuses one. A result's round trips beyond its first flight (extra[i]
// for the i-th result, the last of extra for every later one) delay its
// call. With one task in flight (prefetch 1, or a lane) it asks once its
// task is done; pipelined, it asks beside its work, the last result going
// in a call of its own after the loop.
func (s *Spec) workerOps(master string, work []sim.Op, masterCPU float64, pipelined bool, extra []float64) []sim.Op {
	hello := sim.Op{Do: sim.Call, To: master, Bytes: helloBytes, Reply: taskLen, ServerSeconds: masterCPU}
	mark := func(label string) sim.Op { return sim.Op{Do: sim.Mark, Label: label} }
	// result is the call carrying a result whose extra round trips took
	// wait seconds.
	result := func(wait float64) []sim.Op {
		ask := sim.Op{Do: sim.Call, To: master, Bytes: int64(resultHeader + s.ResultSize), Reply: taskLen, ServerSeconds: masterCPU}
		if wait <= 0 {
			return []sim.Op{ask}
		}
		return []sim.Op{{Do: sim.Sleep, Seconds: wait}, ask}
	}
	// step is one task at hand, given the rounds of the result that
	// follows (lanes) or goes beside it (pipelined).
	step := func(wait float64) []sim.Op {
		if pipelined {
			return []sim.Op{mark(markTask), {Do: sim.Par, Branches: [][]sim.Op{work, result(wait)}}}
		}
		return append(append([]sim.Op{mark(markTask)}, work...), result(wait)...)
	}
	// Once: a worker refused its first task has nothing to do, nor one
	// refused a task of the prefix.
	body := []sim.Op{hello}
	for _, wait := range extra[:len(extra)-1] {
		body = append(body, step(wait)...)
	}
	steady := extra[len(extra)-1]
	body = append(body, sim.Op{Do: sim.Repeat, UntilRefused: true, Body: step(steady)})
	ops := []sim.Op{{Do: sim.Repeat, Times: 1, UntilRefused: true, Body: body}}
	if pipelined {
		ops = append(append(append(ops, mark(markLast)), result(steady)...), mark(markDone))
		return ops
	}
	return append(ops, mark(markDone))
}

// simTime is a time of the simulation as a task's time.
func simTime(t float64) time.Time {
	return time.Unix(0, 0).UTC().Add(time.Duration(math.Round(t * 1e9)))
}

// actorMarks are the marks of one actor, in time order.
type actorMarks struct {
	tasks, did []float64
	last, done float64
	ended      bool
}

// marksOf sorts out the marks of each actor.
func marksOf(out *sim.Output) map[string]*actorMarks {
	by := map[string]*actorMarks{}
	for _, m := range out.Marks {
		a := by[m.Actor]
		if a == nil {
			a = &actorMarks{}
			by[m.Actor] = a
		}
		switch m.Label {
		case markTask:
			a.tasks = append(a.tasks, m.T)
		case markDid:
			a.did = append(a.did, m.T)
		case markLast:
			a.last = m.T
		case markDone:
			a.done, a.ended = m.T, true
		}
	}
	return by
}

// read makes the farm's figures and tasks, as Run does from the master's
// result and the workers' idle and busy times.
func (s *Spec) read(env kind.ModelEnv, out *sim.Output) (*kind.Outcome, error) {
	workers, err := s.workers(env)
	if err != nil {
		return nil, err
	}
	marks := marksOf(out)
	task := env.Param(ParamTaskSeconds, s.Duration.Seconds())
	var jobs []job.Record
	var idle, busy float64
	granted := 0
	for _, w := range workers {
		path, err := env.Path(s.Master, w.host)
		if err != nil {
			return nil, fmt.Errorf("task farm model: %w", err)
		}
		half := path.RTT.Seconds() / 2
		// The worker is busy with its tasks' work; the rest of its life
		// it waits for a task, or for the master's word that the farm
		// has ended.
		life, b := 0.0, 0.0
		for _, a := range w.actors {
			m := marks[a]
			if m == nil {
				m = &actorMarks{}
			}
			granted += len(m.tasks)
			if w.pipelined {
				jobs = append(jobs, s.pipelinedJobs(m, half)...)
			} else {
				jobs = append(jobs, s.laneJobs(m, half)...)
			}
			end := out.End
			if m.ended {
				end = m.done
			}
			life = max(life, end)
			if s.Work == WorkCPU {
				for i, t := range m.did {
					b += t - m.tasks[i]
				}
			} else {
				b += float64(len(m.tasks)) * task
			}
		}
		busy += b
		idle += max(0, life-b)
	}
	if granted > s.Tasks {
		return nil, fmt.Errorf("task farm model: the workers worked on %d tasks of %d: the simulator went on after a refused call", granted, s.Tasks)
	}
	slices.SortStableFunc(jobs, func(a, b job.Record) int { return a.Start.Compare(b.Start) })
	res := Result{Tasks: s.Tasks, Completed: len(jobs), Workers: s.Count, ResultBytes: int64(len(jobs)) * int64(s.ResultSize)}
	for i := range jobs {
		jobs[i].ID = i
	}
	if res.Seconds = kind.JobSpan(jobs); res.Seconds > 0 {
		res.TaskRate = float64(res.Completed) / res.Seconds
		res.MessageRate = 2 * float64(res.Completed) / res.Seconds
	}
	return outcome(s, res, jobs, idle, busy), nil
}

// task is one task's job record, from its dispatch to its result's
// arrival, in seconds.
func (s *Spec) task(dispatch, result float64) job.Record {
	return job.Record{Subject: "task", Start: simTime(dispatch), End: simTime(result), Bytes: int64(s.ResultSize), Status: job.OK}
}

// laneJobs are the tasks of one lane (or a worker of prefetch 1) whose
// results reached the master, in the master's time (the worker's less
// half a round trip): a task runs from its arrival to the answer (or
// refusal) of the next call, whose request carried its result.
func (s *Spec) laneJobs(m *actorMarks, half float64) []job.Record {
	var jobs []job.Record
	for i, t := range m.tasks {
		switch {
		case i+1 < len(m.tasks):
			jobs = append(jobs, s.task(t-half, m.tasks[i+1]-half))
		case m.ended:
			jobs = append(jobs, s.task(t-half, m.done-half))
		}
	}
	return jobs
}

// pipelinedJobs are the tasks of a pipelined worker whose results reached
// the master: a task's result left with the call beside the next task's
// work (the last one's after the loop) and arrived half a round trip
// later; the master had dispatched it as the result Prefetch tasks before
// arrived (the first Prefetch at once, as the first task arrived).
func (s *Spec) pipelinedJobs(m *actorMarks, half float64) []job.Record {
	n := len(m.tasks)
	arrived := make([]float64, 0, n)
	for i := range n {
		switch {
		case i+1 < n:
			arrived = append(arrived, m.tasks[i+1]+half)
		case m.ended:
			arrived = append(arrived, m.last+half)
		}
	}
	var jobs []job.Record
	for i, end := range arrived {
		start := m.tasks[0] - half
		if i >= s.Prefetch {
			start = arrived[i-s.Prefetch]
		}
		jobs = append(jobs, s.task(start, end))
	}
	return jobs
}
