package results

import (
	"maps"
	"slices"
	"strings"
)

// Figure is the name of a step figure, typed. Its String is the one
// encoder of the names a step's Metrics are keyed by, ParseFigure the one
// decoder; every other helper of this package (Family.Of, Leg, Phase,
// Role, JobsEnded, ...) builds or reads a Figure.
//
// A figure is either a plain Name (throughput_mbps, the rtt_p50_ms of an
// impact phase, the jobs counted by Status) or a Family's figure about a
// Subject (cpu_pct.HOST) or a Role's hosts (server_cpu_pct), and may be of
// one Leg of a transfer or one Phase of an impact test:
//
//	[LEG_][PHASE_][ROLE_]FAMILY[.SUBJECT]  or  [LEG_][PHASE_]NAME[_STATUS]
type Figure struct {
	// Name is a plain figure's name (ThroughputMbps, ...); empty with a Family.
	Name string
	// Family is the kind of figure about a Subject or a Role's hosts.
	Family Family
	// Subject is what a Family's figure is about: a host, a link direction,
	// Engine or Machine. Empty for a Role's figure.
	Subject string
	// Leg is There or Back: a figure of one leg of a transfer.
	Leg string
	// Phase is Idle, Loaded or After: a figure of one phase of an impact test.
	Phase string
	// Role is a workload's role (Roles): the mean of a Family's figures
	// over the role's hosts.
	Role string
	// Status, with the Name Jobs, counts the jobs that ended with it
	// (JobStatuses): jobs_ok, jobs_timeout, ...
	Status string
}

// Named is the plain figure called name, such as ThroughputMbps.
func Named(name string) Figure { return Figure{Name: name} }

// About is the family's figure about subject: a host, a link direction,
// Engine or Machine.
func (f Family) About(subject string) Figure { return Figure{Family: f, Subject: subject} }

// OfRole is the family's figure over the hosts of a workload's role.
func (f Family) OfRole(role string) Figure { return Figure{Family: f, Role: role} }

// JobsWith is the count of a step's jobs that ended with status.
func JobsWith(status string) Figure { return Figure{Name: Jobs, Status: status} }

// OnLeg is f of one leg of a transfer (There or Back).
func (f Figure) OnLeg(leg string) Figure { f.Leg = leg; return f }

// InPhase is f of one phase of an impact test (Idle, Loaded or After).
func (f Figure) InPhase(phase string) Figure { f.Phase = phase; return f }

// String is the figure's name as steps' Metrics are keyed by it, and as
// the archive and docs/run-json.md write it.
func (f Figure) String() string {
	var b strings.Builder
	for _, p := range []string{f.Leg, f.Phase, f.Role} {
		if p != "" {
			b.WriteString(p)
			b.WriteByte('_')
		}
	}
	if f.Family != "" {
		b.WriteString(string(f.Family))
		if f.Subject != "" {
			b.WriteByte('.')
			b.WriteString(f.Subject)
		}
	} else {
		b.WriteString(f.Name)
	}
	if f.Status != "" {
		b.WriteByte('_')
		b.WriteString(f.Status)
	}
	return b.String()
}

// The phases of an impact test.
const (
	Idle   = "idle"
	Loaded = "loaded"
	After  = "after"
)

// Names of figures that are only ever of a leg or a phase.
const (
	LegMbps          = "mbps"              // a transfer leg's file rate, Mbit/s
	CompressionRatio = "compression_ratio" // a transfer leg's data over what went on the wire
	RTTMaxMs         = "rtt_max_ms"        // an impact phase's highest round trip
)

// The vocabulary ParseFigure knows.
var (
	// Legs of a transfer.
	Legs = []string{There, Back}
	// Phases of an impact test.
	Phases = []string{Idle, Loaded, After}
	// Roles whose hosts' figures a step has as ROLE_FAMILY: the event
	// store's and the command workload's server and clients, the task
	// farm's master and workers, and a throughput test's sender and
	// receiver (SenderCPUPct, ReceiverCPUPct).
	Roles = []string{"server", "client", "master", "worker", "sender", "receiver"}
	// JobStatuses are the ends of a job that a step counts (jobs_STATUS).
	JobStatuses = []string{"ok", "timeout", "failed", "corrupt", "cancelled"}
	// Families of figures about a subject or a role.
	Families = []Family{CPUPct, CPUQuotaPct, DiskReadMBs, DiskWriteMBs, DiskReadPct, DiskWritePct, LinkMbps, LinkUtilizationPct, LinkDrops, LinkFullPct}
)

