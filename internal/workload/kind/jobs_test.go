package kind

import (
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/job"
)

func TestJobMetrics(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	jobs := []job.Record{
		{Start: t0, End: t0.Add(60 * time.Second), Status: job.OK},
		{Start: t0.Add(time.Second), End: t0.Add(121 * time.Second), Status: job.OK},
		{Start: t0.Add(2 * time.Second), End: t0.Add(27 * time.Second), Status: job.Timeout, TCPRTTms: 30, TCPRetransmits: 4},
		{Start: t0.Add(3 * time.Second), End: t0.Add(4 * time.Second), Status: job.OK, TCPRTTms: 10, TCPRetransmits: 1},
	}
	m := JobMetrics(jobs)
	want := map[string]float64{"jobs_ok": 3, "jobs_timeout": 1, "mean_wallclock_s": 181.0 / 3, "min_wallclock_s": 1, "max_wallclock_s": 120,
		"tcp_rtt_mean_ms": 20, "tcp_retransmits": 5}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if len(JobMetrics(nil)) != 0 {
		t.Errorf("no jobs: %v", JobMetrics(nil))
	}
}

func TestJobSpan(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	jobs := []job.Record{
		{Start: t0, End: t0.Add(60 * time.Second), Status: job.OK},
		{Start: t0.Add(time.Second), End: t0.Add(121 * time.Second), Status: job.OK},
		{Start: t0.Add(3 * time.Second), End: t0.Add(4 * time.Second), Status: job.OK},
	}
	if got := JobSpan(jobs); got != 121 {
		t.Errorf("span %v, want 121", got)
	}
	if got := JobSpan(nil); got != 0 {
		t.Errorf("span of no jobs %v", got)
	}
}

// doneEnv counts the jobs done; the rest of Env is not used.
type doneEnv struct {
	Env
	done int
}

func (e *doneEnv) Done(job.Record) { e.done++ }

func TestCollector(t *testing.T) {
	env := &doneEnv{}
	c := NewCollector(env)
	c.Add(job.Record{ID: 1, Status: job.OK})
	c.Add(job.Record{ID: 2, Status: job.Failed})
	if got := c.Jobs(); len(got) != 2 || got[0].ID != 1 || got[1].ID != 2 || env.done != 2 {
		t.Errorf("kept %+v, %d counted done", got, env.done)
	}
}
