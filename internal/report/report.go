// Package report renders a stored run as one self-contained HTML file: the
// findings first, in sentences; then per workload the seeds' plots
// (throughput, CPU and mean job wall-clock against concurrency), histograms
// and heat maps; MRTG-style link graphs with max, average and current; the
// summary tables; and the scenario as configured. Plots are inline SVG and
// the page loads nothing, so it opens anywhere, offline.
package report

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/analysis"
	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

//go:embed report.html.tmpl
var pageText string

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"num": func(v float64) string {
		switch {
		case math.IsNaN(v):
			return "-"
		case math.Abs(v) >= 100 || v == math.Trunc(v):
			return strconv.FormatFloat(v, 'f', 0, 64)
		case math.Abs(v) >= 10:
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	},
	"mbit": func(v float64) float64 { return v / 1e6 },
	"pct":  func(v float64) float64 { return 100 * v },
}).Parse(pageText))

// view is what the template shows.
type view struct {
	Run      archive.Run
	Started  string
	Version  string
	Analysis *analysis.Report
	// Timeline are the changes made to the links during the run; Changes
	// the same, numbered as the time plots mark them.
	Timeline []analysis.LinkEvent
	Changes  []changeView
	// RTTPlot is the paths' probe round trips over time, for a run whose
	// links changed.
	RTTPlot   template.HTML
	Workloads []workloadView
	Links     []linkView
	LinkPlots []template.HTML
	// DiskPlots are the hosts' disk reads and writes over time, with their caps.
	DiskPlots []template.HTML
	// Achieved plots what throughput tests achieved, per path, over time.
	Achieved template.HTML
	// Watched are the connections workloads' watches saw, per step, and
	// WatchPlots their throughput and application-limited time.
	Watched    []*analysis.WatchedConn
	WatchPlots []template.HTML
	Hosts      []topology.Host
	Dirs       []topology.Direction
	// Topology draws the test-bed, the busiest direction of each step
	// coloured by its utilisation.
	Topology  template.HTML
	Scenario  string
	Generated string
	// Predicted says the run is a prediction (backend simulated, wanlab
	// predict), and Assumptions are what it assumes and leaves out.
	Predicted   bool
	Assumptions []string
	// Beside is a prediction of the run set beside it, if any.
	Beside *Beside
}

type workloadView struct {
	Name     string
	Kind     results.Kind
	Columns  []string
	Rows     []rowView
	Plots    []template.HTML
	Heat     *heatView
	Verdicts []analysis.StepVerdict
}

type rowView struct {
	Label, Status, Reason string
	Limited               bool
	Cells                 []float64
}

type heatView struct {
	Title      string
	Cols, Rows []string
	Cells      [][]heatCell
}

type heatCell struct {
	Value float64
	Style template.CSS
}

// linkView is one link direction, MRTG style.
type linkView struct {
	Name                   string
	Capacity               float64 // Mbit/s, 0 unlimited
	Max, Avg, Current      float64 // Mbit/s
	MaxPct, AvgPct, CurPct float64
}

// Write renders run id of the archive as HTML to w.
func Write(ctx context.Context, a *archive.Archive, id int64, version string, w io.Writer) error {
	return WriteWith(ctx, a, id, version, w, Options{})
}

