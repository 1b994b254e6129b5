package results

import (
	"maps"
	"math"
	"slices"
	"testing"
)

// TestParseFigure: names that read two ways at a glance read one way, and
// names this wanlab does not know stay what they were.
func TestParseFigure(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Figure
		ok   bool
	}{
		{"throughput_mbps", Figure{Name: ThroughputMbps}, true},
		{"cpu_pct.a", Figure{Family: CPUPct, Subject: "a"}, true},
		{"cpu_quota_pct.a", Figure{Family: CPUQuotaPct, Subject: "a"}, true},
		{"cpu_pct.db.example.org", Figure{Family: CPUPct, Subject: "db.example.org"}, true},
		{"cpu_pct.server", Figure{Family: CPUPct, Subject: "server"}, true},
		{"link_utilization_pct.a->b", Figure{Family: LinkUtilizationPct, Subject: "a->b"}, true},
		{"cpu_pct.engine", Figure{Family: CPUPct, Subject: Engine}, true},
		{"server_cpu_pct", Figure{Family: CPUPct, Role: "server"}, true},
		{"server_cpu_quota_pct", Figure{Family: CPUQuotaPct, Role: "server"}, true},
		{"sender_cpu_pct", Figure{Family: CPUPct, Role: "sender"}, true},
		{"there_sender_cpu_pct", Figure{Family: CPUPct, Role: "sender", Leg: There}, true},
		{"back_mbps", Figure{Name: LegMbps, Leg: Back}, true},
		{"there_seconds", Figure{Name: Seconds, Leg: There}, true},
		{"there_compression_ratio", Figure{Name: CompressionRatio, Leg: There}, true},
		{"idle_rtt_p50_ms", Figure{Name: RTTP50Ms, Phase: Idle}, true},
		{"loaded_rtt_max_ms", Figure{Name: RTTMaxMs, Phase: Loaded}, true},
		{"after_lost_percent", Figure{Name: LostPercent, Phase: After}, true},
		{"jobs", Figure{Name: Jobs}, true},
		{"jobs_ok", Figure{Name: Jobs, Status: "ok"}, true},
		{"jobs_cancelled", Figure{Name: Jobs, Status: "cancelled"}, true},
		// A role, a status or a phase at the start of a plain name.
		{"worker_idle_share", Figure{Name: WorkerIdleShare}, true},
		{"worker_cpu_pct", Figure{Family: CPUPct, Role: "worker"}, true},
		{"workers", Figure{Name: Workers}, true},
		{"server_pages", Figure{Name: ServerPages}, true},
		{"jobs_per_client", Figure{Name: JobsPerClient}, true},
		{"rtt_inflation_ms", Figure{Name: RTTInflationMs}, true},
		{"tcp_rtt_mean_ms", Figure{Name: TCPRTTMeanMs}, true},
		{"tcp_application_limited_pct", Figure{Name: AppLimitedPct}, true},
		// Not known: the plain name, unchanged.
		{"back_pressure", Figure{Name: "back_pressure"}, false},
		{"jobs_lost", Figure{Name: "jobs_lost"}, false},
		{"cpu_pct", Figure{Name: "cpu_pct"}, false},
		{"cpu_pct.", Figure{Name: "cpu_pct."}, false},
		{"server_cpu_pct.a", Figure{Name: "server_cpu_pct.a"}, false},
		{"node_cpu_pct", Figure{Name: "node_cpu_pct"}, false},
		{"", Figure{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseFigure(tc.name)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseFigure(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
			}
			if s := got.String(); s != tc.name {
				t.Errorf("%+v.String() = %q, want %q", got, s, tc.name)
			}
		})
	}
}

