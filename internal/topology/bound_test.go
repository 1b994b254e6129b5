package topology

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/scenario"
)

// TestHostBound checks the bound on hosts: an emulated test-bed holds
// MaxHosts (each host a namespace), one that is only simulated
// MaxSimulatedHosts, counted before any path is made.
func TestHostBound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hosts   int
		backend string
		want    string // in the error; "" for none
	}{
		{"emulated at the bound", MaxHosts, "", ""},
		{"emulated past the bound", MaxHosts + 1, "", "one machine holds at most 512"},
		{"emulated written out past the bound", MaxHosts + 1, scenario.BackendEmulated, "backend: simulated"},
		{"simulated past the emulated bound", MaxHosts + 1, scenario.BackendSimulated, ""},
		{"simulated past its bound", MaxSimulatedHosts + 1, scenario.BackendSimulated, "a simulated test-bed holds at most 2000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := &scenario.Testbed{Name: "big", Subnet: scenario.DefaultSubnet, Sites: []scenario.Site{{Name: "s"}}}
			if tc.backend == scenario.BackendSimulated {
				tb.Backend = tc.backend
			}
			for i := range tc.hosts {
				tb.Hosts = append(tb.Hosts, scenario.Host{Name: fmt.Sprintf("h%d", i), Site: "s"})
			}
			// checkSize alone: New would make every pair's path.
			err := checkSize(tb)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
