package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/results"
	"github.com/wanlab/wanlab/internal/testbed"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/units"
)

// The JSON views below are documented in docs/cli-json.md; keep them in step.

type planView struct {
	Name    string            `json:"name"`
	Hosts   []hostView        `json:"hosts"`
	Routers []topology.Router `json:"routers,omitempty"`
	// Routing is how pairs are routed over the routers ("delay", "hops").
	Routing string          `json:"routing,omitempty"`
	Links   []dirView       `json:"links"`
	Paths   []topology.Path `json:"paths"`
	// Unreachable are the ordered pairs of hosts with no path.
	Unreachable []topology.Unreachable `json:"unreachable,omitempty"`
}

type hostView struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	// Addr6 is the host's IPv6 address on a test-bed whose hosts have IPv6.
	Addr6  string  `json:"addr6,omitempty"`
	Netns  string  `json:"netns"`
	Cgroup string  `json:"cgroup"`
	CPUs   float64 `json:"cpus"` // 0: no quota
	Site   string  `json:"site,omitempty"`
	MTU    int     `json:"mtu"`
	// Disk caps in bytes per second (0: none) and the data directory.
	DiskReadBps  int64  `json:"disk_read_bps"`
	DiskWriteBps int64  `json:"disk_write_bps"`
	DataDir      string `json:"data_dir,omitempty"`
}

type dirView struct {
	Name string `json:"name"`
	// From and To are the nodes it joins (a host, a router, "site x",
	// "core"); Entry the address of the router that forwards into it.
	From         string  `json:"from,omitempty"`
	To           string  `json:"to,omitempty"`
	Entry        string  `json:"entry,omitempty"`
	RateBPS      float64 `json:"rate_bps"` // 0: unlimited
	DelayMS      float64 `json:"delay_ms"`
	JitterMS     float64 `json:"jitter_ms"`
	LossPercent  float64 `json:"loss_percent"` // long-run mean of the loss model
	LossModel    string  `json:"loss_model"`   // none, bernoulli or gilbert-elliott
	QueuePackets int     `json:"queue_packets,omitempty"`
	QueueBytes   int64   `json:"queue_bytes,omitempty"`
	MTU          int     `json:"mtu"`
	Reorder      bool    `json:"reorder"`
	// What else the direction does (paths that change, docs/scenario.md).
	Down      bool     `json:"down,omitempty"`
	Blackhole bool     `json:"blackhole,omitempty"`
	Hops      []string `json:"hops,omitempty"`  // NAME@ADDR or ADDR
	Cross     string   `json:"cross,omitempty"` // e.g. "6Mbit poisson"
	Trace     []string `json:"trace,omitempty"` // the files it follows
	// Paths are the paths that cross it ("a -> b"), in path order.
	Paths []string `json:"paths,omitempty"`
	// Counters are live, in status only.
	Counters *linkemu.DirSnapshot `json:"counters,omitempty"`
}

type statusView struct {
	planView
	PID      int       `json:"pid"`
	Alive    bool      `json:"alive"`
	Created  time.Time `json:"created"`
	Scenario string    `json:"scenario"`
	Cgroup   string    `json:"cgroup_version"`
	// Machine is what the test-bed needed of the machine and changed there.
	Machine *testbed.MachineState `json:"machine,omitempty"`
	// OtherDrops are drops the link model did not decide: they mean the
	// test-bed itself fell short, and should be zero.
	OtherDrops *otherDrops `json:"other_drops,omitempty"`
	Engine     *engineView `json:"engine,omitempty"`
	// TestbedLimits lists why results may have been limited by the test-bed
	// rather than the scenario; empty when there is no such sign.
	TestbedLimits []string              `json:"testbed_limits,omitempty"`
	TUN           []testbed.TUNCounters `json:"tun,omitempty"`
}

type otherDrops struct {
	TUNQueue   uint64 `json:"tun_queue"`
	TUNRx      uint64 `json:"tun_rx"`
	EnginePool uint64 `json:"engine_pool"`
	Write      uint64 `json:"write"`
	Unroutable uint64 `json:"unroutable"`
}

