package linkemu

import (
	"encoding/binary"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testNet runs an engine whose ports are datagram socketpairs: the engine
// holds one end, the test plays the host at the other.
type testNet struct {
	eng   *Engine
	hosts []int // the hosts' ends
	done  chan error
}

func addr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 250, 0, byte(i + 1)}) }

func startNet(t *testing.T, nPorts int, dirs []DirConfig, paths map[[2]int][]int) *testNet {
	t.Helper()
	return startNetWith(t, Config{Dirs: dirs, Paths: paths, Seed: 1, MaxPacket: 1500}, nPorts)
}

// startNetWith is startNet with the engine's configuration given, but its ports.
func startNetWith(t testing.TB, cfg Config, nPorts int) *testNet {
	t.Helper()
	tn := &testNet{done: make(chan error, 1)}
	for i := range nPorts {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Large buffers so that a burst is not dropped by the socket itself.
		for _, fd := range fds {
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
		}
		cfg.Ports = append(cfg.Ports, PortConfig{Name: string(rune('a' + i)), FD: fds[0], Addr: addr(i), Addr6: addr6(i)})
		tn.hosts = append(tn.hosts, fds[1])
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	}
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tn.eng = eng
	go func() { tn.done <- eng.Run() }()
	t.Cleanup(func() {
		eng.Stop()
		if err := <-tn.done; err != nil {
			t.Errorf("engine: %v", err)
		}
	})
	return tn
}

// packet builds an IPv4-looking packet of size bytes from src to dst carrying seq.
func packet(src, dst, size int, seq uint32) []byte {
	p := make([]byte, size)
	p[0] = 0x45
	binary.BigEndian.PutUint16(p[2:], uint16(size))
	copy(p[12:16], addr(src).AsSlice())
	copy(p[16:20], addr(dst).AsSlice())
	binary.BigEndian.PutUint32(p[20:], seq)
	return p
}

// recv waits up to timeout for a packet at host i.
func (tn *testNet) recv(i int, timeout time.Duration) ([]byte, bool) {
	buf := make([]byte, superSlot)
	fds := []unix.PollFd{{Fd: int32(tn.hosts[i]), Events: unix.POLLIN}}
	// The Go runtime's preemption signal interrupts poll (EINTR): an
	// interrupted wait goes on for what is left of the timeout.
	for end := time.Now().Add(timeout); ; {
		n, err := unix.Poll(fds, int(time.Until(end)/time.Millisecond))
		if err == unix.EINTR && time.Now().Before(end) {
			continue
		}
		if n <= 0 {
			return nil, false
		}
		break
	}
	n, err := unix.Read(tn.hosts[i], buf)
	if err != nil {
		return nil, false
	}
	return buf[:n], true
}

func TestEngineDelaysAndDelivers(t *testing.T) {
	const delay = 20 * time.Millisecond
	tn := startNet(t, 2, []DirConfig{{Name: "a->b", Delay: delay}, {Name: "b->a", Delay: delay}},
		map[[2]int][]int{{0, 1}: {0}, {1, 0}: {1}})
	for seq := range uint32(5) {
		sent := time.Now()
		if _, err := unix.Write(tn.hosts[0], packet(0, 1, 200, seq)); err != nil {
			t.Fatal(err)
		}
		got, ok := tn.recv(1, 2*time.Second)
		if !ok {
			t.Fatalf("packet %d never arrived", seq)
		}
		if took := time.Since(sent); took < delay {
			t.Errorf("packet %d arrived after %v, before the configured delay %v", seq, took, delay)
		}
		if s := binary.BigEndian.Uint32(got[20:]); s != seq || len(got) != 200 {
			t.Errorf("got packet %d of %d bytes, want %d of 200", s, len(got), seq)
		}
	}
	st := tn.eng.Stats()
	if st.Dirs[0].Packets != 5 || st.Dirs[0].Bytes != 1000 || st.Dirs[1].Packets != 0 {
		t.Errorf("direction counters %+v, want 5 packets / 1000 bytes a->b only", st.Dirs)
	}
	// Lateness is taken as a write completes: a moment after the host has the packet.
	for end := time.Now().Add(time.Second); st.Lateness.Count < 5 && time.Now().Before(end); st = tn.eng.Stats() {
		time.Sleep(time.Millisecond)
	}
	if st.Lateness.Count != 5 || st.IO.Writes != 5 || st.IO.WriteBytes != 1000 {
		t.Errorf("lateness recorded %d deliveries and io %+v, want 5 writes of 1000 bytes in all", st.Lateness.Count, st.IO)
	}
}

