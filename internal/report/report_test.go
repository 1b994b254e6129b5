package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/examples"
	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/golden"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// synthetic stores a run of the demo scenario with made-up figures and
// samples: 8 steps, links and CPUs sampled at 10 Hz.
func synthetic(t testing.TB, samples int) (*archive.Archive, int64) {
	a, err := archive.Open(filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	demo, _ := examples.Lookup("objectivity-demo")
	run, err := a.StartRun(archive.NewRun{Kind: "run", Name: "objectivity-demo", Testbed: "objectivity-demo", Params: map[string]any{"source": "objectivity-demo", "quick": false}, Scenario: string(demo.Text)})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	subjects := []string{"link server->lanclient", "link lanclient->server", "link server->wanclient", "link wanclient->server", "host server", "host lanclient", "host wanclient", "engine", "machine"}
	perStep := samples / 8
	idx := 0
	for w, name := range []string{"lan-100mbit", "wan-10mbit"} {
		for i, jobs := range []int{1, 5, 10, 20} {
			step, err := a.StartStep(run, idx, name, fmt.Sprintf("jobs=%d", jobs), map[string]string{"jobs": fmt.Sprint(jobs)})
			if err != nil {
				t.Fatal(err)
			}
			rate := []float64{35, 68, 76, 75}[i] / float64(1+9*w)
			m := map[string]float64{"jobs": float64(jobs), "jobs_ok": float64(jobs), "throughput_mbps": rate, "mean_wallclock_s": float64(2 + 1*jobs),
				"cpu_pct.server": 50 * float64(1-w) * rate / 76, "cpu_pct.lanclient": 30, "cpu_pct.wanclient": 10,
				"server_cpu_quota_pct": 100 * float64(1-w) * rate / 76, "client_cpu_pct": 30,
				"link_utilization_pct.server->lanclient": rate * float64(1-w), "link_utilization_pct.server->wanclient": 10 * rate * float64(w)}
			var ss []archive.Sample
			for k := range perStep {
				ts := t0.Add(time.Duration(idx*perStep/len(subjects)+k/len(subjects)) * 100 * time.Millisecond)
				sub := subjects[k%len(subjects)]
				metric := "bandwidth.utilized"
				if !strings.HasPrefix(sub, "link") {
					metric = "cpu.utilization"
				}
				ss = append(ss, archive.Sample{T: ts, Metric: metric, Subject: sub, Value: rate * 1e6 * (1 + 0.1*float64(k%7)), Unit: "bit/s"})
			}
			if err := a.AddSamples(run, step, ss); err != nil {
				t.Fatal(err)
			}
			var recs []job.Record
			for j := range jobs {
				recs = append(recs, job.Record{ID: j, Host: "lanclient", Start: t0, End: t0.Add(time.Duration(2+jobs+j%3) * time.Second), Status: job.OK})
			}
			a.AddJobs(run, step, recs)
			a.EndStep(step, archive.StatusDone, "", map[string]any{"metrics": m, "kind": "eventdb"})
			idx++
		}
	}
	a.EndRun(run, archive.StatusDone, "", nil)
	return a, run
}

func TestWriteReport(t *testing.T) {
	a, run := synthetic(t, 20000)
	var b bytes.Buffer
	if err := Write(context.Background(), a, run, "test", &b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"Bottleneck of the run: <span class=\"bottleneck\">server_cpu</span>", "lan-100mbit: throughput", "wan-10mbit: mean job wall-clock",
		"link server-&gt;lanclient", "<pre>", "TCP ceiling of the link"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Findings come before the plots.
	if strings.Index(html, "id=\"findings\"") > strings.Index(html, "<svg") {
		t.Error("findings are not first")
	}
	if n := strings.Count(html, "<svg"); n < 12 {
		t.Errorf("%d plots", n)
	}
}

// BenchmarkAnalyzeAndReport100k measures the analysis (target < 1 s) and the
// report (target < 5 s, < 5 MB) of a run with 100,000 samples.
func BenchmarkAnalyzeAndReport100k(b *testing.B) {
	a, run := synthetic(b, 100000)
	var size int
	for b.Loop() {
		start := time.Now()
		if _, err := analysis.Analyze(context.Background(), a, run, analysis.DefaultOptions); err != nil {
			b.Fatal(err)
		}
		analyzed := time.Since(start)
		var out bytes.Buffer
		start = time.Now()
		if err := Write(context.Background(), a, run, "bench", &out); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(analyzed.Seconds(), "analyze-s")
		b.ReportMetric(time.Since(start).Seconds(), "report-s")
		size = out.Len()
	}
	b.ReportMetric(float64(size)/1e6, "report-MB")
}

// TestArchiveOfAnEarlierRelease: an archive that wanlab a223ce5 wrote
// (every workload kind, testdata/every-kind.yaml) opens, analyses to the
// same findings and reports the same tables and text (the plots may be
// drawn differently) as that release did; its steps of under a second no
// longer show a share of host a's CPU quota as evidence (results.QuotaShare),
// and their verdicts say that CPU is not known.
func TestArchiveOfAnEarlierRelease(t *testing.T) {
	a := openFixture(t)
	rep, err := analysis.Analyze(context.Background(), a, 1, analysis.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	enc := json.NewEncoder(&got)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // as wanlab analyze --json writes it
	enc.Encode(rep)
	golden.Check(t, fixture+".analysis.json", got.String())
	var b bytes.Buffer
	if err := Write(context.Background(), a, 1, "test", &b); err != nil {
		t.Fatal(err)
	}
	// The report's text as a223ce5 wrote it (reportText of its HTML), with
	// the intended changes since: a single-step transfer workload's finding
	// names its step ("step 7"), where it had a gap; a throughput
	// workload's steps say what limited each.
	want, _ := os.ReadFile(fixture + ".report.txt")
	fixed := strings.Replace(string(want), "1 transfer:  (the path", "1 transfer: step 7 (the path", 1)
	fixed = strings.Replace(fixed, "predicted Mbit/s).\ncopy\n", "predicted Mbit/s).\nbulk\n"+
		": What limited a-&gt;b: streams=1: 19.31 Mbit/s, 100% of the 19.31 Mbit/s the path allows (the link, 20 Mbit/s): the path held it; "+
		"streams=4: 18.81 Mbit/s, 97% of the 19.31 Mbit/s the path allows (the link, 20 Mbit/s): the path held it.\ncopy\n", 1)
	// Host a's share of its CPU quota cannot be told over its steps under
	// a second: the verdicts say so, one confidence lower.
	short := func(s string) string {
		return "the CPU of the server (host a) is not known (a step of " + s + " s is too short to tell a share of a CPU quota, which takes 1s)"
	}
	fixed = strings.NewReplacer(
		"link a-&gt;b was 98% busy (confidence high).", "link a-&gt;b was 98% busy; but "+short("0.82")+" (confidence medium).",
		"(link a-&gt;b was 98% busy)", "(link a-&gt;b was 98% busy; but "+short("0.82")+")",
		"(no resource was full (busiest: link a-&gt;b at 44%): the step waited on round trips)",
		"(no resource known was full (busiest: link a-&gt;b at 44%), but "+short("0.62")+": the step waited on round trips, or on that CPU)",
		"(no resource was full (busiest: link b-&gt;a at 3%): the step waited on round trips)",
		"(no resource known was full (busiest: link b-&gt;a at 3%), but "+short("0.6")+": the step waited on round trips, or on that CPU)",
	).Replace(fixed)
	if g := reportText(b.String()); g != fixed {
		t.Errorf("the report's text differs from what a223ce5 wrote:\n%s", firstDifference(g, fixed))
	}
}

// TestFigureNamesOfAnEarlierRelease: every figure name the archive of
// a223ce5 holds is one results.ParseFigure knows, and encodes back to
// itself.
func TestFigureNamesOfAnEarlierRelease(t *testing.T) {
	a := openFixture(t)
	steps, err := a.Steps(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, st := range steps {
		res, err := results.DecodeStep(st.Result)
		if err != nil {
			t.Fatal(err)
		}
		for name := range res.Metrics {
			seen[name] = true
		}
	}
	if len(seen) < 70 {
		t.Fatalf("%d figure names in the archive, want every kind's (80 or so)", len(seen))
	}
	for name := range seen {
		f, ok := results.ParseFigure(name)
		if !ok || f.String() != name {
			t.Errorf("%q reads as %+v (known: %v), which encodes as %q", name, f, ok, f)
		}
	}
}

// fixture is the archive that wanlab a223ce5 wrote, of every workload kind.
const fixture = "testdata/every-kind-a223ce5"

// openFixture opens a copy of the fixture archive.
func openFixture(t *testing.T) *archive.Archive {
	t.Helper()
	db, err := os.ReadFile(fixture + ".db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(path, db, 0o600); err != nil { // opening may bring its schema up to date
		t.Fatal(err)
	}
	a, err := archive.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

var (
	svgRE  = regexp.MustCompile(`(?s)<svg.*?</svg>`)
	tagRE  = regexp.MustCompile(`<[^>]*>`)
	byLine = regexp.MustCompile(`Report by wanlab .*`)
)

// reportText is a report's text without plots, tags and the line that
// says who made it when.
func reportText(html string) string {
	s := byLine.ReplaceAllString(tagRE.ReplaceAllString(svgRE.ReplaceAllString(html, ""), "\n"), "")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got  %q\n want %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}
