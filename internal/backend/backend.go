// Package backend is the seam between wanlab's controllers and the hosts
// they measure. A Bed is a set of hosts that are up: their topology, a way
// to each host's agent and to run a command there, and counters to sample
// while a step runs. The emulated test-bed (package testbed) is the first
// implementation; real hosts behind agents on the network are the next.
// Nothing above this seam knows how the hosts were made.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"time"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
)

// Bed is hosts that are up, as a controller uses them.
type Bed interface {
	// Topology is the hosts, link directions and paths: as built on the
	// emulated backend, as expected on real hosts.
	Topology() *topology.Topology
	// Dial connects to a host's agent.
	Dial(ctx context.Context, host string) (*agent.Client, error)
	// Command prepares argv to run in a host, for the real tools that
	// cross-check wanlab (ping, iperf3).
	Command(ctx context.Context, host string, argv ...string) *exec.Cmd
	// Counters reads the bed's cumulative counters now.
	Counters() (Counters, error)
	// Close lets the bed go: one the caller brought up is taken down.
	Close() error
}

// Counters are a bed's cumulative counters at one moment, which a sampler
// turns into rates between two readings. What a bed cannot read is absent.
type Counters struct {
	At time.Time
	// HostCPU is the CPU time each host has used.
	HostCPU map[string]time.Duration
	// HostDisk is what each host has read from and written to its disk.
	HostDisk map[string]DiskBytes
	// DiskAtSubmission says disk bytes are counted as I/O is submitted
	// (cgroup v1), before a host's disk cap lets it through.
	DiskAtSubmission bool
	// Links are the link directions' counters, in topology order.
	Links []LinkCounters
	// Engine is the packet engine's; nil where none carries the packets.
	Engine *EngineCounters
	// HostRcvbufErrors are the datagrams the hosts' UDP sockets refused
	// because their receive buffers were full, in all hosts: lost in a
	// host, not on the path.
	HostRcvbufErrors uint64
	// MachineBusy and MachineTotal are the CPU seconds of the machine the
	// bed runs on, over all cores: busy, and in all.
	MachineBusy, MachineTotal float64
}

// DiskBytes are bytes read and written.
type DiskBytes struct{ Read, Written int64 }

// LinkCounters are what a link direction carried and dropped.
type LinkCounters struct {
	Name string
	// Bytes and Packets include the cross traffic the engine made on it.
	Bytes, Packets uint64
	// Drops are the link model's: by its queue and its loss.
	Drops uint64
}

// EngineCounters are a packet engine's own.
type EngineCounters struct {
	CPUSeconds float64
	// OutsideModel counts packets dropped where the link model did not
	// decide it (the engine's pool, a refused write).
	OutsideModel uint64
	// LatenessP99us is how late the engine released packets, since it started.
	LatenessP99us float64
	Realtime      bool // the engine got realtime scheduling
	CPUsAwake     bool // it holds CPUs out of deep idle states
}

// Signs are what tells whether the test-bed itself, not the scenario,
// limited what was measured. A figure below 0 is not known.
type Signs struct {
	MachineBusyPct float64 // the machine's CPUs, over all cores
	EngineCPUPct   float64 // the engine, % of one core
	OutsideModel   uint64  // packets dropped outside the link model
	HostRcvbuf     uint64  // datagrams the receiving hosts' full sockets refused
	LatenessP99us  float64 // the engine's release lateness
	NoRealtime     bool    // the engine runs without realtime scheduling
	CPUsMaySleep   bool    // CPUs may sleep deeply between packets
}

// Limits past which a result says more about the test-bed than the scenario.
const (
	// MachineBusyLimit is the machine's CPU use, over all cores, past which
	// the engine competes with the hosts for CPU.
	MachineBusyLimit = 95.0
	// EngineCPULimit is the engine's CPU use in % of one core past which
	// its packet thread is saturated (it also has a writer thread).
	EngineCPULimit = 160.0
	// LatenessLimitUs is the p99 release lateness past which delays and
	// rates drift from the model.
	LatenessLimitUs = 1000.0
)

// Limits is the one rule of "limited by the test-bed": each sign past its
// limit, in words; none when the test-bed held.
func (s Signs) Limits() []string { return s.past(1) }

// StrainShare is the share of a limit from which a sign explains a result
// that falls well short of what its path allows: the test-bed, close to
// its limits, is then the likelier cause than the path.
const StrainShare = 0.8

