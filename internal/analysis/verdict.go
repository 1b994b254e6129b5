package analysis

// The verdict of a step: what limited it, among the resources its figures
// show (CPUs, links, disks), or latency when none was full.

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/workload/kind"
)

// resource is one candidate bottleneck of a step and how full it was.
type resource struct {
	name string
	util float64 // % of its capacity
	what string  // e.g. "the server's CPU"
	dir  string  // the link direction, for a link's
}

// cpuShare is how full host's CPU was in step s, in % of what it can use:
// its quota, or the machine's cores, and one core for a single-threaded
// server. A share of a quota follows results.QuotaShare over the step's
// time; where that is not stored, a share over 100% is not known either.
func cpuShare(w Workload, s Step, host string, singleThreaded bool) (float64, bool) {
	used, ok := s.Metrics.Get(results.CPUPct.About(host))
	if !ok {
		return 0, false
	}
	capacity := float64(runtime.NumCPU())
	if w.Testbed != nil {
		if h, ok := w.Testbed.Host(host); ok && h.CPUs > 0 {
			capacity = h.CPUs
			if !singleThreaded || h.CPUs <= 1 {
				if s.Seconds > 0 {
					return results.QuotaShare(used, time.Duration(s.Seconds*float64(time.Second)), h.CPUs)
				}
				return used / capacity, used/capacity <= 100
			}
		}
	}
	if singleThreaded {
		capacity = min(capacity, 1)
	}
	return used / capacity, true
}

// cpuGroup is hosts of a step whose CPUs may have limited it, in one role.
type cpuGroup struct {
	name, role string // the bottleneck they are, and what a host is
	hosts      []string
	single     bool // single-threaded: one core at most
}

// cpuGroups are a step's hosts whose CPUs may have limited it: its data
// sources (servers) and sinks (clients), or its peers (a mesh's nodes).
func cpuGroups(s Step) []cpuGroup {
	if p, ok := spec[kind.Peered](s); ok {
		return []cpuGroup{{ClientCPU, "node", p.Peers(), false}}
	}
	e, ok := spec[kind.Ended](s)
	if !ok {
		return nil
	}
	servers, clients, single := e.Ends()
	return []cpuGroup{{ServerCPU, "server", servers, single}, {ClientCPU, "client", clients, false}}
}

// verdict decides what limited a step: the test-bed, a full resource, or,
// when none was full, latency (or the tasks themselves, for a farm that
// kept its workers busy).
func verdict(w Workload, s Step, o Options) StepVerdict {
	v := StepVerdict{Index: s.Index, Label: s.Label, Status: s.Status}
	if _, ok := throughputOf(s.Metrics); !ok || s.Status == "failed" {
		return v
	}
	if s.TestbedLimited {
		v.Bottleneck, v.Confidence = Testbed, "high"
		v.Why = "the test-bed itself was saturated: " + strings.Join(s.LimitedBy, "; ")
		v.Evidence = map[string]float64{"machine_cpu_pct": s.Metrics.Value(results.CPUPct.About(results.Machine)), "engine_cpu_pct": s.Metrics.Value(results.CPUPct.About(results.Engine))}
		return v
	}
	if why := strainedShort(w, s); why != "" {
		v.Bottleneck, v.Confidence, v.Why = Testbed, "medium", why
		v.Evidence = map[string]float64{"machine_cpu_pct": s.Metrics.Value(results.CPUPct.About(results.Machine)), "engine_cpu_pct": s.Metrics.Value(results.CPUPct.About(results.Engine))}
		return v
	}
	res, unknown := resources(w, s)
	if len(res) == 0 {
		return v // nothing was measured to judge by (an imported test)
	}
	shareLinks(w, s, res, o)
	v.Evidence = map[string]float64{}
	for _, r := range res {
		key := r.name + "_pct"
		if r.util > v.Evidence[key] {
			v.Evidence[key] = r.util
		}
	}
	if res[0].util >= o.Saturated {
		v.Bottleneck = res[0].name
		v.Confidence = "high"
		v.Why = fmt.Sprintf("%s was %.0f%% busy", res[0].what, res[0].util)
		if len(res) > 1 && res[1].name != res[0].name && res[1].util >= o.Saturated-10 {
			v.Confidence = "medium"
			v.Why += fmt.Sprintf(", and %s %.0f%%", res[1].what, res[1].util)
		}
		return withUnknown(v, s, unknown)
	}
	return withUnknown(notFull(w, s, res, unknown, o, v), s, unknown)
}

// withUnknown says which CPUs of a step could not be told and lowers the
// verdict's confidence by one: any of them may have been full.
func withUnknown(v StepVerdict, s Step, unknown []string) StepVerdict {
	if len(unknown) == 0 || v.Bottleneck == Latency {
		return v // notFull says it in its own words
	}
	v.Confidence = lower(v.Confidence)
	v.Why += "; but " + unknownText(s, unknown)
	return v
}

