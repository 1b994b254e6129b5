package kind

import (
	"slices"

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
