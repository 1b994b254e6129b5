// Package analysis reaches the findings of a run from the archive, as the
// seed studies did by hand: where throughput saturates, what limits each
// step (a host's CPU, the network, latency, or the test-bed itself), the
// "efficient running" boundary, where jobs start failing, the best streams
// and window for a path, asymmetry between directions, what a load does to
// others, and how a task farm suffers from latency. Every finding carries
// the figures that decided it.
package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/archive"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/kind"
	"github.com/wanlab/wanlab/internal/workload/kinds"
)

// Bottlenecks a step or run is limited by.
const (
	ClientCPU = "client_cpu"
	ServerCPU = "server_cpu"
	Network   = "network"
	Disk      = "disk"
	Latency   = "latency"
	Testbed   = "testbed"
	// Application is a sender that left its socket empty: its own design,
	// as watched inside TCP, held the step.
	Application = "application"
)

// Options tune the analysis.
type Options struct {
	// EfficientFactor is k of the "efficient running" boundary: the largest
	// concurrency whose mean job wall-clock stays under k x the single-job time.
	EfficientFactor float64
	// Saturated is the utilisation (%) from which a resource counts as full.
	Saturated float64
}

// DefaultOptions are the seeds' choices: k = 10, full from 90%.
var DefaultOptions = Options{EfficientFactor: 10, Saturated: 90}

// Report is the analysis of one run.
type Report struct {
	Run      int64  `json:"run"`
	Scenario string `json:"scenario"`
	Status   string `json:"status"`
	// Bottleneck is the run's: that of the step where the first workload
	// with a throughput peaks. Empty when no step has one.
	Bottleneck string          `json:"bottleneck,omitempty"`
	Findings   []Finding       `json:"findings"`
	Workloads  []WorkloadSteps `json:"workloads"`
}

// Finding is one conclusion, in a sentence and in figures.
type Finding struct {
	Kind     string `json:"kind"` // saturation, bottleneck, efficient_running, failures, tuning, asymmetry, impact, taskfarm, model_fit, transfers, testbed, path_change, application_limited, limiting_factor, shared_bottleneck
	Workload string `json:"workload,omitempty"`
	Text     string `json:"text"`
	// Bottleneck is set on bottleneck findings.
	Bottleneck string `json:"bottleneck,omitempty"`
	// Confidence is high, medium or low, with the reason in Text.
	Confidence string             `json:"confidence,omitempty"`
	Values     map[string]float64 `json:"values"`
}

// WorkloadSteps is one workload's steps with their verdicts.
type WorkloadSteps struct {
	Name  string        `json:"name"`
	Kind  results.Kind  `json:"kind"`
	Steps []StepVerdict `json:"steps"`
}

// StepVerdict is what limited one step, and why.
type StepVerdict struct {
	Index      int                `json:"index"`
	Label      string             `json:"label"`
	Status     string             `json:"status"`
	Bottleneck string             `json:"bottleneck,omitempty"`
	Confidence string             `json:"confidence,omitempty"`
	Evidence   map[string]float64 `json:"evidence,omitempty"`
	Why        string             `json:"why,omitempty"`
}

// Step is one stored step with what the analysis needs.
type Step struct {
	Index   int
	Label   string
	Params  map[string]string
	Status  string
	Reason  string
	Metrics results.Metrics
	// Seconds is how long the step ran, 0 when not known.
	Seconds        float64
	TestbedLimited bool
	LimitedBy      []string
	// Config is the step as the scenario defines it.
	Config scenario.Step
	Jobs   []job.Record
}

// value is the step's plain figure called name (results.Named), 0 when it
// has none.
func (s Step) value(name string) float64 { return s.Metrics.Value(results.Named(name)) }

// Workload is a workload's steps in sweep order.
type Workload struct {
	Name    string
	Kind    results.Kind
	Steps   []Step
	Testbed *scenario.Testbed
	// RealHosts says the run was on real hosts: the test-bed is the
	// expected path, not what carried the traffic.
	RealHosts bool
}

// Load reads a run of the archive into workloads.
func Load(ctx context.Context, a *archive.Archive, id int64) (archive.Run, []Workload, error) {
	r, err := a.GetRun(ctx, id)
	if err != nil {
		return r, nil, err
	}
	if r.Kind == ImportIperf3 {
		return loadImport(ctx, a, r)
	}
	if r.Kind != "run" {
		return r, nil, fmt.Errorf("run %d is a %q: analysis is of scenario runs (wanlab run) and imports (wanlab import)", id, r.Kind)
	}
	var params struct {
		Source  string `json:"source"`
		Quick   bool   `json:"quick"`
		Backend string `json:"backend"`
	}
	json.Unmarshal(r.Params, &params)
	f, err := scenario.ParseStored(params.Source, []byte(r.Scenario), params.Quick)
	if err != nil {
		return r, nil, fmt.Errorf("run %d: reading its stored scenario: %w", id, err)
	}
	stored, err := a.Steps(ctx, id)
	if err != nil {
		return r, nil, err
	}
	last := map[int]archive.Step{} // the last try of each index counts
	for _, s := range stored {
		last[s.Index] = s
	}
	var out []Workload
	index := 0
	for _, w := range f.Workloads {
		wl := Workload{Name: w.Name, Kind: w.Kind, Testbed: f.Testbed, RealHosts: strings.HasPrefix(params.Backend, "real hosts")}
		for _, cfg := range w.Steps {
			s, ok := last[index]
			index++
			if !ok {
				continue // never ran (the run was interrupted before it)
			}
			st, err := storedStep(s)
			if err != nil {
				return r, nil, fmt.Errorf("run %d: %w", id, err)
			}
			st.Config = cfg
			if err := a.Jobs(ctx, s.ID, func(j job.Record) error { st.Jobs = append(st.Jobs, j); return nil }); err != nil {
				return r, nil, err
			}
			wl.Steps = append(wl.Steps, st)
		}
		out = append(out, wl)
	}
	return r, out, nil
}

