package results

import (
	"fmt"
	"strings"
	"time"
)

// Sample is one value of one metric about one subject at one time: what
// a step's samples and the archive's samples table hold.
type Sample struct {
	T       time.Time
	Metric  string
	Subject string
	Value   float64
	Unit    string
}

// Metrics of time-series samples, named after the GGF NMWG hierarchy of
// network characteristics where there is a name for it, and after what
// wanlab adds where there is none (docs/archive.md).
const (
	BandwidthAchievable = "bandwidth.achievable" // bit/s a test moved
	BandwidthUtilized   = "bandwidth.utilized"   // bit/s a link direction carried
	BandwidthCapacity   = "bandwidth.capacity"   // bit/s of a path's narrowest link, estimated
	BandwidthAvailable  = "bandwidth.available"  // bit/s a path has spare, estimated
	DelayRoundtrip      = "delay.roundtrip"      // s
	DelayOneway         = "delay.oneway"         // s
	LossRoundtrip       = "loss.roundtrip"       // ratio
	LossOneway          = "loss.oneway"          // ratio
	Jitter              = "jitter"               // s
	TCPCwnd             = "tcp.cwnd"             // bytes
	TCPRetransmitsTotal = "tcp.retransmits"      // segments, since the connection began
	TCPSsthresh         = "tcp.ssthresh"         // bytes
	TCPRTTVar           = "tcp.rttvar"           // s
	TCPPacingRate       = "tcp.pacing_rate"      // bit/s
	TCPDeliveryRate     = "tcp.delivery_rate"    // bit/s, the kernel's latest estimate
	// Shares (ratio) of a sender's time over an interval: with nothing to
	// send, and sending but held by the congestion window, the receiver's
	// window or the send buffer (web100's SndLim* times).
	TCPLimitedApp       = "tcp.limited.application"
	TCPLimitedCwnd      = "tcp.limited.cwnd"
	TCPLimitedRwnd      = "tcp.limited.rwnd"
	TCPLimitedSndbuf    = "tcp.limited.sndbuf"
	CPUUtilization      = "cpu.utilization" // % of one core (machine: of all cores)
	CPUQuotaUtilization = "cpu.quota_utilization"
	DiskRead            = "disk.read"    // B/s
	DiskWrite           = "disk.write"   // B/s
	LinkPackets         = "link.packets" // packets/s
	LinkDropped         = "link.drops"   // packets, by the queue and the loss model
)

// A sample's subject says what it is about: "host NAME", "link DIRECTION",
// a path "A->B", a stream of a path "A->B stream N", a watched connection
// "tcp HOST LOCAL->REMOTE", the "engine" or the "machine".
type Subject struct {
	Kind SubjectKind
	// Name is the host, the link direction or the path (A->B).
	Name string
	// Stream numbers a stream of a path, from 1; 0 for the path as a whole.
	Stream int
}

// SubjectKind says what a subject is.
type SubjectKind int

// The kinds of subject.
const (
	OfHost SubjectKind = iota + 1
	OfLink
	OfPath
	OfEngine
	OfMachine
	OfConn
)

// HostSubject is a sample about a host.
func HostSubject(host string) string { return "host " + host }

// ConnSubject is a sample about a TCP connection watched on a host, by its
// local and remote address:port.
func ConnSubject(host, local, remote string) string {
	return "tcp " + host + " " + local + "->" + remote
}

// LinkSubject is a sample about a link direction, such as a->b.
func LinkSubject(direction string) string { return "link " + direction }

// PathSubject is a sample about the path from one host to another.
func PathSubject(from, to string) string { return from + "->" + to }

// StreamSubject is a sample about stream n (from 1) of a test on a path.
func StreamSubject(from, to string, n int) string {
	return fmt.Sprintf("%s stream %d", PathSubject(from, to), n)
}

// ParseSubject reads a sample's subject; ok is false for one it does not know.
func ParseSubject(s string) (sub Subject, ok bool) {
	switch {
	case s == Engine:
		return Subject{Kind: OfEngine, Name: s}, true
	case s == Machine:
		return Subject{Kind: OfMachine, Name: s}, true
	}
	if h, ok := strings.CutPrefix(s, "host "); ok {
		return Subject{Kind: OfHost, Name: h}, true
	}
	if c, ok := strings.CutPrefix(s, "tcp "); ok && strings.Contains(c, " ") && strings.Contains(c, "->") {
		return Subject{Kind: OfConn, Name: c}, true
	}
	if d, ok := strings.CutPrefix(s, "link "); ok {
		return Subject{Kind: OfLink, Name: d}, true
	}
	if path, n, ok := strings.Cut(s, " stream "); ok {
		var id int
		if _, err := fmt.Sscanf(n, "%d", &id); err != nil || id < 1 || !strings.Contains(path, "->") {
			return Subject{}, false
		}
		return Subject{Kind: OfPath, Name: path, Stream: id}, true
	}
	if strings.Contains(s, "->") {
		return Subject{Kind: OfPath, Name: s}, true
	}
	return Subject{}, false
}

// BusiestLink is the link direction with the highest utilisation among a
// step's figures, and that utilisation (%); of equals, the first by name.
// "" when the step has none.
func BusiestLink(m Metrics) (direction string, util float64) {
	for _, d := range LinkUtilizationPct.Subjects(m) {
		if v := m.Value(LinkUtilizationPct.About(d)); direction == "" || v > util {
			direction, util = d, v
		}
	}
	return direction, util
}

// TimelineEnd ends what a test-bed records when a timeline ends and its
// links go back to what they were before it.
const TimelineEnd = "back to its settings before"

// EndsTimeline says whether a change to the links, as recorded, is the end
// of a timeline (the links put back), not a change of its own.
func EndsTimeline(what string) bool { return strings.HasSuffix(what, TimelineEnd) }

// LinkEventMessage is how a run's archive records a change to the links:
// what it was, then the directions it changed in brackets.
func LinkEventMessage(what string, dirs []string) string {
	return what + " [" + strings.Join(dirs, ", ") + "]"
}

// ParseLinkEvent reads what LinkEventMessage wrote (with anything after
// the brackets dropped).
func ParseLinkEvent(msg string) (what string, dirs []string) {
	i := strings.LastIndex(msg, " [")
	j := strings.LastIndex(msg, "]")
	if i < 0 || j < i {
		return msg, nil
	}
	for _, d := range strings.Split(msg[i+2:j], ", ") {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return msg[:i], dirs
}
