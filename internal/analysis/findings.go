package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/testbed"
	"github.com/wanlab/wanlab/internal/units"
	"github.com/wanlab/wanlab/internal/workload/eventdb"
	"github.com/wanlab/wanlab/internal/workload/job"
)

// resource is one candidate bottleneck of a step and how full it was.
type resource struct {
	name string
	util float64 // % of its capacity
	what string  // e.g. "the server's CPU"
}

// cpuShare is how full host's CPU was, in % of what it can use: its quota,
// or the machine's cores, and one core for a single-threaded server.
func cpuShare(w Workload, m map[string]float64, host string, singleThreaded bool) (float64, bool) {
	used, ok := m["cpu_pct."+host]
	if !ok {
		return 0, false
	}
	capacity := float64(runtime.NumCPU())
	if w.Testbed != nil {
		if h, ok := w.Testbed.Host(host); ok && h.CPUs > 0 {
			capacity = h.CPUs
		}
	}
	if singleThreaded {
		capacity = min(capacity, 1)
	}
	return used / capacity, true
}

// busiestLink is the most utilised link direction of a step.
func busiestLink(m map[string]float64) (name string, util float64) {
	for k, v := range m {
		if d, ok := strings.CutPrefix(k, "link_utilization_pct."); ok && (v > util || v == util && d < name) {
			name, util = d, v
		}
	}
	return name, util
}

// roles names a step's data sources (servers) and sinks (clients).
func roles(c scenario.Step) (servers, clients []string, single bool) {
	switch {
	case c.EventDB != nil:
		return []string{c.EventDB.Server}, c.EventDB.Clients, c.EventDB.ServerModel == eventdb.ModelSingle
	case c.TaskFarm != nil:
		return []string{c.TaskFarm.Master}, c.TaskFarm.Workers, false
	case c.Throughput != nil:
		return []string{c.Throughput.From}, []string{c.Throughput.To}, false
	case c.Transfer != nil:
		return []string{c.Transfer.From}, []string{c.Transfer.To}, false
	case c.Mesh != nil:
		return c.Mesh.Hosts, nil, false
	}
	return nil, nil, false
}

