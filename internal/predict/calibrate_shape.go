package predict

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/wanlab/wanlab/internal/scenario"
)

// ShapeDiff says how a calibration run's scenario (measured) differs in
// shape from the scenario being predicted: its hosts, links (their rates
// and delays, all their settings), sites, routers and routes, and its
// workloads' names and kinds, one sentence each; none when they are the
// same shape. The sweeps' values and the steps' settings may differ (a
// quick run calibrates a full prediction).
func ShapeDiff(measured, predicted *scenario.File) []string {
	var d []string
	say := func(format string, args ...any) { d = append(d, fmt.Sprintf(format, args...)) }
	m, p := measured.Testbed, predicted.Testbed
	if m == nil || p == nil {
		if m != p {
			say("one scenario has no test-bed")
		}
		return d
	}
	diffNamed(m.Hosts, p.Hosts, func(h scenario.Host) string { return h.Name }, "host", say, func(a, b scenario.Host) {
		if a.CPUs != b.CPUs {
			say("host %s: cpus %g in the run, %g here", a.Name, a.CPUs, b.CPUs)
		}
		if a.Site != b.Site {
			say("host %s: site %q in the run, %q here", a.Name, a.Site, b.Site)
		}
		if !reflect.DeepEqual(a.Disk, b.Disk) {
			say("host %s: its disk differs", a.Name)
		}
		if (a.Agent == "") != (b.Agent == "") {
			say("host %s: a real host in one and emulated in the other", a.Name)
		}
	})
	linkName := func(l scenario.Link) string { return l.A + "<->" + l.B }
	diffNamed(m.Links, p.Links, linkName, "link", say, func(a, b scenario.Link) {
		diffDirection(say, "link "+a.A+"->"+a.B, a.Forward, b.Forward)
		diffDirection(say, "link "+a.B+"->"+a.A, a.Reverse, b.Reverse)
	})
	diffNamed(m.Sites, p.Sites, func(s scenario.Site) string { return s.Name }, "site", say, func(a, b scenario.Site) {
		diffDirection(say, "site "+a.Name+" up", a.Up, b.Up)
		diffDirection(say, "site "+a.Name+" down", a.Down, b.Down)
		diffDirection(say, "site "+a.Name+" lan", a.LAN, b.LAN)
		if a.Via != b.Via {
			say("site %s: joins router %q in the run, %q here", a.Name, a.Via, b.Via)
		}
	})
	diffNamed(m.Routers, p.Routers, func(r scenario.Router) string { return r.Name }, "router", say, func(scenario.Router, scenario.Router) {})
	if m.Routing != p.Routing || !reflect.DeepEqual(m.Routes, p.Routes) {
		say("the routing or the explicit routes differ")
	}
	wname := func(w scenario.Workload) string { return w.Name }
	diffNamed(measured.Workloads, predicted.Workloads, wname, "workload", say, func(a, b scenario.Workload) {
		if a.Kind != b.Kind {
			say("workload %s: kind %s in the run, %s here", a.Name, a.Kind, b.Kind)
		}
	})
	return d
}

// diffNamed says which of the run's things (ms) are missing here and
// which of these (ps) the run lacks, and compares those both have with
// same.
func diffNamed[T any](ms, ps []T, name func(T) string, what string, say func(string, ...any), same func(a, b T)) {
	for _, m := range ms {
		i := slices.IndexFunc(ps, func(p T) bool { return name(p) == name(m) })
		if i < 0 {
			say("%s %s is in the run, not here", what, name(m))
			continue
		}
		same(m, ps[i])
	}
	for _, p := range ps {
		if !slices.ContainsFunc(ms, func(m T) bool { return name(m) == name(p) }) {
			say("%s %s is here, not in the run", what, name(p))
		}
	}
}

// diffDirection says how one direction differs: its rate, its delay, else
// any other setting.
func diffDirection(say func(string, ...any), name string, a, b scenario.Direction) {
	switch {
	case a.Rate != b.Rate:
		say("%s: rate %v in the run, %v here", name, a.Rate, b.Rate)
	case a.Delay != b.Delay:
		say("%s: delay %v in the run, %v here", name, a.Delay, b.Delay)
	case !reflect.DeepEqual(a, b):
		say("%s: its settings (loss, queue, jitter, MTU, cross traffic, trace) differ", name)
	}
}
