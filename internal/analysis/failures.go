package analysis

// Where jobs start failing, and why.

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// failures finds the first step where jobs fail, and why.
func failures(w Workload) []Finding {
	for _, s := range sortedByConcurrency(w) {
		m := s.Metrics
		timeouts, failed, corrupt := m.Value(results.JobsWith(job.Timeout)), m.Value(results.JobsWith(job.Failed)), m.Value(results.JobsWith(job.Corrupt))
		bad := timeouts + failed + corrupt
		if bad == 0 {
			continue
		}
		total := 0.0
		for _, f := range m.Figures() {
			if f.Name == results.Jobs && f.Status != "" {
				total += m.Value(f)
			}
		}
		reasons := map[string]int{}
		for _, j := range s.Jobs {
			if j.Status != job.OK && j.Status != job.Cancelled {
				reasons[shortReason(j.Reason)]++
			}
		}
		top, n := "", 0
		for r, c := range reasons {
			if c > n || c == n && r < top {
				top, n = r, c
			}
		}
		values := map[string]float64{"concurrency": Concurrency(s), "timeouts": timeouts, "failed": failed,
			"corrupt": corrupt, "failed_share": bad / max(total, 1)}
		text := fmt.Sprintf("Jobs start failing at %s: %.0f of %.0f (%.0f timed out, %.0f failed, %.0f corrupt)", jobsWord(w, s), bad, total,
			values["timeouts"], values["failed"], values["corrupt"])
		if top != "" {
			text += fmt.Sprintf("; most often: %s", top)
		}
		return []Finding{{Kind: "failures", Workload: w.Name, Text: text + ".", Values: values}}
	}
	return nil
}

// shortReason drops the per-job details of a reason (job and page
// numbers, addresses, ports) so that alike failures count together.
func shortReason(r string) string {
	if _, after, ok := strings.Cut(r, ": "); ok && strings.HasPrefix(r, "job ") {
		r = after
	}
	r = eventRE.ReplaceAllString(r, "")
	r = addrRE.ReplaceAllString(r, "ADDR")
	return numberRE.ReplaceAllString(r, "N")
}

var (
	eventRE  = regexp.MustCompile(` \(event [^)]*\)`)
	addrRE   = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+`)
	numberRE = regexp.MustCompile(`\b\d+\b`)
)