func TestEngineMultiHopAndDrops(t *testing.T) {
	// a -> b crosses "up" then "down"; "up" is slow with a 3-packet queue.
	dirs := []DirConfig{
		{Name: "up", Rate: 1e6, QueuePackets: 3},
		{Name: "down", Delay: time.Millisecond},
	}
	tn := startNet(t, 3, dirs, map[[2]int][]int{{0, 1}: {0, 1}})
	for seq := range uint32(10) {
		unix.Write(tn.hosts[0], packet(0, 1, 1000, seq))
	}
	unix.Write(tn.hosts[0], packet(0, 2, 100, 99)) // a -> c: no path
	unix.Write(tn.hosts[0], []byte{0x60, 0, 0, 0}) // not IPv4
	// Collect until every packet is accounted for and none is in flight, or
	// 5 s: on a busy machine a quiet spell is no proof that the burst is over.
	var got []uint32
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if p, ok := tn.recv(1, 50*time.Millisecond); ok {
			got = append(got, binary.BigEndian.Uint32(p[20:]))
			continue
		}
		st := tn.eng.Stats()
		if up := st.Dirs[0]; up.Packets+up.QueueDrops == 10 && st.InFlight == 0 && len(got) == int(st.Dirs[1].Packets) {
			break
		}
	}
	st := tn.eng.Stats()
	up, down := st.Dirs[0], st.Dirs[1]
	if up.QueueDrops == 0 || int(up.Packets+up.QueueDrops) != 10 {
		t.Errorf("up: %+v, want queue drops and 10 packets accounted", up)
	}
	if down.Packets != up.Packets || len(got) != int(down.Packets) {
		t.Errorf("delivered %d, up forwarded %d, down forwarded %d: every packet should cross both", len(got), up.Packets, down.Packets)
	}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Errorf("packets reordered: %v", got)
		}
	}
	if st.Ports[0].Unroutable != 2 || st.Ports[0].RxPackets != 12 {
		t.Errorf("port a: %+v, want 12 read and 2 unroutable", st.Ports[0])
	}
	if st.InFlight != 0 {
		t.Errorf("%d packets still in flight after the burst", st.InFlight)
	}
}

func TestEngineRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no ports", Config{}},
		{"duplicate address", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}, {FD: 2, Addr: addr(0)}}}},
		{"path to itself", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}}, Paths: map[[2]int][]int{{0, 0}: nil}}},
		{"unknown direction", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}, {FD: 2, Addr: addr(1)}}, Paths: map[[2]int][]int{{0, 1}: {3}}}},
		{"negative delay", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}}, Dirs: []DirConfig{{Delay: -1}}}},
		{"a delay of years", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}}, Dirs: []DirConfig{{Delay: 2562047 * time.Hour}}}},
		{"a jitter of years", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}}, Dirs: []DirConfig{{Jitter: 2562047 * time.Hour}}}},
		{"a rate past any NIC", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}}, Dirs: []DirConfig{{Rate: 1e15}}}},
		{"a rate that is not a number", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}}, Dirs: []DirConfig{{Rate: math.NaN()}}}},
		{"an IPv4 address as an entry router's IPv6 one", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}}, Dirs: []DirConfig{{Entry6: addr(9)}}}},
		{"an IPv4-mapped entry router", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}}, Dirs: []DirConfig{{Entry: netip.MustParseAddr("::ffff:10.0.0.1")}}}},
		{"IPv6 addresses for some hops", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}},
			Dirs: []DirConfig{{Hops: []netip.Addr{addr(8), addr(9)}, Hops6: []netip.Addr{six(addr(8))}}}}},
		{"an IPv4 address among the hops' IPv6 ones", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}},
			Dirs: []DirConfig{{Hops: []netip.Addr{addr(8)}, Hops6: []netip.Addr{addr(8)}}}}},
		{"a port without an address", Config{Ports: []PortConfig{{FD: 1}}}},
		{"an IPv4 address as a port's IPv6 one", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0), Addr6: addr(1)}}}},
		{"a port's IPv6 address with a zone", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0), Addr6: netip.MustParseAddr("fe80::1%eth0")}}}},
		{"an IPv4-mapped port address", Config{Ports: []PortConfig{{FD: 1, Addr: netip.MustParseAddr("::ffff:10.250.0.1")}}}},
		{"duplicate IPv6 address", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0), Addr6: addr6(0)}, {FD: 2, Addr: addr6(0)}}}},
		{"more routers than a TTL crosses", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}},
			Dirs: []DirConfig{{Entry: addr(9), Hops: slices.Repeat([]netip.Addr{addr(8)}, MaxHops)}}}},
		{"a joined group with an unknown direction", Config{Ports: []PortConfig{{FD: 1, Addr: addr(0)}}, Dirs: []DirConfig{{}}, Joined: [][]int{{0, 1}}}},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg); err == nil {
			t.Errorf("%s: New accepted it", tt.name)
		}
	}
}

// A change applies from the next packet on; a packet already in flight
// keeps the settings it was admitted with, and is not dropped.
func TestEngineSetAppliesBetweenPackets(t *testing.T) {
	tn := startNet(t, 2, []DirConfig{{Name: "a->b", Delay: 300 * time.Millisecond}, {Name: "b->a"}},
		map[[2]int][]int{{0, 1}: {0}, {1, 0}: {1}})
	sent := time.Now()
	if _, err := unix.Write(tn.hosts[0], packet(0, 1, 200, 1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the first packet is in the delay line
	if err := tn.eng.Set(0, DirConfig{Delay: 10 * time.Millisecond, Loss: LossConfig{Random: 0}}); err != nil {
		t.Fatal(err)
	}
	if _, err := unix.Write(tn.hosts[0], packet(0, 1, 200, 2)); err != nil {
		t.Fatal(err)
	}
	// Without reordering the second packet waits for the first.
	for _, want := range []uint32{1, 2} {
		got, ok := tn.recv(1, 2*time.Second)
		if !ok {
			t.Fatalf("packet %d never arrived: the change dropped it", want)
		}
		if s := binary.BigEndian.Uint32(got[20:]); s != want {
			t.Fatalf("got packet %d, want %d", s, want)
		}
		if took := time.Since(sent); want == 1 && took < 300*time.Millisecond {
			t.Errorf("the packet in flight arrived after %v: the change shortened its delay", took)
		}
	}
	if got := tn.eng.Settings()[0]; got.Delay != 10*time.Millisecond || got.Name != "a->b" {
		t.Errorf("settings after the change %+v, want delay 10ms and the name kept", got)
	}
	// The new delay holds alone once the line is empty.
	start := time.Now()
	unix.Write(tn.hosts[0], packet(0, 1, 200, 3))
	if _, ok := tn.recv(1, 2*time.Second); !ok {
		t.Fatal("packet 3 never arrived")
	}
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Errorf("after the change a packet took %v, want about 10ms", took)
	}
	if err := tn.eng.Set(0, DirConfig{Loss: LossConfig{Random: 2}}); err == nil {
		t.Error("a loss probability of 2 was accepted")
	}
	if err := tn.eng.Set(5, DirConfig{}); err == nil {
		t.Error("a change to direction 5 of 2 was accepted")
	}
}

// TestRealtimeThreadsEndWithEngine: the engine's SCHED_FIFO threads end
// with it, and no process started from the program is real-time. Were a
// thread handed back to the runtime, every process started from it (a
// host's agent, iperf3) would be real-time too, and two busy ones starve
// the kernel's own threads on two CPUs.
func TestRealtimeThreadsEndWithEngine(t *testing.T) {
	if unix.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_NICE) to give the engine's threads SCHED_FIFO")
	}
	tn := startNetWith(t, Config{Dirs: []DirConfig{{Name: "a->b"}, {Name: "b->a"}}, Paths: map[[2]int][]int{{0, 1}: {0}, {1, 0}: {1}},
		Seed: 1, MaxPacket: 1500, Realtime: true}, 2)
	for end := time.Now().Add(2 * time.Second); len(fifoThreads(t)) < 2 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(fifoThreads(t)); n < 2 {
		t.Fatalf("%d SCHED_FIFO threads while the engine runs, want its thread and its writer's", n)
	}
	if !tn.eng.Stats().Realtime {
		t.Error("stats say the engine is not real-time, though its threads are")
	}
	tn.eng.Stop()
	if err := <-tn.done; err != nil {
		t.Fatal(err)
	}
	tn.done <- nil // for the cleanup's wait
	// The runtime parks the main thread for good instead of ending it,
	// when a locked goroutine ends there: it runs nothing again.
	main := os.Getpid()
	left := slices.DeleteFunc(fifoThreads(t), func(tid int) bool { return tid == main })
	for end := time.Now().Add(2 * time.Second); len(left) > 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
		left = slices.DeleteFunc(fifoThreads(t), func(tid int) bool { return tid == main })
	}
	if len(left) > 0 {
		t.Errorf("threads %v still SCHED_FIFO after the engine stopped", left)
	}
	for i := range 20 {
		cmd := exec.Command("sleep", "1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		attr, err := unix.SchedGetAttr(cmd.Process.Pid, 0)
		cmd.Process.Kill()
		cmd.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if attr.Policy != unix.SCHED_NORMAL {
			t.Fatalf("process %d started after the engine stopped has scheduling policy %d, want normal (0)", i, attr.Policy)
		}
	}
}