// TestFigureRoundTrip: every figure of the vocabulary encodes to a name
// that decodes to it, so no two figures share a name.
func TestFigureRoundTrip(t *testing.T) {
	var bodies []Figure
	for n := range names {
		bodies = append(bodies, Figure{Name: n})
	}
	for _, st := range JobStatuses {
		bodies = append(bodies, JobsWith(st))
	}
	for _, fam := range Families {
		for _, r := range Roles {
			bodies = append(bodies, fam.OfRole(r))
		}
		for _, sub := range []string{"a", "server", "worker_1", "db.example.org", "a->b", Engine, Machine} {
			bodies = append(bodies, fam.About(sub))
		}
	}
	seen := map[string]Figure{}
	for _, b := range bodies {
		for _, leg := range append([]string{""}, Legs...) {
			for _, phase := range append([]string{""}, Phases...) {
				f := b.OnLeg(leg).InPhase(phase)
				name := f.String()
				if other, dup := seen[name]; dup {
					t.Errorf("%+v and %+v are both %q", f, other, name)
				}
				seen[name] = f
				if got, ok := ParseFigure(name); !ok || got != f {
					t.Errorf("ParseFigure(%q) = %+v, %v; want %+v", name, got, ok, f)
				}
			}
		}
	}
}

// TestHelpersWrapFigure: the helpers that name figures by string write
// what they always wrote.
func TestHelpersWrapFigure(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{CPUPct.Of("a"), "cpu_pct.a"},
		{LinkUtilizationPct.Of("a->b"), "link_utilization_pct.a->b"},
		{JobsEnded("timeout"), "jobs_timeout"},
		{Leg(There, "mbps"), "there_mbps"},
		{Leg(Back, SenderCPUPct), "back_sender_cpu_pct"},
		{Leg(There, "compression_ratio"), "there_compression_ratio"},
		{Phase("idle", RTTP50Ms), "idle_rtt_p50_ms"},
		{Phase("loaded", "rtt_max_ms"), "loaded_rtt_max_ms"},
		{Role("server", CPUQuotaPct), "server_cpu_quota_pct"},
		{Role("sender", CPUPct), SenderCPUPct},
		{Role("receiver", CPUPct), ReceiverCPUPct},
		{RoleCPU("client"), "client_cpu_quota_pct|client_cpu_pct"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	m := Metrics{"cpu_pct.b": 2, "cpu_pct.a": 1, "cpu_quota_pct.a": 50, "server_cpu_pct": 1, "there_cpu_pct.c": 3, "client_cpu_pct": 4}
	if got := CPUPct.Subjects(m); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("CPUPct.Subjects = %v, want [a b]", got)
	}
	if v, ok := CPUQuotaPct.In(m, "a"); !ok || v != 50 {
		t.Errorf("CPUQuotaPct.In(a) = %v, %v", v, ok)
	}
	if v := Lookup(m, RoleCPU("client")); v != 4 {
		t.Errorf("Lookup(client CPU) = %v, want 4 (of one core: no share of quota)", v)
	}
	if v := Lookup(m, RoleCPU("worker")); !math.IsNaN(v) {
		t.Errorf("Lookup(worker CPU) = %v, want NaN", v)
	}
}

// TestMetricsFigures: Get, Set, First and Figures read and write by
// figure what a step's Metrics keep by name.
func TestMetricsFigures(t *testing.T) {
	m := Metrics{}
	m.Set(CPUPct.About("a"), 12)
	m.Set(JobsWith("ok"), 3)
	m.Set(Named(LegMbps).OnLeg(Back), 9)
	m["someday_figure"] = 1
	if want := (Metrics{"cpu_pct.a": 12, "jobs_ok": 3, "back_mbps": 9, "someday_figure": 1}); !maps.Equal(m, want) {
		t.Errorf("Set wrote %v, want %v", m, want)
	}
	if v, ok := m.Get(CPUPct.About("a")); !ok || v != 12 {
		t.Errorf("Get(cpu_pct.a) = %v, %v", v, ok)
	}
	if _, ok := m.Get(CPUPct.About("b")); ok {
		t.Error("Get(cpu_pct.b) found a figure m lacks")
	}
	if v, ok := m.First(RoleCPUFigures("server")...); ok {
		t.Errorf("First(server CPU) = %v of nothing", v)
	}
	if v, _ := m.First(Named(LegMbps).OnLeg(There), Named(LegMbps).OnLeg(Back)); v != 9 {
		t.Errorf("First(there, back) = %v, want 9", v)
	}
	want := []Figure{Named(LegMbps).OnLeg(Back), CPUPct.About("a"), JobsWith("ok"), Named("someday_figure")}
	if got := m.Figures(); !slices.Equal(got, want) {
		t.Errorf("Figures() = %+v, want %+v", got, want)
	}
}
