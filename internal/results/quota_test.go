package results

import (
	"testing"
	"time"
)

// TestQuotaShare: a server with a 0.3-core quota was shown at 124-250% of
// it on steps under a second, its CPU taken over windows that cut CFS
// periods whose whole quota fell inside them.
func TestQuotaShare(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corePct float64
		window  time.Duration
		cpus    float64
		want    float64
		ok      bool
	}{
		{"250% over 0.4 s", 75, 400 * time.Millisecond, 0.3, 0, false},
		{"124% over 0.9 s", 37.2, 900 * time.Millisecond, 0.3, 0, false},
		{"half over one period", 15, CFSPeriod, 0.3, 0, false},
		{"half over 0.99 s", 15, 990 * time.Millisecond, 0.3, 0, false},
		{"half over 1 s", 15, time.Second, 0.3, 50, true},
		{"110% over 2 s: the two cut periods", 33, 2 * time.Second, 0.3, 100, true},
		{"exactly what the cut periods explain", 132, 2 * time.Second, 1.2, 100, true},
		{"150% over 2 s: no quota", 45, 2 * time.Second, 0.3, 0, false},
		{"120.1% over 1 s", 36.03, time.Second, 0.3, 0, false},
		{"full over a minute", 200, time.Minute, 2, 100, true},
		{"idle", 0, time.Minute, 2, 0, true},
		{"no quota", 50, time.Minute, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := QuotaShare(tc.corePct, tc.window, tc.cpus)
			if ok != tc.ok || ok && (got < tc.want-1e-9 || got > tc.want+1e-9) {
				t.Errorf("QuotaShare(%v, %v, %v) = %v, %v; want %v, %v", tc.corePct, tc.window, tc.cpus, got, ok, tc.want, tc.ok)
			}
		})
	}
}
