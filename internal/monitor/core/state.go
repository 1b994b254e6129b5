package core

import (
	"errors"
	"time"
)

// Snapshot is the monitoring service's state at one moment, as its HTTP
// layer and dashboard show it.
type Snapshot struct {
	Now     time.Time `json:"now"`
	Started time.Time `json:"started"`
	Config  string    `json:"config"`
	Testbed string    `json:"testbed"`
	// Configured are the configuration's tests, in its order.
	Configured []string            `json:"configured_tests"`
	Paths      []PathView          `json:"paths"`
	Down       map[string]HostDown `json:"hosts_down"`
	Alerts     []Alert             `json:"alerts"`
	Tests      map[string]int64    `json:"tests"`
	Late       int64               `json:"late"`
	Running    int                 `json:"running"`
	Queued     int                 `json:"queue_depth"`
	Archive    Health              `json:"archive"`
	Events     []Event             `json:"events"`
	// Shares are the shares of the mesh this process measures;
	// Members is how many processes share the archive.
	Owner   string `json:"owner"`
	Shares  []int  `json:"shares"`
	Members int    `json:"members"`
}

// Elsewhere is the state of a path another process measures.
const Elsewhere = "elsewhere"

// PathView is one path's state as shown: values only while fresh.
type PathView struct {
	Src    string             `json:"src"`
	Dst    string             `json:"dst"`
	Test   string             `json:"test"`
	Type   string             `json:"type"`
	State  string             `json:"state"` // ok, alert, no data
	Reason string             `json:"reason,omitempty"`
	At     time.Time          `json:"at,omitzero"`
	Age    float64            `json:"age_seconds,omitempty"`
	Values map[string]float64 `json:"values,omitempty"`
	Hops   []string           `json:"hops,omitempty"`
	// Family is the address family of the path's run, where its test runs
	// once per family (PerFamily: its series and alerts are that family's,
	// as /api/v1/paths/{src}/{dst}/series?family= reads them); else that
	// of the latest result's traffic: "ipv4" or "ipv6" (absent when
	// unknown). /metrics labels the path's series with it.
	Family    string `json:"family,omitempty"`
	PerFamily bool   `json:"per_family,omitempty"`
	// Note is what to know of a fresh path's figures: why its one-way
	// delay windows restarted (a clock step), for a window's span.
	Note string `json:"note,omitempty"`
	// Target is the kind of far end dst is when it runs no agent (a
	// target: iperf3, stamp or ping); absent for a host.
	Target string `json:"target,omitempty"`
}

// Event is something the service noticed.
type Event struct {
	T       time.Time `json:"t"`
	Message string    `json:"message"`
	// Audit marks what callers of the service did (sign-ins, state
	// changes, refused requests): shown to identities only.
	Audit bool `json:"audit,omitempty"`
}

// HostDown is a host whose agent does not answer.
type HostDown struct {
	Since   time.Time     `json:"since"`
	Until   time.Time     `json:"retry_at"`
	Backoff time.Duration `json:"-"`
	Reason  string        `json:"reason"`
}

// Health is the state of the service's store: whether results go straight
// to the archive, and what waits in its local buffer.
type Health struct {
	Connected     bool    `json:"connected"`
	BufferedBytes int64   `json:"buffered_bytes"`
	LagSeconds    float64 `json:"lag_seconds"`
	Dropped       int64   `json:"dropped_records"`
	LastError     string  `json:"last_error,omitempty"`
	BufferMax     int64   `json:"buffer_max_bytes"`
}

// IfaceState is the latest rate of one monitored interface.
type IfaceState struct {
	// Source is how it is read: "snmp" (a router or switch) or "agent" (a
	// monitored host's own interface, through its agent).
	Source    string    `json:"source"`
	Device    string    `json:"device"`
	Interface string    `json:"interface"`
	At        time.Time `json:"at"`
	InBPS     float64   `json:"in_bits_per_second"`
	OutBPS    float64   `json:"out_bits_per_second"`
	SpeedBPS  float64   `json:"speed_bits_per_second,omitempty"`
}

// InUse and OutUse are the shares of the interface's speed in use (0 unknown).
func (s IfaceState) InUse() float64  { return ratio(s.InBPS, s.SpeedBPS) }
func (s IfaceState) OutUse() float64 { return ratio(s.OutBPS, s.SpeedBPS) }

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// Why a run on demand is refused, besides a full queue (errors.Is).
var (
	// ErrNotConfigured: the pair has no throughput-class test of that name.
	ErrNotConfigured = errors.New("no such throughput-class test of the pair")
	// ErrElsewhere: another process sharing the archive measures the pair.
	ErrElsewhere = errors.New("the pair is measured by another process")
)
