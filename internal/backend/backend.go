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
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
)

// Bed is hosts that are up, as a controller uses them.
type Bed interface {
	// Topology is the hosts, link directions and paths: as built on the
	// emulated backend, as expected on real hosts.
	Topology() *topology.Topology
	// Dial connects to a host's agent.
	Dial(ctx context.Context, host string) (*agentapi.Client, error)
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
// the folder each host's programs run in, and what a workload of the
// user's own programs needs there (the command kind: its methods are
// kind.Files'), so that the controller need not know the backend.
type HostFiles interface {
	// DataDir is a host's data directory.
	DataDir(host string) (string, error)
	// MakeFile makes a file in a host's data directory, never through a
	// link: text when size is 0, else size bytes of generated data,
	// dropped from the page cache so that the first read comes from disk.
	MakeFile(ctx context.Context, host, name string, size int64, text string) error
	// Listening says whether process pid, in host, has a TCP socket
	// listening on port (in the host's network namespace).
	Listening(host string, pid, port int) (bool, error)
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

// ErrFamily means a host has no test address of the address family a
// test asks for (IPv4 or IPv6), or two hosts have none in common.
var ErrFamily = errors.New("no test address of the family asked for")

// FamilyErrorf is an ErrFamily in words of its own, naming the host.
func FamilyErrorf(format string, args ...any) error {
	return familyError(fmt.Sprintf(format, args...))
}

type familyError string

func (e familyError) Error() string        { return string(e) }
func (e familyError) Is(target error) bool { return target == ErrFamily }

// ErrOffline is what an offline bed's hosts answer.
var ErrOffline = errors.New("no agent: the hosts are read from an archive, not measured")

// Offline is a bed whose hosts are not there to measure: what reads an
// archive (wanlab ui) sees the hosts' names and measures nothing.
func Offline(t *topology.Topology) Bed { return offline{t} }

type offline struct{ topo *topology.Topology }

func (b offline) Topology() *topology.Topology { return b.topo }

func (b offline) Dial(ctx context.Context, host string) (*agentapi.Client, error) {
	return nil, fmt.Errorf("%s: %w", host, ErrOffline)
}

// Command runs false: there is no host to run anything in.
func (b offline) Command(ctx context.Context, host string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "false")
}

func (b offline) Counters() (Counters, error) { return Counters{}, ErrOffline }
func (b offline) Close() error                { return nil }
