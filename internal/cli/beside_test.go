package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// TestPredictionBeside: analyze and report of a measured run with a step
// the test-bed limited say, with no prediction at hand, the command that
// makes one; a prediction made with --check records the run and is then
// shown beside it (the newest, or the one --prediction names; none with
// --prediction none), in text, JSON and HTML, and the finding on the
// limited step says what the prediction shows. A prediction has none
// beside it, and --prediction must name a prediction of the same
// scenario.
func TestPredictionBeside(t *testing.T) {
	defer kinds.Register(kindtest.SimToy)()
	file, db := fakePrediction(t)
	measured := storeMeasured(t, db)
	hint := "wanlab predict flows.yaml --check " + measured + " --db " + db
	if out, code := cli(t, "analyze", measured, "--db", db); code != exitOK || !strings.Contains(out, "bytes=2MB without this machine's limit can be predicted on SimGrid") || !strings.Contains(out, hint) {
		t.Errorf("analyze with no prediction: exit %d, want %q:\n%s", code, hint, out)
	}
	dir := t.TempDir()
	if html := writtenReport(t, dir, measured, "--db", db); !strings.Contains(html, hint) || strings.Contains(html, `id="predicted"`) {
		t.Errorf("report with no prediction lacks %q, or shows one", hint)
	}

	if _, code := cli(t, "predict", "--check", measured, "--db", db); code != exitOK {
		t.Fatalf("predict --check: exit %d", code)
	}
	ar, err := archive.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ar.GetRun(context.Background(), 2)
	ar.Close()
	var params map[string]any
	if err != nil || json.Unmarshal(r.Params, &params) != nil || params[checkedAgainst] != 1.0 {
		t.Fatalf("the prediction's params %s (%v): want %s 1", r.Params, err, checkedAgainst)
	}
	out, code := cli(t, "analyze", measured, "--db", db)
	for _, want := range []string{
		"Without this machine's limit, prediction run 2 (simulated on SimGrid; a larger machine can confirm it) shows bytes=2MB: 2.0 Mbit/s",
		"Predicted beside measured: run 2, predicted (simulated on SimGrid); uncalibrated",
		"bytes=2MB !  throughput_mbps", "error: median 20.0%, worst 20.0%", "findings agree in ",
		"The prediction assumes:\n  - assumption: uncalibrated",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("analyze: exit %d, no %q:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, hint) {
		t.Error("analyze with a prediction still says how to make one")
	}
	out, code = cli(t, "analyze", measured, "--db", db, "--json")
	type finding struct {
		Kind   string
		Values map[string]float64
	}
	var doc struct {
		Findings   []finding
		Prediction struct {
			Run         int64
			Steps       []map[string]any
			MedianError float64 `json:"median_error"`
			Calibration string
			Assumptions []string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil || doc.Prediction.Run != 2 || len(doc.Prediction.Steps) != 6 ||
		doc.Prediction.MedianError != 0.2 || !strings.HasPrefix(doc.Prediction.Calibration, "uncalibrated") || len(doc.Prediction.Assumptions) == 0 {
		t.Fatalf("analyze --json: exit %d, %v:\n%s", code, err, out)
	}
	if !slices.ContainsFunc(doc.Findings, func(f finding) bool { return f.Kind == "prediction" && f.Values["prediction_run"] == 2 }) {
		t.Errorf("analyze --json: no finding of prediction run 2 in %+v", doc.Findings)
	}
	html := writtenReport(t, dir, measured, "--db", db)
	for _, want := range []string{`<h2 id="predicted">Predicted beside measured</h2>`, "<p>Run 2 is this run's scenario predicted",
		`<td class="l">bytes=2MB (test-bed limited)</td><td class="l">throughput_mbps</td><td>2</td><td>2.50</td><td>(20.0%)</td>`, "prediction run 2 (simulated on SimGrid"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}

	// The newest prediction checked against the run, or the one named;
	// one not checked against it is shown only when named.
	cli(t, "predict", "--check", measured, "--db", db)
	cli(t, "predict", file, "--db", db)
	for _, c := range []struct {
		flag []string
		want string
	}{
		{nil, "Predicted beside measured: run 3,"},
		{[]string{"--prediction", "2"}, "Predicted beside measured: run 2,"},
		{[]string{"--prediction", "4"}, "Predicted beside measured: run 4,"},
	} {
		if out, code := cli(t, append([]string{"analyze", measured, "--db", db}, c.flag...)...); code != exitOK || !strings.Contains(out, c.want) {
			t.Errorf("analyze %v: exit %d, want %q:\n%s", c.flag, code, c.want, out)
		}
	}
	if out, code := cli(t, "analyze", measured, "--db", db, "--prediction", "none"); code != exitOK || strings.Contains(out, "Predicted beside") || strings.Contains(out, "prediction run") {
		t.Errorf("--prediction none: exit %d:\n%s", code, out)
	}
	if out, code := cli(t, "analyze", "2", "--db", db); code != exitOK || strings.Contains(out, "Predicted beside") {
		t.Errorf("analyze of a prediction: exit %d:\n%s", code, out)
	}
	other := storeRun(t, db, strings.Replace(flowScenario, "rate: 10Mbit", "rate: 20Mbit", 1), false)
	for _, c := range []struct{ run, flag string }{{measured, "1"}, {measured, "99"}, {measured, "x"}, {"2", "3"}, {other, "2"}} {
		if _, code := cli(t, "analyze", c.run, "--db", db, "--prediction", c.flag); code != exitUsage {
			t.Errorf("analyze %s --prediction %s: exit %d, want %d", c.run, c.flag, code, exitUsage)
		}
		if _, code := cli(t, "report", c.run, "--db", db, "--out", dir, "--prediction", c.flag); code != exitUsage {
			t.Errorf("report %s --prediction %s: exit %d, want %d", c.run, c.flag, code, exitUsage)
		}
	}
}

// writtenReport writes run's report into dir with wanlab report and returns it.
func writtenReport(t *testing.T, dir, run string, args ...string) string {
	t.Helper()
	out, code := cli(t, append([]string{"report", run, "--out", dir}, args...)...)
	if code != exitOK {
		t.Fatalf("report %s: exit %d:\n%s", run, code, out)
	}
	html, err := os.ReadFile(filepath.Join(dir, "wanlab-run-"+run+".html"))
	if err != nil {
		t.Fatal(err)
	}
	return string(html)
}
