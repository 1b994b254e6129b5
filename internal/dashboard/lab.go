package dashboard

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/monitor/web"
	"github.com/wanlab/wanlab/internal/report"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// maxCompared bounds a comparison: each run is analysed for the page.
const maxCompared = 20

// Lab serves an archive of lab runs (wanlab ui): the list of runs, each
// run's report, runs compared side by side, and the runs as JSON. A request
// must name the listener in its Host header (its address, or one of hosts:
// web.ListenerNames), as wanlab serve's must: logf is told of refusals.
func Lab(ar *archive.Archive, version string, hosts []string, logf func(format string, args ...any)) http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "web")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(filesOnly{static})))
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "favicon.svg")
	})
	l := &lab{ar: ar, version: version}
	mux.HandleFunc("GET /{$}", l.runs)
	mux.HandleFunc("GET /runs/{id}", l.run)
	mux.HandleFunc("GET /compare", l.compare)
	mux.HandleFunc("GET /api/v1/runs", func(w http.ResponseWriter, r *http.Request) {
		runs, err := ar.Runs(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if runs == nil {
			runs = []archive.Run{}
		}
		w.Header().Set("Content-Type", "application/json")
		writeJSONTo(w, map[string]any{"runs": runs})
	})
	return secure(web.HostGuard(hosts, "reach wanlab ui by the name in --http, or by its address", logf, mux))
}

type lab struct {
	ar      *archive.Archive
	version string
}

func (l *lab) runs(w http.ResponseWriter, r *http.Request) {
	runs, err := l.ar.Runs(r.Context())
	if err != nil {
		http.Error(w, "reading the runs: "+err.Error(), http.StatusInternalServerError)
		return
	}
	slices.Reverse(runs) // newest first
	render(w, "runs.html", map[string]any{"Runs": runs, "Archive": l.ar.Location()})
}

func (l *lab) run(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		http.Error(w, "a run is a number, as the list shows", http.StatusBadRequest)
		return
	}
	var b bytes.Buffer
	if err := report.Write(r.Context(), l.ar, id, l.version, &b); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, archive.ErrNoRun) {
			code = http.StatusNotFound
		}
		http.Error(w, fmt.Sprintf("run %d: %v", id, err), code)
		return
	}
	// The report is a document of its own, with its style inline and no
	// script at all.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// Compared is one run of a comparison.
type Compared struct {
	Run       archive.Run
	Report    *analysis.Report
	Err       string
	Efficient []Efficiency
}

// Efficiency is one workload's efficient running against its slowest path.
type Efficiency struct {
	Run      int64
	Workload string
	// Slowest is the test-bed's lowest path bottleneck, bit/s (0 unknown).
	Slowest    float64
	SingleS    float64
	Boundary   float64 // concurrency where efficient running ends
	Throughput float64 // Mbit/s at the boundary
	Bottleneck string
	Largest    float64 // the largest concurrency tried
}

// SlowestText shows a link speed.
func (e Efficiency) SlowestText() string {
	if e.Slowest <= 0 {
		return "unlimited"
	}
	return units.Rate(e.Slowest).String() + "/s"
}

func (l *lab) compare(w http.ResponseWriter, r *http.Request) {
	var ids []int64
	for _, v := range r.URL.Query()["runs"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			http.Error(w, fmt.Sprintf("runs: %q is not a run number", v), http.StatusBadRequest)
			return
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) < 1 || len(ids) > maxCompared {
		http.Error(w, fmt.Sprintf("runs: choose 1 to %d runs to compare", maxCompared), http.StatusBadRequest)
		return
	}
	var all []Compared
	var eff []Efficiency
	for _, id := range ids {
		c := Compared{}
		run, workloads, err := analysis.Load(r.Context(), l.ar, id)
		c.Run = run
		if err != nil {
			c.Err = err.Error()
			c.Run.ID = id
			all = append(all, c)
			continue
		}
		c.Report = analysis.Of(workloads, analysis.DefaultOptions)
		for i, wl := range workloads {
			e := Efficiency{Run: id, Workload: wl.Name, Slowest: slowest(wl)}
			for _, s := range wl.Steps {
				e.Largest = math.Max(e.Largest, analysis.Concurrency(s))
			}
			for _, f := range c.Report.Findings {
				if f.Workload == wl.Name && f.Kind == "efficient_running" {
					e.SingleS, e.Boundary, e.Throughput = f.Values["single_wallclock_s"], f.Values["boundary_concurrency"], f.Values["throughput_mbps"]
				}
			}
			// What limited the step where efficient running ends.
			for _, s := range wl.Steps {
				if e.Boundary == 0 || analysis.Concurrency(s) != e.Boundary || i >= len(c.Report.Workloads) {
					continue
				}
				for _, v := range c.Report.Workloads[i].Steps {
					if v.Index == s.Index {
						e.Bottleneck = v.Bottleneck
					}
				}
			}
			if wl.Traits().Has(kind.EfficientRunning) {
				eff = append(eff, e)
			}
		}
		all = append(all, c)
	}
	slices.SortStableFunc(eff, func(a, b Efficiency) int { return cmp.Compare(b.Slowest, a.Slowest) })
	render(w, "compare.html", map[string]any{"Runs": all, "Efficient": eff, "Conclusion": conclude(eff)})
}

// conclude names the lowest link speed at which the workload still runs
// efficiently with as many jobs as the fastest link allows (the seed's
// 8 Mbit/s), or "" if the runs cannot tell.
func conclude(eff []Efficiency) string {
	var best float64
	for _, e := range eff {
		best = math.Max(best, e.Boundary)
	}
	if best == 0 || len(eff) < 2 {
		return ""
	}
	var lowest *Efficiency
	for i, e := range eff {
		if e.Boundary >= best && e.Slowest > 0 && (lowest == nil || e.Slowest < lowest.Slowest) {
			lowest = &eff[i]
		}
	}
	if lowest == nil {
		return ""
	}
	text := fmt.Sprintf("Efficient running up to %g concurrent jobs holds down to %s (run %d, %s).", best, lowest.SlowestText(), lowest.Run, lowest.Workload)
	var below []string
	for _, e := range eff {
		if e.Slowest > 0 && e.Slowest < lowest.Slowest {
			below = append(below, fmt.Sprintf("%s: %g jobs", e.SlowestText(), e.Boundary))
		}
	}
	if len(below) > 0 {
		text += fmt.Sprintf(" Slower links hold fewer: %v.", below)
	}
	return text
}

// slowest is the lowest bottleneck of a workload's test-bed paths, bit/s.
func slowest(wl analysis.Workload) float64 {
	if wl.Testbed == nil {
		return 0
	}
	t, err := topology.New(wl.Testbed)
	if err != nil {
		return 0
	}
	low := 0.0
	for _, p := range t.Paths {
		if p.Bottleneck > 0 && (low == 0 || p.Bottleneck < low) {
			low = p.Bottleneck
		}
	}
	return low
}
