package results

import "time"

// CFSPeriod is the period every host's CPU quota is enforced over (the CFS
// period internal/cgroup sets with each quota): a host may spend the whole
// quota of a period at its start.
const CFSPeriod = 100 * time.Millisecond

// MinQuotaWindow is the shortest window a host's share of its quota is
// taken over. A window cuts a period at each end, and the quota of both
// may fall inside it: over ten periods a share may read up to 20 points
// high, over one period up to 200.
const MinQuotaWindow = 10 * CFSPeriod

// QuotaShare is the one rule of a host's CPU as a share of its quota: CPU
// used at corePct (% of one core) over window, as % of a quota of cpus
// cores, and whether it can be told. It cannot over a window shorter than
// MinQuotaWindow, nor where more was used than the two periods the window
// cuts explain (the quota was not in force). Otherwise the share is at
// most 100%: the quota held in every period, and what shows above it is
// the cut periods'.
func QuotaShare(corePct float64, window time.Duration, cpus float64) (float64, bool) {
	if cpus <= 0 || window < MinQuotaWindow {
		return 0, false
	}
	share := corePct / cpus
	if share > 100*(1+2*CFSPeriod.Seconds()/window.Seconds()) {
		return 0, false
	}
	return min(share, 100), true
}