type engineView struct {
	// Realtime and CPUsAwake say whether the engine got SCHED_FIFO and the
	// PM QoS request it asked for; without them packets may be released later.
	Realtime      bool                    `json:"realtime"`
	CPUsAwake     bool                    `json:"cpus_awake"`
	CPUSeconds    float64                 `json:"cpu_seconds"`
	UptimeSeconds float64                 `json:"uptime_seconds"`
	InFlight      int64                   `json:"in_flight"`
	Lateness      linkemu.LatenessSummary `json:"lateness"`
	// LatenessHistogram is the counts behind Lateness: two snapshots give
	// the lateness of what was written between them.
	LatenessHistogram []linkemu.LatenessBucket `json:"lateness_histogram,omitempty"`
	// Coalescing and EngineLateness split Lateness: the wait of a wire
	// segment for the rest of its run or a shared wake-up, and the
	// engine's share after it.
	Coalescing     linkemu.LatenessSummary `json:"coalescing"`
	EngineLateness linkemu.LatenessSummary `json:"engine_lateness"`
	// WriteTime is how long each write into a host took, and WakeLateness
	// how late the engine's timer woke it.
	WriteTime    linkemu.LatenessSummary `json:"write_time"`
	WakeLateness linkemu.LatenessSummary `json:"wake_lateness"`
	Offloads     bool                    `json:"offloads"`
	Threads      int                     `json:"threads"`
	IO           linkemu.IOSnapshot      `json:"io"`
	Ports        []linkemu.PortSnapshot  `json:"ports"`
}

func newDirView(d topology.Direction) dirView {
	c := d.Config
	v := dirView{
		Name: d.Name, From: d.From, To: d.To, Entry: d.Entry, Paths: d.Paths,
		RateBPS: float64(c.Rate), MTU: c.MTU, Reorder: c.Reorder,
		DelayMS: ms(c.Delay), JitterMS: ms(c.Jitter),
		LossPercent: c.Loss.Mean() * 100, LossModel: "none",
		QueuePackets: c.Queue.Packets, QueueBytes: c.Queue.Bytes,
	}
	switch {
	case c.Loss.Gilbert != nil:
		v.LossModel = "gilbert-elliott"
	case c.Loss.Random > 0:
		v.LossModel = "bernoulli"
	}
	v.Down, v.Blackhole = c.Down, c.Blackhole
	for _, h := range c.Hops {
		v.Hops = append(v.Hops, h.String())
	}
	if x := c.Cross; x != nil {
		v.Cross = x.Rate.String() + " " + x.Pattern
	}
	if tr := c.Trace; tr != nil {
		for _, f := range []string{tr.RateFile, tr.MahimahiFile, tr.DelayFile} {
			if f != "" {
				v.Trace = append(v.Trace, f)
			}
		}
	}
	return v
}