// lower is the confidence one step below c.
func lower(c string) string {
	if c == "high" {
		return "medium"
	}
	return "low"
}

// unknownText says that the CPUs of step s that unknown describes are not
// known, and why.
func unknownText(s Step, unknown []string) string {
	verb := "is"
	if len(unknown) > 1 {
		verb = "are"
	}
	return fmt.Sprintf("%s %s not known %s", strings.Join(unknown, " and "), verb, quotaUnknownWhy(s))
}

// resources are what a step's figures say of its candidate bottlenecks,
// the fullest first: the busiest link, a transfer's legs or the hosts'
// disks, and the CPU of each server and client. unknown describes the
// CPUs the step measured but whose share cannot be told (a share of a
// quota over a step under a second).
func resources(w Workload, s Step) (res []resource, unknown []string) {
	if name, util := results.BusiestLink(s.Metrics); name != "" {
		res = append(res, resource{name: Network, util: util, what: "link " + name, dir: name})
	}
	res = append(res, legResources(w, s)...)
	groups := cpuGroups(s)
	if _, legged := spec[kind.Legged](s); !legged {
		var hosts []string
		for _, g := range groups {
			hosts = append(hosts, g.hosts...)
		}
		res = append(res, sampledDisks(s.Metrics, hosts)...)
	}
	for _, group := range groups {
		for _, h := range group.hosts {
			what := fmt.Sprintf("the CPU of the %s (host %s)", group.role, h)
			if util, ok := cpuShare(w, s, h, group.single); ok {
				res = append(res, resource{name: group.name, util: util, what: what})
			} else if _, measured := s.Metrics.Get(results.CPUPct.About(h)); measured {
				unknown = append(unknown, what)
			}
		}
	}
	sort.SliceStable(res, func(i, j int) bool { return res[i].util > res[j].util })
	return res, unknown
}

// quotaUnknownWhy says why a host's share of its CPU quota cannot be told
// in step s (results.QuotaShare).
func quotaUnknownWhy(s Step) string {
	if s.Seconds > 0 && s.Seconds < results.MinQuotaWindow.Seconds() {
		return fmt.Sprintf("(a step of %.2g s is too short to tell a share of a CPU quota, which takes %v)", s.Seconds, results.MinQuotaWindow)
	}
	return "(more CPU was used than the quota allows, so no share of it can be told)"
}

// notFull decides a step none of whose resources was full.
// With a CPU not known, the step waited on round trips or on that CPU.
func notFull(w Workload, s Step, res []resource, unknown []string, o Options, v StepVerdict) StepVerdict {
	top := fmt.Sprintf("%s at %.0f%%", res[0].what, res[0].util)
	if idle, ok := s.Metrics.Get(results.Named(results.AppLimitedPct)); ok && idle >= 100*appLimitedShare {
		v.Bottleneck, v.Confidence = Application, "high"
		v.Why = fmt.Sprintf("a watched sender had nothing to send %.0f%% of the time (application-limited, from TCP_INFO), and no resource was full (busiest: %s)", idle, top)
		v.Evidence["application_limited_pct"] = idle
		return v
	}
	if w.Traits().BusyWorkers && s.value(results.Efficiency) >= 0.95 {
		v.Bottleneck, v.Confidence = ClientCPU, "medium"
		v.Why = fmt.Sprintf("the workers were busy with the tasks %.0f%% of the ideal time (busiest other resource: %s)", 100*s.value(results.Efficiency), top)
		v.Evidence["efficiency"] = s.value(results.Efficiency)
		return v
	}
	// A transfer's legs are measured against exact capacities: a disk or
	// path within 10 points of full, well ahead of the rest, is what held it,
	// the shortfall being the time the two spent waiting on each other.
	if _, legged := spec[kind.Legged](s); legged && res[0].util >= o.Saturated-10 && (len(res) == 1 || res[1].util < res[0].util-10) {
		v.Bottleneck, v.Confidence = res[0].name, "low"
		v.Why = fmt.Sprintf("%s was %.0f%% busy, nearly full, and nothing else came close: the streams took turns waiting on it and on the rest of the path", res[0].what, res[0].util)
		return v
	}
	v.Bottleneck, v.Confidence = Latency, "medium"
	v.Why = fmt.Sprintf("no resource was full (busiest: %s): the step waited on round trips", top)
	if len(unknown) > 0 {
		v.Confidence = "low"
		that := "that CPU"
		if len(unknown) > 1 {
			that = "those CPUs"
		}
		v.Why = fmt.Sprintf("no resource known was full (busiest: %s), but %s: the step waited on round trips, or on %s", top, unknownText(s, unknown), that)
	}
	if w.Traits().BusyWorkers {
		v.Evidence["worker_idle_share"] = s.value(results.WorkerIdleShare)
	}
	return v
}

