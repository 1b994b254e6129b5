package kind

import (
	"slices"
	"sync"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// JobMetrics summarises jobs as step figures: how many ended how, their
// wall-clock times, and their connections' TCP round trips and
// retransmissions.
func JobMetrics(jobs []job.Record) results.Metrics {
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

// JobSpan is the seconds from the first job's start to the last one's end
// (0 without jobs): the time over which a step's jobs moved their data.
func JobSpan(jobs []job.Record) float64 {
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

// Collector gathers the jobs a step's roles report (a Started's Summary
// hands each to Add), counting each one done on the step's Env as it
// comes, for the progress the controller shows.
type Collector struct {
	env  Env
	mu   sync.Mutex
	jobs []job.Record
}

// NewCollector makes a collector that counts jobs done on env.
func NewCollector(env Env) *Collector { return &Collector{env: env} }

// Add keeps one job that ended and counts it done.
func (c *Collector) Add(r job.Record) {
	c.mu.Lock()
	c.jobs = append(c.jobs, r)
	c.mu.Unlock()
	c.env.Done(r)
}

// Jobs are the jobs kept so far, in the order they came.
func (c *Collector) Jobs() []job.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.jobs)
}
