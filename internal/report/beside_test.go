package report

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/golden"
)

// TestPredictedBeside: a prediction given beside the run is its own
// section after the findings, every row with its error, a step the
// test-bed limited marked and its error in brackets, the median and worst
// error, the findings' agreement and what differs, the calibration and
// the assumptions, all escaped as the rest of the report; findings given
// join the run's. Without them the report is as it was.
func TestPredictedBeside(t *testing.T) {
	a, run := synthetic(t, 2000)
	e1, e2, med, worst := 0.1, 0.25, 0.1, 0.1
	b := &Beside{
		Run: 9,
		Steps: []BesideRow{
			{Workload: "lan-100mbit", Step: "jobs=1", Figure: "throughput_mbps", Predicted: 31.5, Measured: 35, Error: &e1},
			{Workload: "lan-100mbit", Step: "jobs=20", Figure: "throughput_mbps", Predicted: 56.25, Measured: 75, Error: &e2, LimitedByTestbed: true},
			{Workload: "lan-100mbit", Step: "jobs=20", Figure: "server_cpu_pct", Predicted: 3, Measured: 0},
		},
		MedianError: &med, WorstError: &worst,
		Agreeing: 1, Sweeps: 2,
		Differences: []string{"wan-10mbit: step jobs=5: bottleneck latency predicted, network measured"},
		Calibration: "calibrated from run 1: cpu_s_per_page=0.0004",
		Assumptions: []string{"assumption: queues add no delay & <drop> nothing", "left out: a->b's jitter"},
	}
	found := []analysis.Finding{{Kind: analysis.PredictionFinding, Workload: "lan-100mbit", Text: "Without this machine's limit, prediction run 9 <b>shows</b> jobs=20: 56.2 Mbit/s."}}
	var out bytes.Buffer
	if err := WriteWith(context.Background(), a, run, "test", &out, Options{Beside: b, Findings: found}); err != nil {
		t.Fatal(err)
	}
	html := out.String()
	start, end := strings.Index(html, `<h2 id="predicted">`), strings.Index(html, `<h2 id="workload-`)
	if start < 0 || end < start || strings.Index(html, `id="findings"`) > start {
		t.Fatalf("no section Predicted beside measured after the findings, before the workloads:\n%s", html)
	}
	golden.Check(t, "testdata/beside.html", html[start:end])
	if !strings.Contains(html, "<b>lan-100mbit</b>: Without this machine&#39;s limit, prediction run 9 &lt;b&gt;shows&lt;/b&gt; jobs=20") {
		t.Error("the finding given is not among the findings, escaped")
	}

	out.Reset()
	if err := Write(context.Background(), a, run, "test", &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), `id="predicted"`) || strings.Contains(out.String(), "prediction run 9") {
		t.Error("a report with no prediction given shows one")
	}
}