// verdict decides what limited a step.
func verdict(w Workload, s Step, o Options) StepVerdict {
	v := StepVerdict{Index: s.Index, Label: s.Label, Status: s.Status}
	if _, ok := throughputOf(w.Kind, s.Metrics); !ok || s.Status == "failed" {
		return v
	}
	if s.TestbedLimited {
		v.Bottleneck, v.Confidence = Testbed, "high"
		v.Why = "the test-bed itself was saturated: " + strings.Join(s.LimitedBy, "; ")
		v.Evidence = map[string]float64{"machine_cpu_pct": s.Metrics["cpu_pct.machine"], "engine_cpu_pct": s.Metrics["cpu_pct.engine"]}
		return v
	}
	var res []resource
	if name, util := busiestLink(s.Metrics); name != "" {
		res = append(res, resource{Network, util, "link " + name})
	}
	res = append(res, transferResources(w, s)...)
	servers, clients, single := roles(s.Config)
	if s.Config.Transfer == nil {
		res = append(res, sampledDisks(s.Metrics, append(slices.Clone(servers), clients...))...)
	}
	for _, group := range []struct {
		name, role string
		hosts      []string
		single     bool
	}{{ServerCPU, "server", servers, single}, {ClientCPU, "client", clients, false}} {
		if w.Kind == "mesh" {
			group.name, group.role = ClientCPU, "node"
		}
		for _, h := range group.hosts {
			if util, ok := cpuShare(w, s.Metrics, h, group.single); ok {
				res = append(res, resource{group.name, util, fmt.Sprintf("the CPU of the %s (host %s)", group.role, h)})
			}
		}
	}
	if len(res) == 0 {
		return v // nothing was measured to judge by (an imported test)
	}
	sort.SliceStable(res, func(i, j int) bool { return res[i].util > res[j].util })
	v.Evidence = map[string]float64{}
	for _, r := range res {
		key := r.name + "_pct"
		if r.util > v.Evidence[key] {
			v.Evidence[key] = r.util
		}
	}
	if len(res) > 0 && res[0].util >= o.Saturated {
		v.Bottleneck = res[0].name
		v.Confidence = "high"
		v.Why = fmt.Sprintf("%s was %.0f%% busy", res[0].what, res[0].util)
		if len(res) > 1 && res[1].name != res[0].name && res[1].util >= o.Saturated-10 {
			v.Confidence = "medium"
			v.Why += fmt.Sprintf(", and %s %.0f%%", res[1].what, res[1].util)
		}
		return v
	}
	top := "nothing measured"
	if len(res) > 0 {
		top = fmt.Sprintf("%s at %.0f%%", res[0].what, res[0].util)
	}
	if w.Kind == "taskfarm" && s.Metrics["efficiency"] >= 0.95 {
		v.Bottleneck, v.Confidence = ClientCPU, "medium"
		v.Why = fmt.Sprintf("the workers were busy with the tasks %.0f%% of the ideal time (busiest other resource: %s)", 100*s.Metrics["efficiency"], top)
		v.Evidence["efficiency"] = s.Metrics["efficiency"]
		return v
	}
	// A transfer's legs are measured against exact capacities: a disk or
	// path within 10 points of full, well ahead of the rest, is what held it,
	// the shortfall being the time the two spent waiting on each other.
	if s.Config.Transfer != nil && len(res) > 0 && res[0].util >= o.Saturated-10 && (len(res) == 1 || res[1].util < res[0].util-10) {
		v.Bottleneck, v.Confidence = res[0].name, "low"
		v.Why = fmt.Sprintf("%s was %.0f%% busy, nearly full, and nothing else came close: the streams took turns waiting on it and on the rest of the path", res[0].what, res[0].util)
		return v
	}
	v.Bottleneck, v.Confidence = Latency, "medium"
	v.Why = fmt.Sprintf("no resource was full (busiest: %s): the step waited on round trips", top)
	if w.Kind == "taskfarm" {
		v.Evidence["worker_idle_share"] = s.Metrics["worker_idle_share"]
	}
	return v
}

// transferResources judges a transfer step by its legs' own rates, since
// the step's samples also cover the time spent making the source file: each
// leg's share of its path's TCP ceiling, of the sender's disk read cap and
// of the receiver's disk write cap.
func transferResources(w Workload, s Step) []resource {
	t := s.Config.Transfer
	if t == nil || w.Testbed == nil {
		return nil
	}
	var res []resource
	for _, leg := range []struct{ name, from, to string }{{"there", t.From, t.To}, {"back", t.To, t.From}} {
		mbps, ok := s.Metrics[leg.name+"_mbps"]
		if !ok || mbps <= 0 {
			continue
		}
		bytesPerSec := mbps * 1e6 / 8
		if p, _, ok := path(w.Testbed, leg.from, leg.to); ok && p.Bottleneck > 0 {
			wire := mbps * 1e6
			if r := s.Metrics[leg.name+"_compression_ratio"]; r > 0 {
				wire /= r
			}
			res = append(res, resource{Network, 100 * wire / p.TCPCeiling(), fmt.Sprintf("the path %s->%s (%.1f of its %.1f Mbit/s TCP ceiling)", leg.from, leg.to, wire/1e6, p.TCPCeiling()/1e6)})
		}
		if h, ok := w.Testbed.Host(leg.from); ok && h.Disk != nil && h.Disk.ReadBps > 0 {
			res = append(res, resource{Disk, 100 * bytesPerSec / float64(h.Disk.ReadBps), fmt.Sprintf("the disk of host %s (read at %.1f of its %.1f MB/s)", leg.from, bytesPerSec/1e6, float64(h.Disk.ReadBps)/1e6)})
		}
		if h, ok := w.Testbed.Host(leg.to); ok && h.Disk != nil && h.Disk.WriteBps > 0 {
			res = append(res, resource{Disk, 100 * bytesPerSec / float64(h.Disk.WriteBps), fmt.Sprintf("the disk of host %s (written at %.1f of its %.1f MB/s)", leg.to, bytesPerSec/1e6, float64(h.Disk.WriteBps)/1e6)})
		}
	}
	return res
}

