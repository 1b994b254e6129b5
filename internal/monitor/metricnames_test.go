package monitor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wanlab/wanlab/internal/agent/agentpb"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/measure"
	"github.com/wanlab/wanlab/internal/monitor/core"
)

// Every point the service writes has a registered metric name.
func TestEmittedPointsAreRegistered(t *testing.T) {
	at := time.Now()
	rt := uint32(3)
	probe := &measure.ProbeResult{From: "a", To: "b", Sent: 10, Received: 9}
	probe.OneWay.Reliable = true
	tp := &measure.ThroughputResult{}
	tp.End.SumSent.Retransmits = &rt
	tr := &measure.TransferResult{There: &measure.TransferLeg{}}
	var pts []archive.Point
	pts = append(pts, ProbePoints(at, "lat", probe)...)
	pts = append(pts, ThroughputPoints(at, "bulk", tp)...)
	pts = append(pts, TransferPoints(at, "copy", tr)...)
	pts = append(pts, DiskPoints(at, "disks", "a", &agentpb.DiskResult{})...)
	pts = append(pts, ifacePoints("snmp", "sw1", at, map[string]Rate{"eth0": {In: 1, Out: 2, Speed: 3}})...)
	if len(pts) < 20 {
		t.Fatalf("only %d points: the fixture misses some", len(pts))
	}
	for _, p := range pts {
		if _, ok := core.ByName(p.Metric); !ok {
			t.Errorf("point of %s: metric %q is not in core's registry", p.Test, p.Metric)
		}
	}
}

// Every series /metrics describes is in the registry.
func TestMetricsSeriesAreRegistered(t *testing.T) {
	s, _ := costServiceWith(t, "")
	ch := make(chan *prometheus.Desc, 100)
	newCollector(s).Describe(ch)
	close(ch)
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	n := 0
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		n++
		if !strings.HasPrefix(m[1], "wanlab_") || !slices.Contains(core.Series(), m[1]) {
			t.Errorf("/metrics describes %s, which core's registry does not list", m[1])
		}
	}
	if n != len(core.Series()) {
		t.Errorf("/metrics describes %d series, the registry lists %d", n, len(core.Series()))
	}
}

// No Go code of the service or the dashboard spells a registered name: it
// says core.RTTMin, not "rtt_min_seconds" (struct tags, the API's JSON
// field names, aside).
func TestNoMetricNameLiterals(t *testing.T) {
	names := map[string]bool{}
	for _, m := range slices.Concat(core.Metrics, core.Interface) {
		names[string(m.Name)] = true
	}
	for _, s := range core.Series() {
		names[s] = true
	}
	var files []string
	for _, pattern := range []string{"*.go", "core/*.go", "../dashboard/*.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == filepath.Join("core", "metric.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if _, ok := n.(*ast.Field); ok {
				return false // a struct tag is a literal too: the API's JSON names
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if v, err := strconv.Unquote(lit.Value); err == nil && names[v] {
				t.Errorf("%s: %s spells a registered name: use core's constant", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
	}
}
