package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/cgroup"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/proc"
	"github.com/wanlab/wanlab/internal/scenario"
	"github.com/wanlab/wanlab/internal/topology"
	"github.com/wanlab/wanlab/internal/unixsock"
)

// errInterrupted means a signal stopped the daemon while it was building.
var errInterrupted = errors.New("interrupted while coming up")

// RunDaemon is the test-bed daemon: it builds test-bed name from the scenario
// copy in its state directory, writes "ok" (or the error) to ready, forwards
// packets until it gets SIGTERM, SIGINT or SIGHUP, and then tears everything down.
// source is the path the scenario was read from, for the record. If owner is
// not 0 the daemon also takes the test-bed down once that process is gone.
func RunDaemon(name, source string, owner int, ready *os.File) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	d := &daemon{name: name, source: source, sigs: sigs, ready: ready}
	err := d.build()
	if err != nil {
		// Tear down before answering, so that when Up returns nothing is left.
		d.close()
		if terr := Teardown(name); terr != nil {
			log.Print(terr)
			err = errors.Join(err, terr)
		}
		fmt.Fprintf(ready, "error: %v\n", err)
		ready.Close()
		return err
	}
	fmt.Fprintln(ready, "ok")
	ready.Close()
	log.Printf("test-bed %s is up: %d hosts, %d link directions", name, len(d.topo.Hosts), len(d.topo.Dirs))

	runErr := make(chan error, 1)
	go func() { runErr <- d.engine.Run() }()
	go d.recordChanges()
	select {
	case sig := <-sigs:
		log.Printf("%v: taking test-bed %s down", sig, name)
		d.engine.Stop()
		err = <-runErr
	case <-ownerGone(owner):
		log.Printf("its owner (pid %d) is gone: taking test-bed %s down", owner, name)
		d.engine.Stop()
		err = <-runErr
	case err = <-runErr:
		log.Printf("engine stopped: %v", err)
	}
	d.stopping.Store(true)
	d.close()
	if terr := Teardown(name); terr != nil {
		log.Print(terr)
		err = errors.Join(err, terr)
	}
	log.Printf("test-bed %s is down", name)
	return err
}

// ownerGone is closed once process owner has ended; never for owner 0.
func ownerGone(owner int) <-chan struct{} {
	gone := make(chan struct{})
	if owner == 0 {
		return gone
	}
	go func() {
		// A zombie is gone too: its parent may not reap it for a while.
		for proc.Alive(owner) {
			time.Sleep(250 * time.Millisecond)
		}
		close(gone)
	}()
	return gone
}

type daemon struct {
	stopping atomic.Bool
	name     string
	source   string
	sigs     chan os.Signal
	ready    *os.File // testbed up reads progress, then "ok" or the error
	// topo is the test-bed's topology, which routes pairs again when
	// directions go down; its directions and paths are state's (setMu).
	topo *topology.Topology
	// rerouteDelay is how long after a direction goes down or comes back
	// up the routed pairs move (scenario.Testbed.Reroute; < 0: never).
	rerouteDelay time.Duration
	// stampFrom are the hosts' subnets (subnet, subnet6): the senders
	// whose STAMP packets their agents answer.
	stampFrom string
	hosts     []Host
	fds       []int
	engine    *linkemu.Engine
	server    *http.Server

	setMu sync.Mutex // one change of links at a time
	state *State     // as written for testbed status, with the links' settings in force
	// before holds, per timeline tag, the directions' settings before it.
	before map[string]map[int]topology.Direction
	// pending are the settings each scheduled change brings, by ref.
	pending map[int]pendingChange
	nextRef int
	// captures are the captures streaming now.
	captures captures
}

func (d *daemon) interrupted() bool {
	select {
	case sig := <-d.sigs:
		log.Printf("%v while coming up", sig)
		return true
	default:
		return false
	}
}