// transfers answers "which host is the bottleneck" for a workload of file
// transfers: its steps grouped by what limited them, the commonest first.
func transfers(w Workload, ws WorkloadSteps) []Finding {
	groups := map[string][]string{}
	values := map[string]float64{}
	for i, v := range ws.Steps {
		if v.Bottleneck == "" {
			continue
		}
		groups[v.Bottleneck] = append(groups[v.Bottleneck], fmt.Sprintf("%s (%s)", v.Label, v.Why))
		values["steps_"+v.Bottleneck]++
		if mbps, ok := throughputOf(w.Kind, w.Steps[i].Metrics); ok {
			values["throughput_mbps."+v.Label] = mbps
		}
	}
	if len(groups) == 0 {
		return nil
	}
	names := slices.SortedFunc(maps.Keys(groups), func(a, b string) int {
		return cmp.Or(len(groups[b])-len(groups[a]), strings.Compare(a, b))
	})
	var parts []string
	for _, b := range names {
		words := bottleneckWords[b]
		parts = append(parts, fmt.Sprintf("%s%s limited %s: %s", strings.ToUpper(words[:1]), words[1:], plural(float64(len(groups[b])), "transfer"), strings.Join(groups[b], "; ")))
	}
	return []Finding{{Kind: "transfers", Workload: w.Name, Bottleneck: names[0], Confidence: "high",
		Text: strings.Join(parts, ". ") + ".", Values: values}}
}

// sampledDisks are the capped disks of hosts as the step's samples saw
// them: the mean read and write over the step, as % of the caps. A
// transfer is judged by its legs instead (see transferResources).
func sampledDisks(m map[string]float64, hosts []string) []resource {
	var res []resource
	for _, h := range hosts {
		for _, dir := range []struct{ key, verb string }{{"read", "read"}, {"write", "written"}} {
			if pct, ok := m["disk_"+dir.key+"_pct."+h]; ok {
				mbs := m["disk_"+dir.key+"_mbs."+h]
				res = append(res, resource{Disk, pct, fmt.Sprintf("the disk of host %s (%s at %.1f MB/s, %.0f%% of its cap, over the step)", h, dir.verb, mbs, pct)})
			}
		}
	}
	return res
}

var bottleneckWords = map[string]string{
	ClientCPU: "the clients' CPU", ServerCPU: "the server's CPU", Network: "the network", Disk: "the disk",
	Latency: "latency (round trips, not capacity)", Testbed: "the test-bed itself (this machine)",
}

// saturation finds where throughput peaks and where it stops growing, and
// names the bottleneck there.
func saturation(w Workload, ws WorkloadSteps, o Options) []Finding {
	steps := sortedByConcurrency(w)
	peak, peakV := -1, 0.0
	for i, s := range steps {
		if v, ok := throughputOf(w.Kind, s.Metrics); ok && v > peakV {
			peak, peakV = i, v
		}
	}
	if peak < 0 {
		return nil
	}
	knee := peak
	for i, s := range steps[:peak+1] {
		if v, _ := throughputOf(w.Kind, s.Metrics); v >= 0.95*peakV {
			knee = i
			break
		}
	}
	link, util := busiestLink(steps[knee].Metrics)
	values := map[string]float64{
		"peak_mbps": peakV, "peak_concurrency": concurrency(steps[peak]),
		"knee_concurrency": concurrency(steps[knee]), "knee_mbps": must(throughputOf(w.Kind, steps[knee].Metrics)),
		"link_utilization_pct": util,
	}
	text := fmt.Sprintf("Throughput peaks at %.1f Mbit/s with %s and stops growing from %s (within 5%% of the peak); the busiest link (%s) is %.0f%% utilised there.",
		peakV, jobsWord(steps[peak]), jobsWord(steps[knee]), link, util)
	if peak == len(steps)-1 && knee == peak && len(steps) > 1 {
		text = fmt.Sprintf("Throughput still grows at the largest step tried: %.1f Mbit/s with %s; the busiest link (%s) is %.0f%% utilised.", peakV, jobsWord(steps[peak]), link, util)
	}
	out := []Finding{{Kind: "saturation", Workload: w.Name, Text: text, Values: values}}

	var pv StepVerdict
	for _, v := range ws.Steps {
		if v.Index == steps[peak].Index {
			pv = v
		}
	}
	if pv.Bottleneck != "" {
		ev := map[string]float64{"concurrency": concurrency(steps[peak]), "throughput_mbps": peakV}
		for k, v := range pv.Evidence {
			ev[k] = v
		}
		out = append(out, Finding{Kind: "bottleneck", Workload: w.Name, Bottleneck: pv.Bottleneck, Confidence: pv.Confidence, Values: ev,
			Text: fmt.Sprintf("The bottleneck at the peak is %s: %s (confidence %s).", bottleneckWords[pv.Bottleneck], pv.Why, pv.Confidence)})
	}
	return out
}

