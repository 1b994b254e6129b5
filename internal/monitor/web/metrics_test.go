package web

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wanlab/wanlab/internal/monitor/core"
)

// Every series /metrics describes is in the registry.
func TestMetricsSeriesAreRegistered(t *testing.T) {
	s, _ := costServiceWith(t, "")
	ch := make(chan *prometheus.Desc, 100)
	newCollector(s.Service).Describe(ch)
	close(ch)
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	// The incidents' series are core's too, declared beside them.
	registered := core.Series()
	n := 0
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		n++
		if !strings.HasPrefix(m[1], "wanlab_") || !slices.Contains(registered, m[1]) {
			t.Errorf("/metrics describes %s, which core's registry does not list", m[1])
		}
	}
	if n != len(registered) {
		t.Errorf("/metrics describes %d series, the registry lists %d", n, len(registered))
	}
}