// WriteWith renders run id of the archive as HTML to w, as Write, with
// what o adds: a prediction beside the run, findings on its steps.
func WriteWith(ctx context.Context, a *archive.Archive, id int64, version string, w io.Writer, o Options) error {
	run, workloads, err := analysis.Load(ctx, a, id)
	if err != nil {
		return err
	}
	rep, tl, err := analysis.OfRun(ctx, a, run, workloads, analysis.DefaultOptions)
	if err != nil {
		return err
	}
	rep.AddUnlimited(o.Findings)
	v := view{Run: run, Timeline: tl.Events, Analysis: rep, Beside: o.Beside, Scenario: run.Scenario, Version: version, Generated: time.Now().UTC().Format(time.RFC3339)}
	v.Started = run.StartedAt
	if v.Predicted, v.Assumptions, err = prediction(ctx, a, run); err != nil {
		return err
	}
	if len(workloads) > 0 && workloads[0].Testbed != nil {
		if t, err := topology.New(workloads[0].Testbed); err == nil {
			v.Hosts, v.Dirs = t.Hosts, t.Dirs
			if v.Topology, err = topologySVG(t, busiestDirs(workloads)); err != nil {
				return err
			}
		}
	}
	for i, wl := range workloads {
		wv, err := workloadPlots(wl, rep.Workloads[i])
		if err != nil {
			return err
		}
		v.Workloads = append(v.Workloads, wv)
	}
	if err := timeGraphs(ctx, a, id, &v); err != nil {
		return err
	}
	if err := watchGraphs(ctx, a, id, &v); err != nil {
		return err
	}
	return page.Execute(w, v)
}

// prediction says whether a run is a prediction (its params' backend is
// "simulated": controller.BackendSimulated), and what it assumes and
// leaves out: the run's events that start so (predict.AssumptionPrefix,
// predict.LeftOutPrefix).
func prediction(ctx context.Context, a *archive.Archive, run archive.Run) (bool, []string, error) {
	var params struct {
		Backend string `json:"backend"`
	}
	if json.Unmarshal(run.Params, &params) != nil || params.Backend != "simulated" {
		return false, nil, nil
	}
	events, err := a.Events(ctx, run.ID)
	if err != nil {
		return true, nil, err
	}
	var said []string
	for _, e := range events {
		if e.Step == 0 && (strings.HasPrefix(e.Message, "assumption: ") || strings.HasPrefix(e.Message, "left out: ")) {
			said = append(said, e.Message)
		}
	}
	return true, said, nil
}

// maxWatchedLines bounds the connections one plot shows.
const maxWatchedLines = 8

// watchGraphs plots, per step, each watched connection's throughput at the
// watch's interval and its sender's application-limited share: a GridFTP
// that alternates between full rate and nothing beside a server that keeps
// its socket fed.
func watchGraphs(ctx context.Context, a *archive.Archive, id int64, v *view) error {
	conns, err := analysis.LoadWatched(ctx, a, id)
	if err != nil {
		return err
	}
	v.Watched = conns
	byStep := map[int][]*analysis.WatchedConn{}
	for _, c := range conns {
		byStep[c.Step] = append(byStep[c.Step], c)
	}
	for _, step := range slices.Sorted(maps.Keys(byStep)) {
		cs := byStep[step]
		slices.SortFunc(cs, func(a, b *analysis.WatchedConn) int { return cmp.Compare(b.MeanBPS, a.MeanBPS) })
		var rate, idle []series
		for _, c := range cs[:min(len(cs), maxWatchedLines)] {
			xs, ys := downsample(c.T, mega(c.BPS), 1500)
			rate = append(rate, series{name: c.Conn, xs: xs, ys: ys})
			if c.Sender && len(c.App1) == len(c.T) {
				pct := make([]float64, len(c.App1))
				for i, x := range c.App1 {
					pct[i] = 100 * x
				}
				xs, ys := downsample(c.T, pct, 1500)
				idle = append(idle, series{name: c.Conn, xs: xs, ys: ys})
			}
		}
		title := fmt.Sprintf("step %d, %s: throughput", step, strings.TrimSpace(cs[0].Workload+" "+cs[0].Label))
		p, err := linePlot(title, "seconds into the step", "Mbit/s", rate, nil, false)
		if err != nil {
			return err
		}
		v.WatchPlots = append(v.WatchPlots, p)
		if len(idle) > 0 {
			p, err := linePlot(fmt.Sprintf("step %d: sender with nothing to send", step), "seconds into the step", "% of each interval", idle, nil, false)
			if err != nil {
				return err
			}
			v.WatchPlots = append(v.WatchPlots, p)
		}
	}
	return nil
}