func must(v float64, _ bool) float64 { return v }

// jobsWord says a step's concurrency in words.
func jobsWord(s Step) string {
	c := concurrency(s)
	switch {
	case s.Config.EventDB != nil:
		return plural(c, "job")
	case s.Params["streams"] != "":
		return plural(c, "stream")
	}
	return "step " + strconv.Itoa(s.Index+1)
}

func plural(n float64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatFloat(n, 'f', -1, 64) + " " + noun + "s"
}

// efficientRunning finds the largest concurrency whose mean job wall-clock
// stays under k x the single job's (the seed's "efficient running").
func efficientRunning(w Workload, o Options) []Finding {
	steps := sortedByConcurrency(w)
	if len(steps) < 2 || w.Kind != "eventdb" {
		return nil
	}
	single := steps[0].Metrics["mean_wallclock_s"]
	if single <= 0 {
		return nil
	}
	bound := -1
	for i, s := range steps {
		wct, ok := s.Metrics["mean_wallclock_s"]
		if ok && wct < o.EfficientFactor*single && s.Metrics["jobs_ok"] > 0 {
			bound = i
		}
	}
	if bound < 0 {
		return nil
	}
	b := steps[bound]
	values := map[string]float64{
		"k": o.EfficientFactor, "single_wallclock_s": single, "boundary_concurrency": concurrency(b),
		"mean_wallclock_s": b.Metrics["mean_wallclock_s"], "throughput_mbps": b.Metrics["throughput_mbps"],
		"server_cpu_pct": firstOf(b.Metrics, "server_cpu_quota_pct", "server_cpu_pct"), "client_cpu_pct": firstOf(b.Metrics, "client_cpu_quota_pct", "client_cpu_pct"),
	}
	text := fmt.Sprintf("Efficient running (mean job wall-clock under %g x the single job's %.1f s) holds up to %s: mean %.1f s, %.1f Mbit/s, server CPU %.0f%%, client CPU %.0f%%.",
		o.EfficientFactor, single, jobsWord(b), values["mean_wallclock_s"], values["throughput_mbps"], values["server_cpu_pct"], values["client_cpu_pct"])
	if bound == len(steps)-1 {
		text += " That is the largest step tried: the boundary lies beyond it."
	}
	return []Finding{{Kind: "efficient_running", Workload: w.Name, Text: text, Values: values}}
}

func firstOf(m map[string]float64, keys ...string) float64 {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return 0
}