// names are the plain figures' names (SenderCPUPct and ReceiverCPUPct are
// roles' figures).
var names = map[string]bool{}

func init() {
	for _, n := range []string{
		ThroughputMbps, AggregateMbps, TaskRateHz, MessageRateHz, Streams, WindowBytes, Retransmits,
		HostRcvbufErrors, LostPercent, JitterMs, Jobs, AppLimitedPct, JobsPerClient, ServerPages,
		MeanWallclockS, MinWallclockS, MaxWallclockS, TCPRTTMeanMs, TCPRetransmits, Tasks, TasksDone,
		Workers, Seconds, ResultBytes, IdealSeconds, Efficiency, WorkerIdleShare, RoundtripP50Ms,
		RoundtripP99Ms, RoundtripMeanMs, Transfers, Bytes, Compress, ChecksumOK, RTTP50Ms, RTTP99Ms,
		RTTAvgMs, RTTInflationMs, LossIncreasePts, LoadMbps, TestsAlongside, LegMbps, CompressionRatio, RTTMaxMs,
	} {
		names[n] = true
	}
}

// ParseFigure reads a figure's name as String writes it. ok is false for
// a name it does not know (one a later wanlab wrote, say): the figure is
// then the plain Name s, which String gives back unchanged. A name that
// reads both as a leg's, phase's or role's figure and as a plain one
// (none does) is read as the former.
func ParseFigure(s string) (f Figure, ok bool) {
	if f, ok := parsePrefixed(s, Figure{}, 0); ok {
		return f, true
	}
	return Figure{Name: s}, false
}

// prefixes are the optional parts of a figure's name before the figure
// itself, in order: a leg, a phase, a role.
var prefixes = []struct {
	words []string
	field func(*Figure) *string
}{
	{Legs, func(f *Figure) *string { return &f.Leg }},
	{Phases, func(f *Figure) *string { return &f.Phase }},
	{Roles, func(f *Figure) *string { return &f.Role }},
}

// parsePrefixed reads s from the prefix level on, each prefix optional,
// then the figure itself; where a prefix leads nowhere, s is read without it.
func parsePrefixed(s string, f Figure, level int) (Figure, bool) {
	if level == len(prefixes) {
		return parseBody(s, f)
	}
	for _, p := range prefixes[level].words {
		if rest, ok := strings.CutPrefix(s, p+"_"); ok {
			g := f
			*prefixes[level].field(&g) = p
			if g, ok := parsePrefixed(rest, g, level+1); ok {
				return g, true
			}
		}
	}
	return parsePrefixed(s, f, level+1)
}

// parseBody reads what follows a figure's leg, phase and role.
func parseBody(s string, f Figure) (Figure, bool) {
	if f.Role != "" {
		if fam := Family(s); slices.Contains(Families, fam) {
			f.Family = fam
			return f, true
		}
		return f, false
	}
	if fam, subject, ok := strings.Cut(s, "."); ok && subject != "" && slices.Contains(Families, Family(fam)) {
		f.Family, f.Subject = Family(fam), subject
		return f, true
	}
	if status, ok := strings.CutPrefix(s, Jobs+"_"); ok && slices.Contains(JobStatuses, status) {
		f.Name, f.Status = Jobs, status
		return f, true
	}
	if names[s] {
		f.Name = s
		return f, true
	}
	return f, false
}

// Get returns the figure f of m, if m has it.
func (m Metrics) Get(f Figure) (float64, bool) {
	v, ok := m[f.String()]
	return v, ok
}

// Value is the figure f of m, 0 when m has none.
func (m Metrics) Value(f Figure) float64 { return m[f.String()] }

// Set sets the figure f of m to v.
func (m Metrics) Set(f Figure, v float64) { m[f.String()] = v }

// First returns the first of fs that m has.
func (m Metrics) First(fs ...Figure) (float64, bool) {
	for _, f := range fs {
		if v, ok := m.Get(f); ok {
			return v, true
		}
	}
	return 0, false
}

// Figures are the figures m has, in the order of their names; a name
// ParseFigure does not know is a plain Name.
func (m Metrics) Figures() []Figure {
	var out []Figure
	for _, name := range slices.Sorted(maps.Keys(m)) {
		f, _ := ParseFigure(name)
		out = append(out, f)
	}
	return out
}
