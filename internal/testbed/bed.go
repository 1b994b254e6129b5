package testbed

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/wanlab/wanlab/internal/agent/agentapi"
	"github.com/wanlab/wanlab/internal/backend"
	"github.com/wanlab/wanlab/internal/cgroup"
	"github.com/wanlab/wanlab/internal/proc"
	"github.com/wanlab/wanlab/internal/topology"
)

// Bed is a running emulated test-bed, as controllers use it (backend.Bed).
type Bed struct {
	// Cleaned are the test-beds whose leftovers Start removed first.
	Cleaned []string
	state   *State
	topo    *topology.Topology
	owned   bool // Close takes it down
	stats   *StatsReader
	cg      *cgroup.Manager
	exe     string
}

var _ backend.Bed = (*Bed)(nil)
var _ backend.ChangeLog = (*Bed)(nil)
var _ backend.MachineNotes = (*Bed)(nil)

// MachineNotes says what the test-bed needed of the machine and changed.
func (b *Bed) MachineNotes() []string { return b.state.Machine.Lines() }

// Changes lists the links' changes after a time, from the test-bed's
// state (the engine's daemon records each wanlab testbed set).
func (b *Bed) Changes(after time.Time) ([]backend.LinkChange, error) {
	// The daemon records what the engine made every 50 ms; have it record
	// what is due by now first. A daemon that is gone recorded what it made.
	if daemonPID(b.state.Name) != 0 {
		if err := engineRequest(b.state.Name, "/changes/flush", struct{}{}, nil); err != nil {
			return nil, err
		}
	}
	st, err := ReadState(b.state.Name)
	if err != nil {
		return nil, err
	}
	var out []backend.LinkChange
	for _, c := range st.Changes {
		if c.T.After(after) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Attach reaches test-bed name, which is up; Close leaves it up.
func Attach(name string) (*Bed, error) {
	if err := CheckEnvironment(); err != nil {
		return nil, err
	}
	st, err := ReadState(name)
	if err != nil {
		return nil, err
	}
	if !Alive(name) {
		return nil, fmt.Errorf("test-bed %q is not running (its engine is gone); clean it up with: wanlab testbed down %s", name, name)
	}
	return newBed(st, false)
}

// Start brings up the test-bed of a scenario for this process (see UpFor:
// killed, this process takes it with it); Close takes it down.
func Start(ctx context.Context, source string, text []byte, progress Progress) (*Bed, error) {
	up, err := UpFor(ctx, source, text, os.Getpid(), progress)
	if err != nil {
		return nil, err
	}
	b, err := newBed(up.State, true)
	if err != nil {
		Down(up.State.Name)
		return nil, err
	}
	b.Cleaned = up.Cleaned
	return b, nil
}

func newBed(st *State, owned bool) (*Bed, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the wanlab executable: %w", err)
	}
	b := &Bed{state: st, topo: st.Topology(), owned: owned, stats: NewStatsReader(st.Name), exe: exe}
	if cg, err := cgroup.Detect(); err == nil && cg.Version != cgroup.None {
		b.cg = cg
	}
	return b, nil
}

// Name is the test-bed's name.
func (b *Bed) Name() string { return b.state.Name }

// State is what the test-bed recorded about itself when it came up.
func (b *Bed) State() *State { return b.state }

// Topology is the test-bed's hosts, directions and paths.
func (b *Bed) Topology() *topology.Topology { return b.topo }

// Dial connects to a host's agent on its socket, outside every emulated link.
func (b *Bed) Dial(ctx context.Context, host string) (*agentapi.Client, error) {
	if _, err := b.state.Host(host); err != nil {
		return nil, err
	}
	return agentapi.Dial(ctx, host, AgentSocket(b.state.Name, host))
}

// Command runs argv in a host through wanlab testbed exec (its namespace,
// cgroups and TMPDIR).
func (b *Bed) Command(ctx context.Context, host string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, b.exe, append([]string{"testbed", "exec", b.state.Name, host, "--"}, argv...)...)
}

// DataDir is a host's data directory: its agent's folder, and the TMPDIR
// of what runs in it.
func (b *Bed) DataDir(host string) (string, error) {
	h, err := b.state.Host(host)
	if err != nil {
		return "", err
	}
	return h.DataDir, nil
}

// Close takes the test-bed down if this Bed brought it up.
func (b *Bed) Close() error {
	if !b.owned {
		return nil
	}
	if err := Down(b.state.Name); err != nil {
		return fmt.Errorf("tearing down test-bed %q: %w", b.state.Name, err)
	}
	return nil
}

// Counters reads the hosts' cgroups (CPU, disk), the engine's counters and
// the machine's CPU.
func (b *Bed) Counters() (backend.Counters, error) {
	c := backend.Counters{At: time.Now(), HostCPU: map[string]time.Duration{}, HostDisk: map[string]backend.DiskBytes{}}
	if b.cg != nil {
		c.DiskAtSubmission = b.cg.IOCountedAtSubmission()
		for _, h := range b.state.Hosts {
			if u, err := b.cg.Usage(h.Cgroup); err == nil {
				c.HostCPU[h.Name] = u
			}
			// A process of the host (its agent) shows the host's own
			// network counters.
			if pids, err := b.cg.Procs(h.Cgroup); err == nil && len(pids) > 0 {
				if n, err := proc.UDPRcvbufErrors(pids[0]); err == nil {
					c.HostRcvbufErrors += n
				}
			}
			if h.DiskDev == "" || !b.cg.HasIO() {
				continue
			}
			if r, w, err := b.cg.IOUsage(h.Cgroup, cgroup.Disk{Dev: h.DiskDev}); err == nil {
				c.HostDisk[h.Name] = backend.DiskBytes{Read: r, Written: w}
			}
		}
	}
	if st, err := b.stats.Read(); err == nil {
		for _, d := range st.Dirs {
			c.Links = append(c.Links, backend.LinkCounters{Name: d.Name, Bytes: d.Bytes + d.CrossBytes, Packets: d.Packets + d.CrossPackets, Drops: d.Drops()})
		}
		e := &backend.EngineCounters{CPUSeconds: st.CPUSeconds, OutsideModel: st.PoolDrops, LatenessP99us: st.Lateness.P99us,
			Realtime: st.Realtime, CPUsAwake: st.CPUsAwake}
		for _, p := range st.Ports {
			e.OutsideModel += p.WriteDrops
		}
		c.Engine = e
	}
	c.MachineBusy, c.MachineTotal = MachineCPU()
	return c, nil
}

// MachineCPU returns the machine's busy and total CPU seconds since boot.
// Busy is the time its CPUs were neither idle nor waiting for I/O: the
// kernel keeps idle time exactly (/proc/uptime), while /proc/stat's busy
// fields are sampled at the tick, which missed a third to a half of a load
// made of many short wake-ups such as the engine's on slow links.
func MachineCPU() (busy, total float64) {
	up, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, 0
	}
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	var uptime, idle float64
	if _, err := fmt.Sscan(string(up), &uptime, &idle); err != nil {
		return 0, 0
	}
	cpus, iowait := 0, 0.0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text()) // cpu user nice system idle iowait ...
		switch {
		case len(fields) > 5 && fields[0] == "cpu":
			iowait, _ = strconv.ParseFloat(fields[5], 64)
			iowait /= 100 // USER_HZ
		case strings.HasPrefix(fields[0], "cpu"):
			cpus++
		}
	}
	total = uptime * float64(cpus)
	return max(0, total-idle-iowait), total
}