// storedStep reads a step of the archive: its parameters and its result,
// of any version this wanlab knows.
func storedStep(s archive.Step) (Step, error) {
	st := Step{Index: s.Index, Label: s.Label, Status: s.Status, Reason: s.Reason, Params: map[string]string{}}
	if len(s.Params) > 0 && string(s.Params) != "null" {
		if err := json.Unmarshal(s.Params, &st.Params); err != nil {
			return st, fmt.Errorf("step %d: reading its parameters: %w", s.Index, err)
		}
	}
	res, err := results.DecodeStep(s.Result)
	if err != nil {
		return st, fmt.Errorf("step %d: %w", s.Index, err)
	}
	st.Metrics, st.Seconds, st.TestbedLimited, st.LimitedBy = res.Metrics, res.Seconds, res.TestbedLimited, res.LimitedBy
	return st, nil
}

// ImportIperf3 is the kind of a run imported from iperf3's JSON.
const ImportIperf3 = "import iperf3"

// ImportParams are what an imported iperf3 test records as its params.
type ImportParams struct {
	File     string `json:"file"`
	From     string `json:"from"`
	To       string `json:"to"`
	Protocol string `json:"protocol"`
	Streams  int    `json:"streams"`
}

// loadImport reads an imported iperf3 test as a one-step throughput
// workload on an unknown path.
func loadImport(ctx context.Context, a *archive.Archive, r archive.Run) (archive.Run, []Workload, error) {
	var p ImportParams
	json.Unmarshal(r.Params, &p)
	stored, err := a.Steps(ctx, r.ID)
	if err != nil {
		return r, nil, err
	}
	w := Workload{Name: "iperf3", Kind: results.Throughput}
	for _, s := range stored {
		st, err := storedStep(s)
		if err != nil {
			return r, nil, fmt.Errorf("run %d: %w", r.ID, err)
		}
		st.Config = scenario.Step{Spec: &imported{from: p.From, to: p.To, protocol: p.Protocol, streams: p.Streams}}
		w.Steps = append(w.Steps, st)
	}
	return r, []Workload{w}, nil
}

// imported is the spec of an imported iperf3 test: a throughput test
// between two hosts, of which the analysis knows the path, the protocol
// and the streams.
type imported struct {
	from, to, protocol string
	streams            int
}

// Length is not known: the test is over.
func (i *imported) Length() time.Duration { return 0 }

// RoleHosts is none: a test between two hosts has no role figures.
func (i *imported) RoleHosts() map[string][]string { return nil }

// Path is from the sender to the receiver.
func (i *imported) Path() (from, to string) { return i.from, i.to }

// Sending is the test's protocol and streams; its window is not known.
func (i *imported) Sending() kind.Sending {
	return kind.Sending{Protocol: i.protocol, Streams: i.streams}
}

// Ends are the sender and the receiver.
func (i *imported) Ends() (servers, clients []string, singleThreaded bool) {
	return []string{i.from}, []string{i.to}, false
}

// Analyze reads a run and analyses it.
func Analyze(ctx context.Context, a *archive.Archive, id int64, o Options) (*Report, error) {
	r, workloads, err := Load(ctx, a, id)
	if err != nil {
		return nil, err
	}
	rep, _, err := OfRun(ctx, a, r, workloads, o)
	return rep, err
}

// OfRun analyses a loaded run: its workloads and the timeline of its
// links' changes, which it returns too.
func OfRun(ctx context.Context, a *archive.Archive, r archive.Run, workloads []Workload, o Options) (*Report, *Timeline, error) {
	rep := Of(workloads, o)
	rep.Run, rep.Scenario, rep.Status = r.ID, r.Name, r.Status
	tl, err := LoadTimeline(ctx, a, r.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("run %d: reading its link changes: %w", r.ID, err)
	}
	rep.Findings = append(rep.Findings, PathChanges(tl, workloadsTestbed(workloads))...)
	watched, err := LoadWatched(ctx, a, r.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("run %d: reading its watched connections: %w", r.ID, err)
	}
	rep.Findings = append(rep.Findings, InsideTCP(watched)...)
	return rep, tl, nil
}

// workloadsTestbed is the workloads' test-bed, nil if none says.
func workloadsTestbed(workloads []Workload) *scenario.Testbed {
	for _, w := range workloads {
		if w.Testbed != nil {
			return w.Testbed
		}
	}
	return nil
}