func mega(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x / 1e6
	}
	return out
}

// changeView is one change to the links, as the report lists it.
type changeView struct {
	N    int
	At   float64 // seconds into the run
	What string
	Dirs string
}

// workloadPlots builds a workload's table and plots.
func workloadPlots(wl analysis.Workload, ws analysis.WorkloadSteps) (workloadView, error) {
	wv := workloadView{Name: wl.Name, Kind: wl.Kind, Verdicts: ws.Steps}
	cols := wl.Traits().Columns
	for _, c := range cols {
		wv.Columns = append(wv.Columns, c.Head)
	}
	for _, s := range wl.Steps {
		r := rowView{Label: s.Label, Status: s.Status, Reason: s.Reason, Limited: s.TestbedLimited}
		for _, c := range cols {
			v, ok := c.Value(s.Metrics)
			if !ok {
				v = math.NaN()
			}
			r.Cells = append(r.Cells, v)
		}
		wv.Rows = append(wv.Rows, r)
	}
	plots, err := sweepPlots(wl)
	if err != nil {
		return wv, err
	}
	wv.Plots = plots
	if h, err := durations(wl); err != nil {
		return wv, err
	} else if h != "" {
		wv.Plots = append(wv.Plots, h)
	}
	wv.Heat = heat(wl)
	return wv, nil
}

// sweepPlots draws a sweep's figures against its swept value, as its
// kind's traits say: its figure (throughput, task rate) with the link's
// TCP ceiling or the farm's ideal rate, and the CPUs and the mean job
// wall-clock. A single step has no curve to draw.
func sweepPlots(wl analysis.Workload) ([]template.HTML, error) {
	if len(wl.Steps) < 2 {
		return nil, nil
	}
	x, xLabel := sweepAxis(wl)
	var plots []template.HTML
	add := func(h template.HTML, err error) error {
		if err == nil && h != "" {
			plots = append(plots, h)
		}
		return err
	}
	var err error
	traits := wl.Traits()
	if p := traits.Plot; p.Figure != "" {
		lines := []series{collect(wl, x, "measured", results.Named(p.Figure))}
		if p.Ideal {
			lines = append(lines, idealRate(wl, x))
		}
		var levels []level
		if p.Ceiling {
			if c := capacity(wl); c > 0 {
				levels = append(levels, level{"TCP ceiling of the link", c})
			}
		}
		err = add(linePlot(wl.Name+": "+p.Title, xLabel, p.Unit, lines, levels, true))
	}
	if err != nil || !traits.JobPlots {
		return plots, err
	}
	cpu := []series{collect(wl, x, "server", results.RoleCPUFigures("server")...), collect(wl, x, "client", results.RoleCPUFigures("client")...)}
	if err := add(linePlot(wl.Name+": CPU (% of quota)", xLabel, "%", cpu, []level{{"full", 100}}, true)); err != nil {
		return plots, err
	}
	return plots, add(linePlot(wl.Name+": mean job wall-clock", xLabel, "s", []series{collect(wl, x, "mean WCT", results.Named(results.MeanWallclockS))}, nil, true))
}

// durations is the histogram of the workload's job times, as its kind's
// traits name them (a job's wall-clock, a task's round trip, ...).
func durations(wl analysis.Workload) (template.HTML, error) {
	what := wl.Traits().JobTimes
	if what == "" {
		return "", nil
	}
	var ms []float64
	for _, s := range wl.Steps {
		for _, j := range s.Jobs {
			if j.Status == job.OK {
				ms = append(ms, j.Wallclock().Seconds()*1000)
			}
		}
	}
	return histogram(wl.Name+": "+what, "ms", ms)
}