// Strained lists the load signs (CPU, lateness) past StrainShare of their
// limits, in words.
func (s Signs) Strained() []string {
	return Signs{MachineBusyPct: s.MachineBusyPct, EngineCPUPct: s.EngineCPUPct, LatenessP99us: s.LatenessP99us}.past(StrainShare)
}

func (s Signs) past(share float64) []string {
	var why []string
	if s.MachineBusyPct >= share*MachineBusyLimit {
		why = append(why, fmt.Sprintf("the machine's CPUs were %.0f%% busy (%d cores)", s.MachineBusyPct, runtime.NumCPU()))
	}
	if s.EngineCPUPct >= share*EngineCPULimit {
		why = append(why, fmt.Sprintf("the packet engine used %.0f%% of a core", s.EngineCPUPct))
	}
	if s.OutsideModel > 0 {
		why = append(why, fmt.Sprintf("%d packets were dropped outside the link model", s.OutsideModel))
	}
	if s.HostRcvbuf > 0 {
		why = append(why, fmt.Sprintf("%d datagrams were dropped by receiving hosts' full socket buffers (UDP RcvbufErrors): lost in the hosts, not on the path", s.HostRcvbuf))
	}
	if s.LatenessP99us > share*LatenessLimitUs {
		why = append(why, fmt.Sprintf("the engine released 1%% of packets more than %.1f ms late (the machine's CPUs were saturated?)", s.LatenessP99us/1000))
	}
	if s.NoRealtime {
		why = append(why, "the engine runs without realtime scheduling")
	}
	if s.CPUsMaySleep {
		why = append(why, "CPUs may sleep deeply between packets (PM QoS not held)")
	}
	return why
}

// LinkChange is a change made to a bed's links while it ran (wanlab
// testbed set): an injected event that explains what follows it.
type LinkChange struct {
	T time.Time `json:"t"`
	// What is the change as asked: the selector and its settings.
	What string `json:"what"`
	// Dirs are the link directions it changed.
	Dirs []string `json:"directions"`
	// Due is when a timed change was to take effect (T is when it did);
	// zero for a change made at once.
	Due time.Time `json:"due,omitzero"`
}

// Capturer is a bed that can capture its links where they are emulated:
// Capture writes a pcapng capture of the directions selector names into w
// until ctx is done (then the file ends cleanly) or count packets, and
// returns how many packets it wrote, how many of them the link model
// dropped, and how many it missed.
type Capturer interface {
	Capture(ctx context.Context, selector string, snaplen, count int, w io.Writer) (packets, dropped, missed int, err error)
}

// Timeline is a bed whose links follow a scenario's timeline: Schedule
// starts one under a tag, its times counted from start; EndTimeline
// cancels what has not happened yet and puts the directions it changed
// back as they were before it began.
type Timeline interface {
	Schedule(tag string, start time.Time, changes []scenario.TimedChange) error
	EndTimeline(tag string) error
}

// HostFiles is a bed whose hosts' data directories are on this machine:
// the folder each host's programs run in.
type HostFiles interface {
	DataDir(host string) (string, error)
}

// ChangeLog is a bed that records its links' changes; Changes lists those
// after a time, oldest first.
type ChangeLog interface {
	Changes(after time.Time) ([]LinkChange, error)
}

// MachineNotes is a bed that needed machine-wide settings for its life
// (socket buffer limits, congestion controls); MachineNotes says, a line
// each, what it found and what it changed, for the run's record.
type MachineNotes interface {
	MachineNotes() []string
}

// ErrOffline is what an offline bed's hosts answer.
var ErrOffline = errors.New("no agent: the hosts are read from an archive, not measured")

// Offline is a bed whose hosts are not there to measure: what reads an
// archive (wanlab ui) sees the hosts' names and measures nothing.
func Offline(t *topology.Topology) Bed { return offline{t} }

type offline struct{ topo *topology.Topology }

func (b offline) Topology() *topology.Topology { return b.topo }

func (b offline) Dial(ctx context.Context, host string) (*agent.Client, error) {
	return nil, fmt.Errorf("%s: %w", host, ErrOffline)
}

// Command runs false: there is no host to run anything in.
func (b offline) Command(ctx context.Context, host string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "false")
}

func (b offline) Counters() (Counters, error) { return Counters{}, ErrOffline }
func (b offline) Close() error                { return nil }