// legResources judges a step of legs (a transfer) by its legs' own rates,
// since the step's samples also cover the time spent making the source
// file: each leg's share of its path's TCP ceiling, of the sender's disk
// read cap and of the receiver's disk write cap.
func legResources(w Workload, s Step) []resource {
	l, ok := spec[kind.Legged](s)
	if !ok || w.Testbed == nil {
		return nil
	}
	var res []resource
	for _, leg := range l.Legs() {
		mbps, ok := s.Metrics.Get(results.Named(results.LegMbps).OnLeg(leg.Name))
		if !ok || mbps <= 0 {
			continue
		}
		bytesPerSec := mbps * 1e6 / 8
		if p, ok := path(w.Testbed, leg.From, leg.To); ok && p.Bottleneck > 0 {
			wire := mbps * 1e6
			if r := s.Metrics.Value(results.Named(results.CompressionRatio).OnLeg(leg.Name)); r > 0 {
				wire /= r
			}
			res = append(res, resource{name: Network, util: 100 * wire / p.TCPCeiling(), what: fmt.Sprintf("the path %s->%s (%.1f of its %.1f Mbit/s TCP ceiling)", leg.From, leg.To, wire/1e6, p.TCPCeiling()/1e6)})
		}
		if h, ok := w.Testbed.Host(leg.From); ok && h.Disk != nil && h.Disk.ReadBps > 0 {
			res = append(res, resource{name: Disk, util: 100 * bytesPerSec / float64(h.Disk.ReadBps), what: fmt.Sprintf("the disk of host %s (read at %.1f of its %.1f MB/s)", leg.From, bytesPerSec/1e6, float64(h.Disk.ReadBps)/1e6)})
		}
		if h, ok := w.Testbed.Host(leg.To); ok && h.Disk != nil && h.Disk.WriteBps > 0 {
			res = append(res, resource{name: Disk, util: 100 * bytesPerSec / float64(h.Disk.WriteBps), what: fmt.Sprintf("the disk of host %s (written at %.1f of its %.1f MB/s)", leg.To, bytesPerSec/1e6, float64(h.Disk.WriteBps)/1e6)})
		}
	}
	return res
}

// sampledDisks are the capped disks of hosts as the step's samples saw
// them: the mean read and write over the step, as % of the caps. A
// step of legs is judged by them instead (see legResources).
func sampledDisks(m results.Metrics, hosts []string) []resource {
	var res []resource
	for _, h := range hosts {
		for _, dir := range []struct {
			pct, mbs results.Family
			verb     string
		}{{results.DiskReadPct, results.DiskReadMBs, "read"}, {results.DiskWritePct, results.DiskWriteMBs, "written"}} {
			if pct, ok := m.Get(dir.pct.About(h)); ok {
				mbs := m.Value(dir.mbs.About(h))
				res = append(res, resource{name: Disk, util: pct, what: fmt.Sprintf("the disk of host %s (%s at %.1f MB/s, %.0f%% of its cap, over the step)", h, dir.verb, mbs, pct)})
			}
		}
	}
	return res
}

var bottleneckWords = map[string]string{
	ClientCPU: "the clients' CPU", ServerCPU: "the server's CPU", Network: "the network", Disk: "the disk",
	Latency: "latency (round trips, not capacity)", Testbed: "the test-bed itself (this machine)",
	Application: "the application (its sender left the socket empty)",
}

// strainedShort explains a TCP throughput step on an emulated path that
// fell well short of what its path allows while the test-bed was close to
// its limits: the test-bed is the likelier cause. Empty otherwise.
func strainedShort(w Workload, s Step) string {
	if w.RealHosts {
		return ""
	}
	a, ok := allowed(w, s)
	mbps := s.value(results.ThroughputMbps)
	if !ok || mbps*1e6 >= reachedShare*a.bps {
		return ""
	}
	strained := strainedSigns(s)
	if len(strained) == 0 {
		return ""
	}
	return fmt.Sprintf("the step carried %s, %.0f%% of the %s its path allows, while the test-bed was near its limits (%s): this machine, not the path, most likely held it",
		rateText(mbps*1e6), 100*mbps*1e6/a.bps, rateText(a.bps), strings.Join(strained, "; "))
}

// strainedSigns are the step's signs of a test-bed near its limits.
func strainedSigns(s Step) []string {
	signs := results.Signs{MachineBusyPct: -1, EngineCPUPct: -1, LatenessP99us: -1}
	if v, ok := s.Metrics.Get(results.CPUPct.About(results.Machine)); ok {
		signs.MachineBusyPct = v
	}
	if v, ok := s.Metrics.Get(results.CPUPct.About(results.Engine)); ok {
		signs.EngineCPUPct = v
	}
	return signs.Strained()
}