// sweepAxis is the x of a workload's plots: its first swept numeric
// setting, or the step number.
func sweepAxis(wl analysis.Workload) (func(analysis.Step) float64, string) {
	if len(wl.Steps) > 0 {
		for _, p := range []string{"jobs", "count", "streams", "prefetch", "duration", "window", "result_size"} {
			if _, ok := wl.Steps[0].Params[p]; ok {
				name := p
				return func(s analysis.Step) float64 { return paramValue(s.Params[name]) }, paramLabel(p)
			}
		}
		if noun := wl.Traits().Concurrency; noun != "" {
			if _, ok := wl.Steps[0].Config.Spec.(kind.Concurrent); ok {
				return func(s analysis.Step) float64 { return s.Config.Spec.(kind.Concurrent).Concurrency() }, "concurrent " + noun + "s"
			}
		}
	}
	return func(s analysis.Step) float64 { return float64(s.Index + 1) }, "step"
}

func paramLabel(p string) string {
	switch p {
	case "jobs":
		return "jobs per client"
	case "duration":
		return "task duration (s)"
	case "window", "result_size":
		return p + " (bytes)"
	}
	return p
}

// paramValue reads a swept value as a number: plain, a size or a duration.
func paramValue(s string) float64 {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return v
	}
	if z, err := units.ParseSize(s); err == nil {
		return float64(z)
	}
	if d, err := units.ParseDuration(s); err == nil {
		return d.Seconds()
	}
	return math.NaN()
}

// collect is the series name of the workload's steps' figure (the first
// of figs each has) against x.
func collect(wl analysis.Workload, x func(analysis.Step) float64, name string, figs ...results.Figure) series {
	s := series{name: name}
	steps := slices.Clone(wl.Steps)
	sort.SliceStable(steps, func(i, j int) bool { return x(steps[i]) < x(steps[j]) })
	for _, st := range steps {
		v, ok := st.Metrics.First(figs...)
		xv := x(st)
		if ok && !math.IsNaN(xv) {
			s.xs, s.ys = append(s.xs, xv), append(s.ys, v)
		}
	}
	return s
}

func idealRate(wl analysis.Workload, x func(analysis.Step) float64) series {
	s := series{name: "ideal (workers / duration)"}
	for _, st := range wl.Steps {
		if f, ok := st.Config.Spec.(kind.Farmed); ok && f.Farm().Task > 0 {
			t := f.Farm()
			s.xs, s.ys = append(s.xs, x(st)), append(s.ys, float64(t.Workers)/t.Task.Seconds())
		}
	}
	return s
}

// capacity is the TCP ceiling (Mbit/s) of the busiest link direction of the
// workload's last step (the top of a ramp), drawn as a line on throughput
// plots.
func capacity(wl analysis.Workload) float64 {
	if len(wl.Steps) == 0 || wl.Testbed == nil {
		return 0
	}
	busiest, _ := results.BusiestLink(wl.Steps[len(wl.Steps)-1].Metrics)
	t, err := topology.New(wl.Testbed)
	if err != nil {
		return 0
	}
	if d, ok := t.Direction(busiest); ok && d.Config.Rate > 0 {
		return float64(d.Config.Rate) * float64(d.Config.MTU-topology.TCPIPHeader) / float64(d.Config.MTU) / 1e6
	}
	return 0
}