// fifoThreads lists this process's threads under SCHED_FIFO.
func fifoThreads(t *testing.T) []int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if attr, err := unix.SchedGetAttr(tid, 0); err == nil && attr.Policy == unix.SCHED_FIFO {
			out = append(out, tid)
		}
	}
	return out
}

// Each direction reports its coalescing window in force: by its rate
// (AutoCoalesce), after a change too, unless the engine has one for all.
func TestEngineCoalesceWindows(t *testing.T) {
	dirs := []DirConfig{{Name: "a->b", Rate: 10e6}, {Name: "b->a", Rate: 100e6}}
	paths := map[[2]int][]int{{0, 1}: {0}, {1, 0}: {1}}
	windows := func(tn *testNet) []float64 {
		var out []float64
		for _, d := range tn.eng.Stats().Dirs {
			out = append(out, d.CoalesceUS)
		}
		return out
	}
	tn := startNet(t, 2, dirs, paths)
	if got := windows(tn); !slices.Equal(got, []float64{250, 60}) {
		t.Errorf("windows at 10 and 100 Mbit/s: %v us, want [250 60]", got)
	}
	if err := tn.eng.Set(1, DirConfig{Rate: 1e9}); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(2 * time.Second); tn.eng.Settings()[1].Rate != 1e9 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if got := windows(tn); !slices.Equal(got, []float64{250, 50}) {
		t.Errorf("windows after b->a went to 1 Gbit/s: %v us, want [250 50]", got)
	}
	fixed := startNetWith(t, Config{Dirs: dirs, Paths: paths, Seed: 1, MaxPacket: 1500, Coalesce: time.Millisecond}, 2)
	if got := windows(fixed); !slices.Equal(got, []float64{1000, 1000}) {
		t.Errorf("windows with coalesce: 1ms: %v us, want 1000 on both", got)
	}
}