func (d *daemon) build() error {
	text, err := os.ReadFile(scenarioCopy(d.name))
	if err != nil {
		return fmt.Errorf("reading the scenario's copy: %w", err)
	}
	// Parsed as from where it was read, so that the files it names are found.
	f, err := scenario.Parse(d.source, text, false)
	if err != nil {
		return err
	}
	if d.topo, err = topology.New(f.Testbed); err != nil {
		return err
	}
	d.hosts = Hosts(d.topo)
	d.rerouteDelay = f.Testbed.Reroute
	d.stampFrom = f.Testbed.Subnet.String()
	if f.Testbed.HasIPv6() {
		d.stampFrom += "," + f.Testbed.Subnet6.String()
	}
	// The machine first: hosts' sysctls may need it (a congestion control
	// a namespace defaults to must be allowed machine-wide).
	machine, err := applyMachine(d.name, f.Testbed.Machine)
	if err != nil {
		return fmt.Errorf("machine-wide settings: %w", err)
	}
	if err := shareNetnsDir(); err != nil {
		return err
	}
	cg, err := cgroup.Detect()
	if err != nil {
		return err
	}
	for i := range d.hosts {
		h := &d.hosts[i]
		if d.interrupted() {
			return errInterrupted
		}
		fmt.Fprintf(d.ready, "%s%d %d building host %s\n", progressPrefix, i+1, len(d.hosts)+1, h.Name)
		if err := cg.Create(h.Cgroup, h.CPUs); err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
		if err := setUpDisk(cg, h); err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
		fd, err := buildHost(*h, f.Testbed.Engine.Offloads)
		if err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
		d.fds = append(d.fds, fd)
	}
	tb := f.Testbed
	cfg := engineConfig(d.topo, d.fds, tb.Seed)
	cfg.Realtime, cfg.Spin, cfg.KeepCPUsAwake = tb.Engine.Realtime, tb.Engine.Spin, tb.Engine.KeepCPUsAwake
	cfg.Offloads, cfg.Coalesce = tb.Engine.Offloads, tb.Engine.Coalesce
	cfg.Threads = engineThreads(tb.Engine.Threads)
	// Each engine thread keeps its P while it waits (a raw system call):
	// as many more Ps, and two, that the writers, the status server and
	// the collector never wait for one.
	runtime.GOMAXPROCS(runtime.NumCPU() + cfg.Threads + 2)
	d.engine, err = linkemu.New(cfg)
	if err != nil {
		return err
	}
	if err := d.serve(); err != nil {
		return err
	}
	fmt.Fprintf(d.ready, "%s%d %d starting the agents\n", progressPrefix, len(d.hosts)+1, len(d.hosts)+1)
	// The state shares the topology's directions and paths: the settings
	// testbed set and timelines change are those ResolvePaths starts from,
	// and the paths Reroute and ApplyPaths move are those status shows.
	d.state = &State{
		Name: d.name, PID: os.Getpid(), Created: time.Now().UTC(), Scenario: d.source,
		Cgroup: cg.Version.String(), Machine: machine, Hosts: d.hosts, Routers: d.topo.Routers, Routing: d.topo.Routing,
		Dirs: d.topo.Dirs, Paths: d.topo.Paths, Unreachable: d.topo.Unreachable,
	}
	if err := writeHosts(d.state); err != nil {
		return err
	}
	if err := writeState(d.state); err != nil {
		return err
	}
	return d.startAgents()
}

// setUpDisk makes the host's data directory and caps its disk as the
// scenario asks, recording which disk that is.
func setUpDisk(cg *cgroup.Manager, h *Host) error {
	if err := datadir.MkdirSecure(h.DataDir); err != nil {
		return fmt.Errorf("making its data folder: %w", err)
	}
	disk, err := cgroup.DiskOf(h.DataDir)
	if err != nil {
		if h.DiskCapped() {
			return fmt.Errorf("disk: %w", err)
		}
		return nil // nothing to cap, and no disk to sample
	}
	h.DiskDev, h.DiskName = disk.Dev, disk.Name
	if !h.DiskCapped() {
		return nil
	}
	if !cg.HasIO() {
		return fmt.Errorf("disk: %w", cgroup.ErrNoIOController)
	}
	if err := cg.SetIOLimit(h.Cgroup, disk, h.DiskReadBps, h.DiskWriteBps); err != nil {
		return fmt.Errorf("capping disk %s: %w", disk.Name, err)
	}
	return nil
}

// STAMPPort is the port test-bed hosts' agents answer STAMP and
// TWAMP-light test packets on: the one RFC 8762 assigns.
const STAMPPort = 862