// heat builds a streams x window table for a throughput sweep of both.
func heat(wl analysis.Workload) *heatView {
	traits := wl.Traits()
	fig := traits.Plot
	if !traits.Heat || len(wl.Steps) == 0 {
		return nil
	}
	if _, ok := wl.Steps[0].Params["streams"]; !ok {
		return nil
	}
	if _, ok := wl.Steps[0].Params["window"]; !ok {
		return nil
	}
	var cols, rows []string
	for _, s := range wl.Steps {
		if !slices.Contains(cols, s.Params["streams"]) {
			cols = append(cols, s.Params["streams"])
		}
		if !slices.Contains(rows, s.Params["window"]) {
			rows = append(rows, s.Params["window"])
		}
	}
	top := 0.0
	for _, s := range wl.Steps {
		top = math.Max(top, s.Metrics.Value(results.Named(fig.Figure)))
	}
	h := &heatView{Title: wl.Name + ": " + fig.Unit + " by streams (across) and window (down)", Cols: cols, Rows: rows}
	for _, r := range rows {
		var line []heatCell
		for _, c := range cols {
			cell := heatCell{Value: math.NaN()}
			for _, s := range wl.Steps {
				if s.Params["streams"] == c && s.Params["window"] == r {
					cell.Value = s.Metrics.Value(results.Named(fig.Figure))
				}
			}
			if !math.IsNaN(cell.Value) && top > 0 {
				a := cell.Value / top
				cell.Style = template.CSS(fmt.Sprintf("background: rgba(31, 119, 180, %.2f); color: %s", a, map[bool]string{true: "#fff", false: "#000"}[a > 0.6]))
			}
			line = append(line, cell)
		}
		h.Cells = append(h.Cells, line)
	}
	return h
}

// timeGraphs reads the run's time series into plots: what throughput tests
// achieved per path, every link direction that carried traffic MRTG style,
// and each host's disk.
func timeGraphs(ctx context.Context, a *archive.Archive, id int64, v *view) error {
	ts, err := readSeries(ctx, a, id, len(v.Timeline) > 0)
	if err != nil {
		return err
	}
	var marks []mark
	for i, e := range v.Timeline {
		t := float64(e.T.UnixNano())/1e9 - ts.t0
		v.Changes = append(v.Changes, changeView{N: i + 1, At: t, What: e.What, Dirs: strings.Join(e.Dirs, ", ")})
		marks = append(marks, mark{x: t, label: strconv.Itoa(i + 1)})
	}
	if len(ts.byPath) > 0 {
		var lines []series
		for _, name := range slices.Sorted(maps.Keys(ts.byPath)) {
			xs, ys := downsample(ts.byPath[name].t, ts.byPath[name].mega, 600)
			lines = append(lines, series{name: name, xs: xs, ys: ys})
		}
		if v.Achieved, err = markedPlot("throughput achieved, per interval", "seconds into the run", "Mbit/s", lines, nil, len(lines[0].xs) < 30, marks); err != nil {
			return err
		}
	}
	if len(ts.rtt) > 0 {
		var lines []series
		for _, name := range slices.Sorted(maps.Keys(ts.rtt)) {
			xs, ys := downsample(ts.rtt[name].t, ts.rtt[name].mega, 1200)
			for i := range ys {
				ys[i] *= 1e9 // the samples are seconds, kept in millions: ms
			}
			lines = append(lines, series{name: name, xs: xs, ys: ys})
		}
		if v.RTTPlot, err = markedPlot("round trip per probe", "seconds into the run", "ms", lines, nil, false, marks); err != nil {
			return err
		}
	}
	if err := linkGraphs(ts.byLink, v, marks); err != nil {
		return err
	}
	return diskGraphs(ts.diskRead, ts.diskWrite, v)
}

// timeSeries are a run's samples that the report plots, by subject name:
// a path's achieved throughput, a link direction's traffic, a host's disk.
type timeSeries struct {
	byPath, byLink, diskRead, diskWrite map[string]*points
	// rtt are the paths' probe round trips, read for a run whose links changed.
	rtt map[string]*points
	t0  float64 // Unix seconds of the first sample
}