// failures finds the first step where jobs fail, and why.
func failures(w Workload) []Finding {
	for _, s := range sortedByConcurrency(w) {
		bad := s.Metrics["jobs_timeout"] + s.Metrics["jobs_failed"] + s.Metrics["jobs_corrupt"]
		if bad == 0 {
			continue
		}
		total := 0.0
		for k, v := range s.Metrics {
			if strings.HasPrefix(k, "jobs_") && k != "jobs_per_client" {
				total += v
			}
		}
		reasons := map[string]int{}
		for _, j := range s.Jobs {
			if j.Status != job.OK && j.Status != job.Cancelled {
				reasons[shortReason(j.Reason)]++
			}
		}
		top, n := "", 0
		for r, c := range reasons {
			if c > n || c == n && r < top {
				top, n = r, c
			}
		}
		values := map[string]float64{"concurrency": concurrency(s), "timeouts": s.Metrics["jobs_timeout"], "failed": s.Metrics["jobs_failed"],
			"corrupt": s.Metrics["jobs_corrupt"], "failed_share": bad / max(total, 1)}
		text := fmt.Sprintf("Jobs start failing at %s: %.0f of %.0f (%.0f timed out, %.0f failed, %.0f corrupt)", jobsWord(s), bad, total,
			values["timeouts"], values["failed"], values["corrupt"])
		if top != "" {
			text += fmt.Sprintf("; most often: %s", top)
		}
		return []Finding{{Kind: "failures", Workload: w.Name, Text: text + ".", Values: values}}
	}
	return nil
}

// shortReason drops the per-job details of a reason (job and page
// numbers, addresses, ports) so that alike failures count together.
func shortReason(r string) string {
	if _, after, ok := strings.Cut(r, ": "); ok && strings.HasPrefix(r, "job ") {
		r = after
	}
	r = eventRE.ReplaceAllString(r, "")
	r = addrRE.ReplaceAllString(r, "ADDR")
	return numberRE.ReplaceAllString(r, "N")
}

