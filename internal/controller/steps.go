package controller

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/workload/token"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// outcome is what one step measured: named figures, jobs and samples of
// its own (the sampler adds the test-bed's).
type outcome struct {
	metrics results.Metrics
	jobs    []job.Record
	samples []archive.Sample
	events  []string // warnings worth keeping
	notes   []string // what else happened (captures written)
}

// stepEnv is what a step runs with.
type stepEnv struct {
	hosts map[string]measure.Endpoint
	topo  *topology.Topology
	bed   backend.Bed
	seed  uint64
	id    string // unique among the run's steps, for role ids
	// token opens the connections of the step's application roles.
	token token.Token
	// jobs counts jobs for the progress bar: expected, finished, failed.
	expected, finished, failed *counter
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add(n int) {
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// collect gathers the jobs roles report, counting them for the progress bar.
type collect struct {
	env  *stepEnv
	mu   sync.Mutex
	jobs []job.Record
}

func (c *collect) add(r job.Record) {
	c.mu.Lock()
	c.jobs = append(c.jobs, r)
	c.mu.Unlock()
	c.env.finished.add(1)
	if r.Status != job.OK {
		c.env.failed.add(1)
	}
}

// execStep runs one step of a workload.
func execStep(ctx context.Context, env *stepEnv, s scenario.Step) (*outcome, error) {
	ctx = measure.AsTest(ctx) // the step's calls are one test to the agents
	switch {
	case s.EventDB != nil:
		return runEventDB(ctx, env, s.EventDB)
	case s.TaskFarm != nil:
		return runTaskFarm(ctx, env, s.TaskFarm)
	case s.Mesh != nil:
		return runMesh(ctx, env, s.Mesh)
	case s.Throughput != nil:
		return runThroughput(ctx, env, s.Throughput)
	case s.Transfer != nil:
		return runTransfer(ctx, env, s.Transfer)
	case s.Probe != nil:
		return runProbe(ctx, env, s.Probe)
	case s.Impact != nil:
		return runImpact(ctx, env, s.Impact)
	case s.Command != nil:
		return runCommand(ctx, env, s.Command)
	}
	return nil, errors.New("a step with no workload")
}

// jobMetrics summarises jobs: how many ended how, their wall-clock times,
// and their connections' TCP round trips and retransmissions.
func jobMetrics(jobs []job.Record) results.Metrics {
	m := results.Metrics{}
	var wct []float64
	rtt, withRTT := 0.0, 0
	for _, j := range jobs {
		m[results.JobsEnded(j.Status)]++
		if j.Status == job.OK {
			wct = append(wct, j.Wallclock().Seconds())
		}
		if j.TCPRTTms > 0 {
			rtt += j.TCPRTTms
			withRTT++
		}
		m[results.TCPRetransmits] += float64(j.TCPRetransmits)
	}
	if withRTT > 0 {
		m[results.TCPRTTMeanMs] = rtt / float64(withRTT)
	}
	if len(wct) > 0 {
		slices.Sort(wct)
		sum := 0.0
		for _, w := range wct {
			sum += w
		}
		m[results.MeanWallclockS] = sum / float64(len(wct))
		m[results.MinWallclockS] = wct[0]
		m[results.MaxWallclockS] = wct[len(wct)-1]
	}
	return m
}

// jobSpan is the seconds from the first job's start to the last one's end.
func jobSpan(jobs []job.Record) float64 {
	if len(jobs) == 0 {
		return 0
	}
	first, last := jobs[0].Start, jobs[0].End
	for _, j := range jobs {
		if j.Start.Before(first) {
			first = j.Start
		}
		if j.End.After(last) {
			last = j.End
		}
	}
	return last.Sub(first).Seconds()
}

func boolFigure(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