func readSeries(ctx context.Context, a *archive.Archive, id int64, withRTT bool) (*timeSeries, error) {
	ts := &timeSeries{byPath: map[string]*points{}, byLink: map[string]*points{}, diskRead: map[string]*points{}, diskWrite: map[string]*points{}, rtt: map[string]*points{}}
	var t0 float64
	defer func() { ts.t0 = t0 }()
	err := a.Samples(ctx, id, func(s archive.Sample) error {
		sub, ok := results.ParseSubject(s.Subject)
		var into map[string]*points
		switch {
		case !ok:
			return nil
		case s.Metric == results.BandwidthUtilized && sub.Kind == results.OfLink:
			into = ts.byLink
		case s.Metric == results.BandwidthAchievable && sub.Kind == results.OfPath && sub.Stream == 0:
			into = ts.byPath
		case s.Metric == results.DiskRead && sub.Kind == results.OfHost:
			into = ts.diskRead // MB/s below: the samples are B/s
		case s.Metric == results.DiskWrite && sub.Kind == results.OfHost:
			into = ts.diskWrite
		case withRTT && s.Metric == results.DelayRoundtrip && sub.Kind == results.OfPath && sub.Stream == 0:
			into = ts.rtt
		default:
			return nil
		}
		t := float64(s.T.UnixNano()) / 1e9
		if t0 == 0 {
			t0 = t
		}
		p := into[sub.Name]
		if p == nil {
			p = &points{}
			into[sub.Name] = p
		}
		p.t, p.mega = append(p.t, t-t0), append(p.mega, s.Value/1e6)
		return nil
	})
	return ts, err
}

// linkGraphs draws every link direction that carried traffic, with its
// capacity and its max, average and current, MRTG style.
func linkGraphs(byLink map[string]*points, v *view, marks []mark) error {
	names := make([]string, 0, len(byLink))
	for n, p := range byLink {
		if slices.Max(p.mega) > 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	caps := map[string]float64{}
	for _, d := range v.Dirs {
		caps[d.Name] = float64(d.Config.Rate) / 1e6
	}
	for _, n := range names {
		p := byLink[n]
		lv := linkView{Name: n, Capacity: caps[n], Max: slices.Max(p.mega), Current: p.mega[len(p.mega)-1]}
		for _, x := range p.mega {
			lv.Avg += x / float64(len(p.mega))
		}
		if lv.Capacity > 0 {
			lv.MaxPct, lv.AvgPct, lv.CurPct = 100*lv.Max/lv.Capacity, 100*lv.Avg/lv.Capacity, 100*lv.Current/lv.Capacity
		}
		v.Links = append(v.Links, lv)
		xs, ys := downsample(p.t, p.mega, 600)
		var levels []level
		if lv.Capacity > 0 {
			levels = append(levels, level{"capacity", lv.Capacity})
		}
		h, err := markedPlot(results.LinkSubject(lv.Name), "seconds into the run", "Mbit/s", []series{{name: "", xs: xs, ys: ys}}, levels, false, marks)
		if err != nil {
			return err
		}
		v.LinkPlots = append(v.LinkPlots, h)
	}
	return nil
}

// points is a time series: seconds into the run, and the values in millions
// of their unit (Mbit/s for links, MB/s for disks).
type points struct{ t, mega []float64 }

// diskGraphs plots each host's disk reads and writes that were not all
// zero, in MB/s, with its caps dashed.
func diskGraphs(read, write map[string]*points, v *view) error {
	for _, h := range v.Hosts {
		r, w := read[h.Name], write[h.Name]
		if r == nil || w == nil || slices.Max(r.mega) == 0 && slices.Max(w.mega) == 0 {
			continue
		}
		rx, ry := downsample(r.t, r.mega, 600)
		wx, wy := downsample(w.t, w.mega, 600)
		var levels []level
		if h.DiskReadBps > 0 {
			levels = append(levels, level{"read cap", float64(h.DiskReadBps) / 1e6})
		}
		if h.DiskWriteBps > 0 {
			levels = append(levels, level{"write cap", float64(h.DiskWriteBps) / 1e6})
		}
		plot, err := linePlot("disk of host "+h.Name, "seconds into the run", "MB/s", []series{{"read", rx, ry}, {"write", wx, wy}}, levels, false)
		if err != nil {
			return err
		}
		v.DiskPlots = append(v.DiskPlots, plot)
	}
	return nil
}