// superviseAgent starts a host's agent and starts it again if it dies while
// the test-bed is up, so that one crash does not leave the host unmeasurable.
func (d *daemon) superviseAgent(exe string, h Host) error {
	host, sock := h.Name, AgentSocket(d.name, h.Name)
	argv := []string{"testbed", "exec", d.name, host, "--", exe, "agent", "--host", host, "--socket", sock, "--data-dir", h.DataDir,
		// Every host answers STAMP (RFC 8762) from the others on its port.
		"--stamp", ":" + strconv.Itoa(STAMPPort), "--stamp-from", d.stampFrom}
	if h.Addr6 == "" || h.Addr6 == h.Addr {
		// One family: tests on its address. A dual-stack host's listen on
		// both (its namespace has no other address but loopback), and its
		// agent names both.
		argv = append(argv, "--test-address", h.Addr)
	} else {
		argv = append(argv, "--test-address", h.Addr, "--test-address6", h.Addr6)
	}
	if h.DiskCapped() {
		argv = append(argv, "--disk-capped")
	}
	if h.DiskReadBps > 0 {
		argv = append(argv, "--disk-read-rate", strconv.FormatInt(h.DiskReadBps, 10))
	}
	start := func() (*exec.Cmd, error) {
		cmd := exec.Command(exe, argv...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr // the daemon's log
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting the agent of host %s: %w", host, err)
		}
		return cmd, nil
	}
	cmd, err := start()
	if err != nil {
		return err
	}
	go func() {
		for {
			err := cmd.Wait()
			if d.stopping.Load() {
				return
			}
			log.Printf("the agent of host %s exited (%v); starting it again", host, err)
			time.Sleep(time.Second)
			if d.stopping.Load() {
				return
			}
			if cmd, err = start(); err != nil {
				log.Print(err)
				return
			}
		}
	}()
	return nil
}

// agentStartWait bounds how long the agents may take to listen.
const agentStartWait = 15 * time.Second

// startAgents starts `wanlab agent` in every host, the way a user's command
// runs there (testbed exec: the host's namespace and cgroup), and waits
// until each listens on its socket.
func (d *daemon) startAgents() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for _, h := range d.hosts {
		if err := d.superviseAgent(exe, h); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(agentStartWait)
	for _, h := range d.hosts {
		sock := AgentSocket(d.name, h.Name)
		for {
			c, err := net.Dial("unix", sock)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the agent of host %s did not start listening on %s within %v; see %s", h.Name, sock, agentStartWait, LogPath(d.name))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// buildHost creates a host's namespace and TUN device and configures them.
func buildHost(h Host, offloads bool) (int, error) {
	ns, err := createNetns(h.Netns)
	if err != nil {
		return -1, err
	}
	defer ns.Close()
	fd, err := openTUN(ns, offloads, h.Addr6 != "")
	if err != nil {
		return -1, err
	}
	if err := configureHost(ns, h); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := applySysctls(ns, h); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// serve answers status requests on the test-bed's Unix socket, which is
// outside every emulated link.
func (d *daemon) serve() error {
	ln, err := unixsock.Listen(socketPath(d.name))
	if err != nil {
		return fmt.Errorf("listening for status requests: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		st := d.engine.Stats()
		if r.URL.Query().Get("histogram") == "" {
			st.LatenessHistogram = nil // up to 3,000 buckets: only for those who ask, not for 10 Hz polls
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(st)
	})
	// Profiles of the engine, for benchmarks and bug reports:
	// curl --unix-socket /run/wanlab/NAME/sockets/engine.sock http://engine/debug/pprof/profile
	mux.HandleFunc("POST /directions", d.setDirections)
	mux.HandleFunc("POST /timeline", d.startTimeline)
	mux.HandleFunc("POST /timeline/end", d.endTimeline)
	mux.HandleFunc("POST /changes/flush", d.flushChanges)
	mux.HandleFunc("GET /capture", d.captureLinks)
	mux.HandleFunc("POST /capture/stop", d.stopCapture)
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	d.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go d.server.Serve(ln)
	return nil
}

func (d *daemon) close() {
	if d.server != nil {
		d.server.Close()
	}
	for _, fd := range d.fds {
		unix.Close(fd)
	}
	d.fds = nil
}

// engineThreads is how many engine threads a test-bed gets: what its
// scenario asks, or one per four CPUs, since each runs beside a writer
// thread and the hosts need the rest; one on a small machine.
func engineThreads(asked int) int {
	if asked > 0 {
		return asked
	}
	return max(1, runtime.NumCPU()/4)
}