// also is what else a direction does, in words, for the tables.
func (d dirView) also() string {
	var out []string
	if d.Down {
		out = append(out, "DOWN")
	}
	if d.Blackhole {
		out = append(out, "black hole above the MTU")
	}
	if len(d.Hops) > 0 {
		out = append(out, "routers "+strings.Join(d.Hops, " "))
	}
	if d.Cross != "" {
		out = append(out, "cross traffic "+d.Cross)
	}
	// A window wider than the fast links' says releases there may wait
	// that long to share a wake-up (engine.coalesce).
	if c := d.Counters; c != nil && c.CoalesceUS > float64(linkemu.DefaultCoalesce/time.Microsecond) {
		out = append(out, "coalesce "+trim(c.CoalesceUS)+"us")
	}
	if len(d.Trace) > 0 {
		out = append(out, "trace "+strings.Join(d.Trace, " "))
	}
	return strings.Join(out, "; ")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func newPlanView(t *topology.Topology) planView {
	return buildPlanView(testbed.Hosts(t), t)
}

// planViewOf is the view of a running test-bed: its paths are those in
// force (a reroute moves them).
func planViewOf(st *testbed.State) planView {
	return buildPlanView(st.Hosts, st.Topology())
}

func buildPlanView(hosts []testbed.Host, t *topology.Topology) planView {
	v := planView{Name: t.Name, Routers: t.Routers, Routing: t.Routing, Paths: t.Paths, Unreachable: t.Unreachable, Hosts: []hostView{}, Links: []dirView{}}
	if v.Paths == nil {
		v.Paths = []topology.Path{}
	}
	for _, h := range hosts {
		v.Hosts = append(v.Hosts, hostView{Name: h.Name, Addr: h.Addr, Addr6: h.Addr6, Netns: h.Netns, Cgroup: h.Cgroup, CPUs: h.CPUs, Site: h.Site, MTU: h.MTU,
			DiskReadBps: h.DiskReadBps, DiskWriteBps: h.DiskWriteBps, DataDir: h.DataDir})
	}
	for _, d := range t.Dirs {
		v.Links = append(v.Links, newDirView(d))
	}
	return v
}

func newStatusView(s *testbed.Status) statusView {
	v := statusView{
		planView: planViewOf(s.State), PID: s.PID, Alive: s.Alive,
		Created: s.Created, Scenario: s.Scenario, Cgroup: s.Cgroup, TUN: s.TUN, Machine: s.Machine,
	}
	if e := s.Engine; e != nil {
		for i := range v.Links {
			if i < len(e.Dirs) {
				v.Links[i].Counters = &e.Dirs[i]
			}
		}
		od := &otherDrops{EnginePool: e.PoolDrops}
		for _, p := range e.Ports {
			od.Write += p.WriteDrops
			od.Unroutable += p.Unroutable
		}
		for _, t := range s.TUN {
			od.TUNQueue += t.TxDropped
			od.TUNRx += t.RxDropped
		}
		v.OtherDrops = od
		v.TestbedLimits = testbedLimits(od, e)
		v.Engine = &engineView{Realtime: e.Realtime, CPUsAwake: e.CPUsAwake, CPUSeconds: e.CPUSeconds, UptimeSeconds: e.Uptime, InFlight: e.InFlight, Lateness: e.Lateness,
			LatenessHistogram: e.LatenessHistogram, Coalescing: e.Coalescing, EngineLateness: e.EngineLateness, WriteTime: e.WriteTime, WakeLateness: e.WakeLateness, Offloads: e.Offloads, Threads: e.Threads, IO: e.IO, Ports: e.Ports}
	}
	return v
}

// testbedLimits lists the signs that the test-bed, not the scenario, limited
// what was measured, as the engine's counters since it started tell them
// (the one rule of results.Signs).
func testbedLimits(d *otherDrops, e *linkemu.Stats) []string {
	return results.Signs{MachineBusyPct: -1, EngineCPUPct: -1, OutsideModel: d.TUNQueue + d.TUNRx + d.EnginePool + d.Write,
		LatenessP99us: e.Lateness.P99us, NoRealtime: !e.Realtime, CPUsMaySleep: !e.CPUsAwake}.Limits()
}

func printLimits(w io.Writer, limits []string) {
	for _, l := range limits {
		fmt.Fprintf(w, "WARNING: test-bed limit: %s\n", l)
	}
}

// report prints a measurement's result, as JSON or with print, and then
// returns the measurement's own error: a partial result is shown before the
// command fails.
func report[T any](w io.Writer, asJSON bool, res T, print func(io.Writer, T), err error) error {
	if asJSON {
		if jerr := writeJSON(w, res); jerr != nil {
			return jerr
		}
	} else {
		print(w, res)
	}
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "a->b", not "a-\u003eb"
	return enc.Encode(v)
}

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

func rateText(bps float64) string {
	if bps == 0 {
		return "unlimited"
	}
	return units.Rate(bps).String()
}

func queueText(d dirView) string {
	if d.QueuePackets > 0 {
		return fmt.Sprintf("%d pkts", d.QueuePackets)
	}
	return units.Size(d.QueueBytes).String()
}

func lossText(d dirView) string {
	s := units.FormatPercent(d.LossPercent / 100)
	if d.LossModel == "gilbert-elliott" {
		s += " (GE)"
	}
	return s
}

func cpusText(c float64) string {
	if c == 0 {
		return "-"
	}
	return fmt.Sprint(c)
}

// diskText prints a host's disk caps as "3/5 MB/s", "-" for none.
func diskText(read, write int64) string {
	if read == 0 && write == 0 {
		return "-"
	}
	side := func(v int64) string {
		if v == 0 {
			return "max"
		}
		return trim(float64(v) / 1e6)
	}
	return side(read) + "/" + side(write) + " MB/s"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// maxPathsShown bounds the path table: a large test-bed has a path per
// ordered pair of hosts.
const maxPathsShown = 200

// maxListed bounds the names a cell or a line of the text views lists
// (a router's links, the unreachable pairs); --json lists them all.
const maxListed = 12

// listText joins names, at most maxListed of them and then "and N more".
func listText(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(", and %d more", len(names)-maxListed)
}

// printPlan prints hosts, routers, link directions (with counters if
// present), paths and the pairs with none. A test-bed without routers
// prints as it did before routers: no router table, no PATHS column,
// VIA rather than NODES.
func printPlan(w io.Writer, v planView) {
	routed := len(v.Routers) > 0
	if len(v.Hosts) > 0 {
		t := table(w)
		fmt.Fprintln(t, "HOST\tADDRESS\tCPUS\tDISK R/W\tSITE\tMTU\tNETNS")
		for _, h := range v.Hosts {
			addr := h.Addr
			if h.Addr6 != "" && h.Addr6 != h.Addr {
				addr += " " + h.Addr6
			}
			fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", h.Name, addr, cpusText(h.CPUs), diskText(h.DiskReadBps, h.DiskWriteBps), orDash(h.Site), h.MTU, h.Netns)
		}
		t.Flush()
	}
	if routed {
		if len(v.Hosts) > 0 {
			fmt.Fprintln(w)
		}
		printRouters(w, v)
	}
	if len(v.Links) > 0 {
		if len(v.Hosts) > 0 || routed {
			fmt.Fprintln(w)
		}
		t := table(w)
		counters := len(v.Links) > 0 && v.Links[0].Counters != nil
		also := slices.ContainsFunc(v.Links, func(d dirView) bool { return d.also() != "" })
		head := "LINK DIRECTION\tRATE\tDELAY\tJITTER\tLOSS\tQUEUE\tMTU"
		if routed {
			head += "\tPATHS"
		}
		if counters {
			head += "\tPACKETS\tBYTES\tQUEUE DROPS\tLOSS DROPS"
		}
		if also {
			head += "\tALSO"
		}
		fmt.Fprintln(t, head)
		for _, d := range v.Links {
			fmt.Fprintf(t, "%s\t%s\t%sms\t%sms\t%s\t%s\t%d", d.Name, rateText(d.RateBPS), trim(d.DelayMS), trim(d.JitterMS), lossText(d), queueText(d), d.MTU)
			if routed {
				fmt.Fprintf(t, "\t%d", len(d.Paths))
			}
			if c := d.Counters; c != nil {
				fmt.Fprintf(t, "\t%d\t%s\t%d\t%d", c.Packets, units.Size(c.Bytes), c.QueueDrops, c.LossDrops)
			}
			if also {
				fmt.Fprintf(t, "\t%s", orDash(d.also()))
			}
			fmt.Fprintln(t)
		}
		t.Flush()
	}
	if len(v.Paths) > 0 {
		fmt.Fprintln(w)
		printPaths(w, v.Paths, routed)
	}
	// Without routers, pairs of hosts that share no link or site have
	// never been listed (--json lists them).
	if routed {
		if len(v.Hosts)+len(v.Links)+len(v.Paths) > 0 {
			fmt.Fprintln(w)
		}
		printUnreachable(w, v.Unreachable)
	}
}

// printRouters prints the router table: each router's address and the
// directions out of it.
func printRouters(w io.Writer, v planView) {
	t := table(w)
	fmt.Fprintln(t, "ROUTER\tADDRESS\tLINKS")
	for _, r := range v.Routers {
		fmt.Fprintf(t, "%s\t%s\t%s\n", r.Name, r.Addr, orDash(listText(r.Links)))
	}
	t.Flush()
}

// printPaths prints the path table: with routers, each path's bottleneck
// direction and its nodes (and "(explicit)" for a route the scenario
// gives); without, its directions as before routers.
func printPaths(w io.Writer, paths []topology.Path, routed bool) {
	t := table(w)
	last := "VIA"
	if routed {
		last = "NODES"
	}
	fmt.Fprintln(t, "PATH\tBOTTLENECK\tBASE RTT\tMTU\t"+last)
	for i, p := range paths {
		if i == maxPathsShown {
			t.Flush()
			fmt.Fprintf(w, "... and %d more paths (--json lists them all)\n", len(paths)-i)
			break
		}
		bottleneck := rateText(p.Bottleneck)
		var route string
		if routed {
			if p.BottleneckDir != "" {
				bottleneck += " (" + p.BottleneckDir + ")"
			}
			route = strings.Join(p.Nodes, ", ")
			if p.Route == topology.RouteExplicit {
				route += " (explicit)"
			}
		} else if route = strings.Join(p.Via, ", "); route == "" {
			route = "(direct)"
		}
		fmt.Fprintf(t, "%s -> %s\t%s\t%sms\t%d\t%s\n", p.From, p.To, bottleneck, trim(p.BaseRTTms), p.MTU, route)
	}
	t.Flush()
}

// printUnreachable says which ordered pairs of hosts have no path.
func printUnreachable(w io.Writer, pairs []topology.Unreachable) {
	if len(pairs) == 0 {
		fmt.Fprintln(w, "unreachable: none")
		return
	}
	names := make([]string, 0, min(len(pairs), maxListed+1))
	for _, u := range pairs[:min(len(pairs), maxListed)] {
		names = append(names, u.From+" -> "+u.To)
	}
	text := strings.Join(names, ", ")
	if len(pairs) > maxListed {
		text += fmt.Sprintf(", and %d more", len(pairs)-maxListed)
	}
	fmt.Fprintf(w, "unreachable: %s (no path: these hosts cannot reach each other)\n", text)
}

func trim(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}

func printStatus(w io.Writer, v statusView) {
	state := "up"
	if !v.Alive {
		state = "DEAD (engine gone; clean up with: wanlab testbed down " + v.Name + ")"
	}
	fmt.Fprintf(w, "test-bed %s: %s, engine pid %d, created %s, cgroup %s\n", v.Name, state, v.PID, v.Created.Local().Format(time.DateTime), v.Cgroup)
	if v.Scenario != "" {
		fmt.Fprintf(w, "scenario: %s\n", v.Scenario)
	}
	for _, line := range v.Machine.Lines() {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	printPlan(w, v.planView)
	if e := v.Engine; e != nil {
		d := v.OtherDrops
		fmt.Fprintf(w, "\ndrops outside the link model: TUN queues %d, TUN receive %d, engine pool %d, write %d; unroutable packets %d\n",
			d.TUNQueue, d.TUNRx, d.EnginePool, d.Write, d.Unroutable)
		fmt.Fprintf(w, "engine: up %s, CPU %.2fs (%.1f%% of one core), %d packets in flight, offloads %s, threads %d\n",
			(time.Duration(e.UptimeSeconds) * time.Second).String(), e.CPUSeconds, 100*e.CPUSeconds/max(e.UptimeSeconds, 1e-9), e.InFlight, onOff(e.Offloads), e.Threads)
		fmt.Fprintf(w, "lateness of %d wire segments at write completion: p50 %sus p99 %sus p99.9 %sus max %sus (coalescing p99 %sus, engine p99 %sus)\n",
			e.Lateness.Count, trim(e.Lateness.P50us), trim(e.Lateness.P99us), trim(e.Lateness.P999us), trim(e.Lateness.Maxus),
			trim(e.Coalescing.P99us), trim(e.EngineLateness.P99us))
		if io := e.IO; io.Reads > 0 && io.Writes > 0 {
			fmt.Fprintf(w, "engine I/O: %d reads (%.0f bytes each), %d writes (%.0f bytes each, taking p50 %sus p99 %sus max %sus)\n",
				io.Reads, float64(io.ReadBytes)/float64(io.Reads), io.Writes, float64(io.WriteBytes)/float64(io.Writes),
				trim(e.WriteTime.P50us), trim(e.WriteTime.P99us), trim(e.WriteTime.Maxus))
		}
	}
	printLimits(w, v.TestbedLimits)
}

type listEntry struct {
	Name    string    `json:"name"`
	Alive   bool      `json:"alive"`
	PID     int       `json:"pid,omitempty"`
	Hosts   int       `json:"hosts"`
	Created time.Time `json:"created,omitzero"`
}

func listTestbeds() []listEntry {
	list := []listEntry{}
	for _, name := range testbed.Names() {
		e := listEntry{Name: name}
		if st, err := testbed.ReadState(name); err == nil {
			e.PID, e.Hosts, e.Created = st.PID, len(st.Hosts), st.Created
		}
		e.Alive = testbed.Alive(name)
		list = append(list, e)
	}
	return list
}

func printList(w io.Writer, list []listEntry) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no test-bed is up")
		return
	}
	t := table(w)
	fmt.Fprintln(t, "NAME\tSTATE\tHOSTS\tPID\tCREATED")
	for _, e := range list {
		state := "up"
		if !e.Alive {
			state = "dead (wanlab testbed down " + e.Name + ")"
		}
		created := "-"
		if !e.Created.IsZero() {
			created = e.Created.Local().Format(time.DateTime)
		}
		fmt.Fprintf(t, "%s\t%s\t%d\t%d\t%s\n", e.Name, state, e.Hosts, e.PID, created)
	}
	t.Flush()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
