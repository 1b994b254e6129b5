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