var (
	eventRE  = regexp.MustCompile(` \(event [^)]*\)`)
	addrRE   = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+`)
	numberRE = regexp.MustCompile(`\b\d+\b`)
)

// taskFarm compares each step's task rate with the ideal and estimates the
// task duration from which latency costs under 5%.
func taskFarm(w Workload) []Finding {
	var out []Finding
	var overheads []float64
	for _, s := range w.Steps {
		t := s.Config.TaskFarm
		m := s.Metrics
		if t == nil || m["seconds"] <= 0 || m["tasks_done"] == 0 {
			continue
		}
		ideal := float64(t.Count) / max(t.Duration.Seconds(), 1e-9)
		perTask := m["seconds"] * float64(t.Count) / m["tasks_done"] // a worker's time per task
		overhead := max(0, perTask-t.Duration.Seconds())
		overheads = append(overheads, overhead)
		values := map[string]float64{"task_rate_hz": m["task_rate_hz"], "ideal_rate_hz": ideal, "efficiency": m["efficiency"],
			"latency_share": 1 - min(1, m["efficiency"]), "overhead_per_task_s": overhead, "duration_s": t.Duration.Seconds(), "prefetch": float64(t.Prefetch)}
		text := fmt.Sprintf("%s: %.2f tasks/s of an ideal %.2f (%d workers, %s tasks, prefetch %d): %.0f%% of the time lost to the network, %.3f s per task.",
			orStep(s), m["task_rate_hz"], ideal, t.Count, units.FormatDuration(t.Duration), t.Prefetch, 100*values["latency_share"], overhead)
		if t.Duration == 0 {
			values["ideal_rate_hz"] = 0
			text = fmt.Sprintf("%s: %.0f tasks/s with %d workers on zero-length tasks (prefetch %d).", orStep(s), m["task_rate_hz"], t.Count, t.Prefetch)
		}
		out = append(out, Finding{Kind: "taskfarm", Workload: w.Name, Text: text, Values: values})
	}
	if len(overheads) > 0 {
		o := stat.Quantile(0.5, stat.Empirical, sorted(overheads), nil)
		if o > 0 {
			// overhead / (duration + overhead) < 5%  <=>  duration > 19 x overhead
			cross := 19 * o
			out = append(out, Finding{Kind: "taskfarm", Workload: w.Name, Values: map[string]float64{"median_overhead_s": o, "crossover_duration_s": cross},
				Text: fmt.Sprintf("The network costs a median %.3f s per task here, so tasks longer than %.2g s lose under 5%% to it.", o, cross)})
		}
	}
	return out
}

func orStep(s Step) string {
	if s.Label != "" {
		return s.Label
	}
	return "step " + strconv.Itoa(s.Index+1)
}

func sorted(v []float64) []float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v
}

// path returns the planned path between two hosts and the loss
// probability of its way there.
func path(tb *scenario.Testbed, from, to string) (p testbed.PathPlan, loss float64, ok bool) {
	if tb == nil {
		return p, 0, false // an imported test on a real path
	}
	plan, err := testbed.NewPlan(tb)
	if err != nil {
		return p, 0, false
	}
	for _, pp := range plan.PathList() {
		if pp.From == from && pp.To == to {
			p, ok = pp, true
		}
	}
	keep := 1.0
	for _, name := range p.Via {
		for _, d := range plan.Dirs {
			if d.Name == name {
				keep *= 1 - d.Config.Loss.Mean()
			}
		}
	}
	return p, 1 - keep, ok
}

// tuning finds the best streams and window of a throughput sweep; of a
// single test it reports what it achieved.
func tuning(w Workload) []Finding {
	if len(w.Steps) == 1 && w.Steps[0].Config.Throughput != nil {
		s := w.Steps[0]
		t := s.Config.Throughput
		return []Finding{{Kind: "throughput", Workload: w.Name, Values: map[string]float64{"throughput_mbps": s.Metrics["throughput_mbps"], "streams": float64(t.Streams), "retransmits": s.Metrics["retransmits"]},
			Text: fmt.Sprintf("%s->%s: %.2f Mbit/s with %s (%.0f retransmits).", t.From, t.To, s.Metrics["throughput_mbps"], plural(float64(t.Streams), "stream"), s.Metrics["retransmits"])}}
	}
	if len(w.Steps) < 2 {
		return nil
	}
	best, base := -1, -1
	for i, s := range w.Steps {
		if best < 0 || s.Metrics["throughput_mbps"] > w.Steps[best].Metrics["throughput_mbps"] {
			best = i
		}
		if base < 0 || s.Config.Throughput.Streams < w.Steps[base].Config.Throughput.Streams {
			base = i
		}
	}
	b, one := w.Steps[best], w.Steps[base]
	t := b.Config.Throughput
	if _, swept := b.Params["streams"]; !swept {
		if _, swept := b.Params["window"]; !swept {
			return nil // repeats of one setting: see asymmetry
		}
	}
	values := map[string]float64{"best_mbps": b.Metrics["throughput_mbps"], "best_streams": float64(t.Streams), "best_window_bytes": float64(t.Window),
		"baseline_mbps": one.Metrics["throughput_mbps"], "baseline_streams": float64(one.Config.Throughput.Streams)}
	if one.Metrics["throughput_mbps"] > 0 {
		values["gain"] = b.Metrics["throughput_mbps"] / one.Metrics["throughput_mbps"]
	}
	window := "autotuned windows"
	if t.Window > 0 {
		window = units.Size(t.Window).String() + " windows"
	}
	text := fmt.Sprintf("%s->%s: best %.2f Mbit/s with %s and %s, %.1fx the %.2f Mbit/s of %s.", t.From, t.To, values["best_mbps"],
		plural(float64(t.Streams), "stream"), window, values["gain"], values["baseline_mbps"], plural(values["baseline_streams"], "stream"))
	if p, _, ok := path(w.Testbed, t.From, t.To); ok && p.Bottleneck > 0 {
		bdp := p.Bottleneck * p.BaseRTTms / 1000 / 8
		values["bdp_bytes"], values["bottleneck_mbps"], values["base_rtt_ms"] = bdp, p.Bottleneck/1e6, p.BaseRTTms
		text += fmt.Sprintf(" The path's bandwidth-delay product is %s (%.1f Mbit/s x %.0f ms).", units.Size(int64(bdp)).String(), p.Bottleneck/1e6, p.BaseRTTms)
	}
	return []Finding{{Kind: "tuning", Workload: w.Name, Text: text, Values: values}}
}

// MathisC is the constant of the Mathis et al. bound for periodic loss with
// delayed ACKs off: throughput <= MSS/RTT x sqrt(3/2)/sqrt(p).
var MathisC = math.Sqrt(1.5)

// modelFit compares TCP throughput with the Mathis bound and the window
// limit of each step's path.
func modelFit(w Workload) []Finding {
	var residuals []float64
	var worst Finding
	for _, s := range w.Steps {
		t := s.Config.Throughput
		if t == nil || t.Protocol != "tcp" || s.Metrics["throughput_mbps"] <= 0 {
			continue
		}
		p, loss, ok := path(w.Testbed, t.From, t.To)
		if !ok || p.BaseRTTms <= 0 {
			continue
		}
		rtt := p.BaseRTTms / 1000
		mss := float64(p.MTU - 52)
		perStream := math.Inf(1)
		if t.Window > 0 {
			perStream = float64(t.Window) * 8 / rtt
		}
		if loss > 0 {
			perStream = min(perStream, mss*8/rtt*MathisC/math.Sqrt(loss))
		}
		predicted := perStream * float64(t.Streams)
		if c := p.TCPCeiling(); c > 0 {
			predicted = min(predicted, c)
		}
		if math.IsInf(predicted, 1) {
			continue
		}
		measured := s.Metrics["throughput_mbps"] * 1e6
		res := (measured - predicted) / predicted
		residuals = append(residuals, math.Abs(res))
		if worst.Values == nil || math.Abs(res) > math.Abs(worst.Values["residual"]) {
			worst = Finding{Values: map[string]float64{"predicted_mbps": predicted / 1e6, "measured_mbps": measured / 1e6, "residual": res, "loss": loss, "rtt_ms": p.BaseRTTms}}
			worst.Text = s.Label
		}
	}
	if len(residuals) == 0 {
		return nil
	}
	mean := stat.Mean(residuals, nil)
	label := worst.Text
	worst.Kind, worst.Workload = "model_fit", w.Name
	worst.Values["mean_abs_residual"] = mean
	worst.Values["steps"] = float64(len(residuals))
	worst.Text = fmt.Sprintf("Against the TCP model (window / RTT, the Mathis bound MSS/RTT x 1.22/sqrt(p) for Reno-like TCP at the path's loss, and the link ceiling), the mean absolute residual over %d steps is %.0f%%; the largest is %+.0f%% at %s (%.2f measured, %.2f predicted Mbit/s).",
		len(residuals), 100*mean, 100*worst.Values["residual"], orDash(label), worst.Values["measured_mbps"], worst.Values["predicted_mbps"])
	return []Finding{worst}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// impact reports what a load did to the others' round trips and loss.
func impact(w Workload) []Finding {
	var out []Finding
	for _, s := range w.Steps {
		m := s.Metrics
		if _, ok := m["loaded_rtt_p50_ms"]; !ok {
			continue
		}
		i := s.Config.Impact
		out = append(out, Finding{Kind: "impact", Workload: w.Name, Values: map[string]float64{
			"idle_rtt_p50_ms": m["idle_rtt_p50_ms"], "loaded_rtt_p50_ms": m["loaded_rtt_p50_ms"], "rtt_inflation_ms": m["rtt_inflation_ms"],
			"idle_lost_percent": m["idle_lost_percent"], "loaded_lost_percent": m["loaded_lost_percent"], "loss_increase_points": m["loss_increase_points"], "load_mbps": m["load_mbps"]},
			Text: fmt.Sprintf("A %s load %s->%s (%.1f Mbit/s) raised the round trip %s->%s from %.1f to %.1f ms (+%.1f ms) and its loss from %.1f%% to %.1f%%.",
				plural(float64(i.Streams), "stream"), i.From, i.To, m["load_mbps"], i.ProbeFrom, i.ProbeTo, m["idle_rtt_p50_ms"], m["loaded_rtt_p50_ms"],
				m["rtt_inflation_ms"], m["idle_lost_percent"], m["loaded_lost_percent"])})
	}
	return out
}

// testbedLimited warns of steps whose figures describe the machine.
func testbedLimited(w Workload, ws WorkloadSteps) []Finding {
	var labels []string
	for _, s := range w.Steps {
		if s.TestbedLimited {
			labels = append(labels, orStep(s))
		}
	}
	if len(labels) == 0 {
		return nil
	}
	return []Finding{{Kind: "testbed", Workload: w.Name, Bottleneck: Testbed, Confidence: "high",
		Values: map[string]float64{"steps": float64(len(labels)), "of": float64(len(w.Steps))},
		Text: fmt.Sprintf("%d of %d steps were limited by the test-bed itself (%s): their figures describe this machine, not the scenario.",
			len(labels), len(w.Steps), strings.Join(labels, ", "))}}
}

// asymmetry compares repeated throughput runs A->B with B->A.
func asymmetry(workloads []Workload) []Finding {
	type series struct {
		name     string
		from, to string
		setting  scenario.Throughput // with From and To cleared
		values   []float64
	}
	var all []series
	for _, w := range workloads {
		if w.Kind != "throughput" {
			continue
		}
		var s series
		same := true
		for i, st := range w.Steps {
			t := st.Config.Throughput
			if t == nil || st.Status != "done" {
				continue
			}
			setting := *t
			setting.From, setting.To = "", ""
			if i > 0 && setting != s.setting {
				same = false // a sweep, not repeats of one test
			}
			s.name, s.from, s.to, s.setting = w.Name, t.From, t.To, setting
			s.values = append(s.values, st.Metrics["throughput_mbps"])
		}
		if same && len(s.values) >= 2 {
			all = append(all, s)
		}
	}
	var out []Finding
	for i, a := range all {
		for _, b := range all[i+1:] {
			if a.from != b.to || a.to != b.from || a.setting != b.setting {
				continue
			}
			ma, mb := stat.Mean(a.values, nil), stat.Mean(b.values, nil)
			slow, fast := a, b
			if ma > mb {
				slow, fast = b, a
			}
			ms, mf := stat.Mean(slow.values, nil), stat.Mean(fast.values, nil)
			p, d := welch(slow.values, fast.values)
			conf := "low"
			switch {
			case p < 0.01:
				conf = "high"
			case p < 0.05:
				conf = "medium"
			}
			out = append(out, Finding{Kind: "asymmetry", Workload: a.name + "," + b.name, Confidence: conf,
				Values: map[string]float64{"slow_mbps": ms, "fast_mbps": mf, "slower_by": 1 - ms/mf, "p_value": p, "cohens_d": d,
					"runs_slow": float64(len(slow.values)), "runs_fast": float64(len(fast.values))},
				Text: fmt.Sprintf("%s->%s is %.0f%% slower than %s->%s (%.2f against %.2f Mbit/s over %d and %d runs; Welch's t-test p = %.2g, Cohen's d = %.1f: confidence %s).",
					slow.from, slow.to, 100*(1-ms/mf), fast.from, fast.to, ms, mf, len(slow.values), len(fast.values), p, d, conf)})
		}
	}
	return out
}

// welch returns the two-sided p-value of Welch's t-test and Cohen's d
// (pooled standard deviation) for two samples.
func welch(a, b []float64) (p, d float64) {
	ma, va := stat.MeanVariance(a, nil)
	mb, vb := stat.MeanVariance(b, nil)
	na, nb := float64(len(a)), float64(len(b))
	se := math.Sqrt(va/na + vb/nb)
	pooled := math.Sqrt(((na-1)*va + (nb-1)*vb) / (na + nb - 2))
	if pooled > 0 {
		d = math.Abs(ma-mb) / pooled
	} else if ma != mb {
		d = math.Inf(1)
	}
	if se == 0 {
		if ma == mb {
			return 1, 0
		}
		return 0, d
	}
	t := math.Abs(ma-mb) / se
	df := math.Pow(va/na+vb/nb, 2) / (math.Pow(va/na, 2)/(na-1) + math.Pow(vb/nb, 2)/(nb-1))
	return 2 * (1 - distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.CDF(t)), d
}
