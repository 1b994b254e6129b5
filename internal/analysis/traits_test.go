package analysis

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// TestFindersCoverTraits: every finding a kind's traits list is one the
// analysis knows how to find.
func TestFindersCoverTraits(t *testing.T) {
	names := append([]results.Kind{}, results.Kinds...)
	for _, k := range kinds.All() {
		names = append(names, k.Name)
	}
	for _, name := range names {
		for _, f := range kinds.TraitsOf(name).Findings {
			if _, ok := finders[f]; !ok {
				t.Errorf("kind %s lists the finding %q, which the analysis does not know", name, f)
			}
		}
	}
}

// toySpec is a step of a toy kind, registered in this test only: jobs
// run from one host to the clients.
type toySpec struct {
	server  string
	clients []string
	jobs    int
}

func (s *toySpec) Length() time.Duration          { return 0 }
func (s *toySpec) RoleHosts() map[string][]string { return nil }
func (s *toySpec) Concurrency() float64           { return float64(s.jobs * len(s.clients)) }
func (s *toySpec) Ends() (servers, clients []string, singleThreaded bool) {
	return []string{s.server}, s.clients, false
}

// TestANewKindIsAnalysedByItsTraits: a kind the analysis has never heard
// of gets the findings its traits list, in its own words, and verdicts
// from its spec's capabilities.
func TestANewKindIsAnalysedByItsTraits(t *testing.T) {
	defer kinds.Register(kind.Kind{Name: "toy", Traits: kind.Traits{Findings: []kind.Finding{kind.Saturation, kind.Failures}, Concurrency: "transfer"}})()
	tb := testbedOf(t, serverClient)
	w := Workload{Name: "toy", Kind: "toy", Testbed: tb}
	for i, mbps := range []float64{30, 60, 61, 60} {
		jobs := 1 << i
		m := map[string]float64{"throughput_mbps": mbps, "jobs_ok": float64(jobs), "cpu_pct.server": 10, "cpu_pct.client": 95,
			"link_utilization_pct.server->client": mbps}
		if jobs == 8 {
			m["jobs_ok"], m["jobs_timeout"] = 6, 2
		}
		w.Steps = append(w.Steps, Step{Index: i, Label: fmt.Sprintf("transfers=%d", jobs), Status: "done", Metrics: m,
			Config: scenario.Step{Spec: &toySpec{server: "server", clients: []string{"client"}, jobs: jobs}}})
	}
	r := Of([]Workload{w}, DefaultOptions)
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Kind)
	}
	if want := "saturation bottleneck failures"; strings.Join(got, " ") != want {
		t.Errorf("findings %v, want %s", got, want)
	}
	if s := find(t, r, "saturation"); !strings.Contains(s.Text, "with 4 transfers") {
		t.Errorf("saturation does not count the kind's transfers: %q", s.Text)
	}
	if b := find(t, r, "bottleneck"); b.Bottleneck != ClientCPU || !strings.Contains(b.Text, "the CPU of the client (host client)") {
		t.Errorf("bottleneck %s: %q", b.Bottleneck, b.Text)
	}
	if f := find(t, r, "failures"); !strings.Contains(f.Text, "at 8 transfers") {
		t.Errorf("failures: %q", f.Text)
	}
}

// TestImportedRun: an imported iperf3 test is analysed as a throughput
// test between the hosts it names, through its spec's capabilities.
func TestImportedRun(t *testing.T) {
	a, err := archive.Open(filepath.Join(t.TempDir(), "i.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	params := ImportParams{File: "x.json", From: "cern", To: "slac", Protocol: "udp", Streams: 2}
	id, err := a.StartRun(archive.NewRun{Kind: ImportIperf3, Name: "cern->slac", Params: params})
	if err != nil {
		t.Fatal(err)
	}
	step, err := a.StartStep(id, 0, "iperf3", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	metrics := map[string]float64{"throughput_mbps": 9.5, "lost_percent": 1.5, "jitter_ms": 0.25}
	if err := a.EndStep(step, archive.StatusDone, "", map[string]any{"metrics": metrics, "kind": "throughput"}); err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(context.Background(), a, id, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	f := find(t, r, "throughput")
	if want := "cern->slac: 9.50 Mbit/s of UDP with 2 streams, 1.5% lost, jitter 0.250 ms."; f.Text != want {
		t.Errorf("the imported test's finding says %q, want %q", f.Text, want)
	}
	if len(r.Workloads) != 1 || r.Workloads[0].Kind != results.Throughput {
		t.Errorf("workloads %+v", r.Workloads)
	}
}