// Of analyses workloads.
func Of(workloads []Workload, o Options) *Report {
	if o.EfficientFactor <= 0 {
		o.EfficientFactor = DefaultOptions.EfficientFactor
	}
	if o.Saturated <= 0 {
		o.Saturated = DefaultOptions.Saturated
	}
	rep := &Report{Findings: []Finding{}}
	for _, w := range workloads {
		ws := WorkloadSteps{Name: w.Name, Kind: w.Kind}
		for _, s := range w.Steps {
			ws.Steps = append(ws.Steps, verdict(w, s, o))
		}
		rep.Workloads = append(rep.Workloads, ws)
		var found []Finding
		for _, name := range w.Traits().Findings {
			f := finders[name]
			if f.of == nil || f.emulated && w.RealHosts {
				continue
			}
			found = append(found, f.of(w, ws, o)...)
		}
		found = append(found, testbedLimited(w, ws)...)
		found = append(found, sharedBottlenecks(w, ws, o)...)
		rep.Findings = append(rep.Findings, found...)
		if rep.Bottleneck == "" {
			if b := peakBottleneck(w, ws); b != "" {
				rep.Bottleneck = b
			}
		}
	}
	rep.Findings = append(rep.Findings, asymmetry(workloads)...)
	if len(workloads) > 0 && workloads[0].RealHosts {
		rep.Findings = append(pathAudit(workloads), rep.Findings...)
	}
	return rep
}

// finder finds one of the findings a kind's traits list (kind.Finding).
type finder struct {
	// of finds it in a workload; nil for a finding across workloads.
	of func(w Workload, ws WorkloadSteps, o Options) []Finding
	// emulated says it sets the steps against the scenario's path, which
	// a run on real hosts does not have.
	emulated bool
}

// finders are the findings on one workload by their names.
var finders = map[kind.Finding]finder{
	kind.Saturation:       {of: saturation},
	kind.EfficientRunning: {of: func(w Workload, _ WorkloadSteps, o Options) []Finding { return efficientRunning(w, o) }},
	kind.Failures:         {of: ofSteps(failures)},
	kind.TaskFarm:         {of: ofSteps(taskFarm)},
	kind.Tuning:           {of: ofSteps(tuning)},
	kind.ModelFit:         {of: ofSteps(modelFit), emulated: true},
	kind.LimitingFactor:   {of: ofVerdicts(limitingFactor), emulated: true},
	kind.Impact:           {of: ofSteps(impact)},
	kind.Transfers:        {of: ofVerdicts(transfers)},
	kind.Asymmetry:        {}, // across workloads: asymmetry
}

// ofSteps and ofVerdicts make a finder's function of one that reads the
// workload's steps only, or its steps and their verdicts.
func ofSteps(f func(Workload) []Finding) func(Workload, WorkloadSteps, Options) []Finding {
	return func(w Workload, _ WorkloadSteps, _ Options) []Finding { return f(w) }
}

func ofVerdicts(f func(Workload, WorkloadSteps) []Finding) func(Workload, WorkloadSteps, Options) []Finding {
	return func(w Workload, ws WorkloadSteps, _ Options) []Finding { return f(w, ws) }
}

// Traits are what the analysis and the report know of the workload's
// kind.
func (w Workload) Traits() kind.Traits { return kinds.TraitsOf(w.Kind) }

// spec is step s's spec as the capability C (kind.Ended, ...), if it has it.
func spec[C any](s Step) (C, bool) {
	c, ok := s.Config.Spec.(C)
	return c, ok
}

// throughputOf is the figure a step's throughput is judged by.
func throughputOf(m results.Metrics) (float64, bool) {
	return m.First(results.Named(results.ThroughputMbps), results.Named(results.AggregateMbps), results.Named(results.TaskRateHz))
}

// Concurrency is the swept value a workload ramps: jobs, streams, or the
// step's position.
func Concurrency(s Step) float64 {
	for _, k := range []string{"jobs", "workers", "count", "streams"} {
		if v, err := strconv.ParseFloat(s.Params[k], 64); err == nil {
			return v
		}
	}
	if c, ok := spec[kind.Concurrent](s); ok {
		return c.Concurrency()
	}
	return float64(s.Index)
}

// peakBottleneck is the bottleneck of the step where the workload's
// throughput peaks.
func peakBottleneck(w Workload, ws WorkloadSteps) string {
	best, bestV := -1, -1.0
	for i, s := range w.Steps {
		if v, ok := throughputOf(s.Metrics); ok && v > bestV && ws.Steps[i].Bottleneck != "" {
			best, bestV = i, v
		}
	}
	if best < 0 {
		return ""
	}
	return ws.Steps[best].Bottleneck
}

func sortedByConcurrency(w Workload) []Step {
	steps := slices.Clone(w.Steps)
	slices.SortStableFunc(steps, func(a, b Step) int {
		switch ca, cb := Concurrency(a), Concurrency(b); {
		case ca < cb:
			return -1
		case ca > cb:
			return 1
		}
		return 0
	})
	return steps
}
