package main

// The engine at multi-gigabit speed and at mesh scale (issue 16): one TCP
// stream at 10 Gbit/s, many flows on many links, many slow links, UDP near
// the rate, each with the engine's offloads on and off, beside the
// kernel's own veth path.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/linkemu"
	"github.com/wanlab/wanlab/internal/proc"
	"github.com/wanlab/wanlab/internal/testbed"
	"golang.org/x/sys/unix"
)

// bigMachine lets hosts ask for the windows of long 10 Gbit/s paths.
const bigMachine = "machine: {sysctl: {net.core.rmem_max: 1GiB, net.core.wmem_max: 1GiB}}\n"

// engineRun is what one case measured. Lateness covers the whole test-bed's
// life: each case has a test-bed of its own.
type engineRun struct {
	gbit                       float64 // received, Gbit/s
	retransmits                int
	engineCores, machineCores  float64
	late, coalesce, engineLate linkemu.LatenessSummary
	steady                     linkemu.LatenessSummary // after the run's first settle (slow start)
	wake, write                linkemu.LatenessSummary // the engine's timer past its time; each write
	io                         linkemu.IOSnapshot
	outside                    uint64
	forwardedGbit              float64 // through the engine's directions
	rcvbuf                     int     // receiving hosts' UDP RcvbufErrors
	wakesPerSec                float64 // the engine's timer wake-ups
}

// measureEngine runs fn on bed b and reads what the engine and the
// machine did meanwhile; the steady lateness is that of the segments
// written after settle (the stretch iperf3 leaves out with -O).
func measureEngine(b *bed, settle time.Duration, fn func() (gbit float64, retrans int, err error)) (engineRun, error) {
	before, err := b.status()
	if err != nil {
		return engineRun{}, err
	}
	busy0, _ := testbed.MachineCPU()
	start := time.Now()
	settled := make(chan *testbed.Status, 1)
	go func() {
		time.Sleep(settle)
		st, err := b.status()
		if err != nil {
			st = before
		}
		settled <- st
	}()
	gbit, retrans, err := fn()
	if err != nil {
		return engineRun{}, err
	}
	steadyFrom := <-settled
	wall := time.Since(start).Seconds()
	busy1, _ := testbed.MachineCPU()
	after, err := b.status()
	if err != nil {
		return engineRun{}, err
	}
	e := after.Engine
	return engineRun{gbit: gbit, retransmits: retrans,
		engineCores: (e.CPUSeconds - before.Engine.CPUSeconds) / wall, machineCores: (busy1 - busy0) / wall,
		late: e.Lateness, coalesce: e.Coalescing, engineLate: e.EngineLateness, io: e.IO,
		steady: linkemu.LatenessBetween(steadyFrom.Engine.LatenessHistogram, e.LatenessHistogram),
		wake:   e.WakeLateness, write: e.WriteTime,
		outside:       otherDrops(after) - otherDrops(before),
		forwardedGbit: float64(forwardedBytes(after)-forwardedBytes(before)) * 8 / 1e9,
		wakesPerSec:   float64(e.WakeLateness.Count-before.Engine.WakeLateness.Count) / wall}, nil
}

const engineHead = "| case | offloads | throughput | retransmits | engine cores | machine cores | engine CPU-s per Gbit | lateness p50 / p99 / p99.9 / max | after slow start: p99 / p99.9 | coalescing p99 / engine p99 | timer wake-up / write p99 | bytes per read / write | drops outside model |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"

func (r engineRun) row(label string, offloads bool) {
	perRead, perWrite, perGbit := 0.0, 0.0, 0.0
	if r.io.Reads > 0 {
		perRead = float64(r.io.ReadBytes) / float64(r.io.Reads)
	}
	if r.io.Writes > 0 {
		perWrite = float64(r.io.WriteBytes) / float64(r.io.Writes)
	}
	if r.gbit > 0 {
		perGbit = r.engineCores / r.gbit
	}
	fmt.Printf("| %s | %s | %.2f Gbit/s | %d | %.2f | %.2f | %.3f | %.0f / %.0f / %.0f / %.0f us | %.0f / %.0f us | %.0f / %.0f us | %.0f / %.0f us | %.0f / %.0f | %d |\n",
		label, onOff(offloads), r.gbit, r.retransmits, r.engineCores, r.machineCores, perGbit,
		r.late.P50us, r.late.P99us, r.late.P999us, r.late.Maxus, r.steady.P99us, r.steady.P999us, r.coalesce.P99us, r.engineLate.P99us, r.wake.P99us, r.write.P99us, perRead, perWrite, r.outside)
}

// engineYAML is a scenario's engine settings.
func engineYAML(offloads bool, threads int) string {
	return fmt.Sprintf("{offloads: %v, threads: %d}", offloads, threads)
}

// coalescingYAML is the default engine with offloads and a coalescing window.
func coalescingYAML(window string) string {
	return fmt.Sprintf("{offloads: true, threads: 1, coalesce: %s}", window)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// pairsBed is the YAML of a test-bed of n pairs of hosts (sN, rN), each
// pair on a link of its own with the given settings, and the given engine.
func pairsBed(name string, n int, engine, link string) string {
	var y strings.Builder
	fmt.Fprintf(&y, "name: %s\n%sengine: %s\nhosts:\n", name, bigMachine, engine)
	for i := range n {
		fmt.Fprintf(&y, "  s%d: {sysctl: %s}\n  r%d: {sysctl: %s}\n", i, bigBuffers, i, bigBuffers)
	}
	y.WriteString("links:\n")
	for i := range n {
		fmt.Fprintf(&y, "  - {between: [s%d, r%d], %s}\n", i, i, link)
	}
	return y.String()
}

// iperfPairs runs o between every pair at once and sums what they received.
func iperfPairs(b *bed, n int, o crosscheck.IperfOptions) (gbit float64, retrans int, err error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			oi := o
			oi.Client, oi.Server, oi.ServerAddr = fmt.Sprintf("s%d", i), fmt.Sprintf("r%d", i), b.addr(fmt.Sprintf("r%d", i))
			res, err := b.runner().Iperf(context.Background(), oi)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			gbit += res.ReceivedBPS / 1e9
			retrans += res.Retransmits
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return 0, 0, errs[0]
	}
	return gbit, retrans, nil
}

// single is one TCP stream on a link of its own.
type single struct {
	label, link, window string
	d, omit             time.Duration
	// ipv6 runs it over IPv6 on a dual-stack test-bed.
	ipv6 bool
}

// run measures c on a test-bed of its own with the engine's offloads and threads.
func (c single) run(offloads bool, threads int) error {
	y := pairsBed("bench-10g", 1, engineYAML(offloads, threads), c.link)
	if c.ipv6 {
		y = strings.Replace(y, "\nengine:", "\nfamily: dual\nengine:", 1)
	}
	b, err := upBed(y)
	if err != nil {
		return err
	}
	b.ipv6 = c.ipv6
	r, err := measureEngine(b, c.omit, func() (float64, int, error) {
		return iperfPairs(b, 1, crosscheck.IperfOptions{Duration: c.d, Omit: c.omit, Window: c.window, Congestion: "cubic"})
	})
	b.down()
	if err != nil {
		return err
	}
	r.row(c.label, offloads)
	return nil
}

// jumboV4V6 is one stream through 10 Gbit/s at MTU 9000 over IPv4, and
// the same over IPv6 on a dual-stack test-bed (issue 36: the same
// fidelity and speed targets for both).
func jumboV4V6() []single {
	return []single{
		{"10 Gbit/s, MTU 9000, 17 ms RTT, -w 64M", "rate: 10Gbit, delay: 8.5ms, mtu: 9000", "64M", duration(), omit(), false},
		{"10 Gbit/s, MTU 9000, 17 ms RTT, -w 64M, IPv6", "rate: 10Gbit, delay: 8.5ms, mtu: 9000", "64M", duration(), omit(), true},
	}
}

// engineIPv6 runs jumboV4V6 alone, offloads on and off.
func engineIPv6() error {
	fmt.Println("### One stream at 10 Gbit/s over IPv4 and IPv6 (issue 36)")
	fmt.Println()
	fmt.Println(engineHead)
	for _, c := range jumboV4V6() {
		for _, offloads := range []bool{true, false} {
			if err := c.run(offloads, 1); err != nil {
				return err
			}
		}
	}
	fmt.Println()
	return nil
}

// engineScale runs the cases of issue 16's targets.
func engineScale() error {
	long := 30 * time.Second
	if *quick {
		long = 15 * time.Second
	}
	fmt.Println("### The engine at multi-gigabit speed (issue 16)")
	fmt.Println()
	fmt.Println("Each case on a test-bed of its own, with the engine's offloads on (hosts hand over 64 KB TCP super-packets, modelled per wire segment) and off (every packet segmented by its host, as before). iperf3, cubic, -O leaves slow start out; windows (-w) about twice the bandwidth-delay product, the machine's socket buffer limits raised by the test-bed (machine:). Engine cores: the engine process's CPU over the run; machine cores: the whole machine's. Lateness: of each wire segment, at the completion of its write into the receiving host, over the test-bed's life; coalescing is the share a segment waited for the rest of its run, engine the share after it. Bytes per read and write: the engine's system calls on the hosts' TUN devices.")
	fmt.Println()
	fmt.Println(engineHead)
	for _, c := range append(jumboV4V6(), []single{
		{"10 Gbit/s, MTU 9000, 175 ms RTT, -w 400M", "rate: 10Gbit, delay: 87.5ms, mtu: 9000", "400M", long, 10 * time.Second, false},
		{"10 Gbit/s, MTU 1500, 1 ms RTT, -w 4M", "rate: 10Gbit, delay: 0.5ms", "4M", duration(), omit(), false},
		{"10 Gbit/s, MTU 1500, 10 ms RTT, -w 32M", "rate: 10Gbit, delay: 5ms", "32M", duration(), omit(), false},
		{"10 Gbit/s, MTU 1500, 50 ms RTT, -w 128M", "rate: 10Gbit, delay: 25ms", "128M", duration(), 5 * time.Second, false},
	}...) {
		for _, offloads := range []bool{true, false} {
			if err := c.run(offloads, 1); err != nil {
				return err
			}
		}
	}
	// One link's two directions on two threads: data one way, ACKs the other.
	for _, c := range []single{
		{"10 Gbit/s, MTU 1500, 10 ms RTT, -w 32M, engine threads: 2", "rate: 10Gbit, delay: 5ms", "32M", duration(), omit(), false},
		{"10 Gbit/s, MTU 9000, 175 ms RTT, -w 400M, engine threads: 2", "rate: 10Gbit, delay: 87.5ms, mtu: 9000", "400M", long, 10 * time.Second, false},
	} {
		if err := c.run(true, 2); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		offloads bool
		threads  int
	}{{true, 1}, {false, 1}, {true, 2}} {
		b, err := upBed(pairsBed("bench-agg", 4, engineYAML(c.offloads, c.threads), "rate: 10Gbit, delay: 2.5ms"))
		if err != nil {
			return err
		}
		r, err := measureEngine(b, omit(), func() (float64, int, error) {
			return iperfPairs(b, 4, crosscheck.IperfOptions{Duration: duration(), Omit: omit(), Streams: 2, Window: "16M", Congestion: "cubic"})
		})
		b.down()
		if err != nil {
			return err
		}
		r.row(fmt.Sprintf("aggregate: 4 links of 10 Gbit/s, MTU 1500, 5 ms RTT, 2 streams each, engine threads: %d", c.threads), c.offloads)
	}
	for _, c := range slowCases {
		for _, offloads := range []bool{true, false} {
			r, err := c.run(engineYAML(offloads, 1))
			if err != nil {
				return err
			}
			r.row(c.label, offloads)
		}
		// The kernel carrying the same load: tbf shapes as the link's rate
		// does; this kernel has no netem, so there is no delay.
		gbit, cores, err := vethLoad(c.n, []string{"tbf", "rate", c.tbf, "burst", "5kb", "latency", "20ms"})
		if err != nil {
			return err
		}
		fmt.Printf("| %s: the kernel's veth pairs, shaped by tbf, no delay | - | %.2f Gbit/s | - | - | %.2f | - | - | - | - | - | - | - |\n", c.label, gbit, cores)
	}
	fmt.Println()
	fmt.Println()
	if err := udpNearRate(); err != nil {
		return err
	}
	return vethCost()
}

// slow is a load of many slow links: one TCP stream on each of n links.
type slow struct {
	label string
	n     int
	link  string
	tbf   string // the same rate for the kernel's tbf qdisc
}

var slowCases = []slow{
	{"16 busy links of 10 Mbit/s, 20 ms RTT", 16, "rate: 10Mbit, delay: 10ms", "10mbit"},
	{"one busy link of 100 Mbit/s, 20 ms RTT", 1, "rate: 100Mbit, delay: 10ms", "100mbit"},
}

// run measures c on a test-bed of its own with the given engine settings.
func (c slow) run(engine string) (engineRun, error) {
	b, err := upBed(pairsBed("bench-slow", c.n, engine, c.link))
	if err != nil {
		return engineRun{}, err
	}
	defer b.down()
	return measureEngine(b, omit(), func() (float64, int, error) {
		return iperfPairs(b, c.n, crosscheck.IperfOptions{Duration: duration(), Omit: omit(), Congestion: "cubic"})
	})
}

// coalescing measures what a wake-up costs this machine, then runs the
// slow links with wider coalescing windows: where a wake-up costs much,
// fewer of them buy CPU with lateness.
func coalescing() error {
	machineStalls()
	fmt.Println("Slow links by coalescing window (`engine: {coalesce: ...}`, auto by default: half an MTU packet's time on the wire, 60 us at 100 Mbit/s, 250 us at 10 Mbit/s; offloads on, one thread). Engine CPU per wake-up: the engine's CPU time over its timer wake-ups, the packet work between two sleeps included.")
	fmt.Println()
	fmt.Println("| case | coalesce | throughput | engine cores | machine cores | timer wake-ups/s | engine CPU per wake-up | lateness p50 / p99 / p99.9 us | after slow start: p99 / p99.9 us |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, c := range slowCases {
		for _, window := range []string{"auto", "50us", "250us", "1ms"} {
			r, err := c.run(coalescingYAML(window))
			if err != nil {
				return err
			}
			perWake := 0.0
			if r.wakesPerSec > 0 {
				perWake = r.engineCores / r.wakesPerSec * 1e6
			}
			fmt.Printf("| %s | %s | %.3f Gbit/s | %.2f | %.2f | %.0f | %.0f us | %.0f / %.0f / %.0f | %.0f / %.0f |\n", c.label, window, r.gbit, r.engineCores, r.machineCores,
				r.wakesPerSec, perWake, r.late.P50us, r.late.P99us, r.late.P999us, r.steady.P99us, r.steady.P999us)
		}
	}
	fmt.Println()
	return nil
}

// machineStalls measures how late this machine itself wakes a thread: a
// SCHED_FIFO thread with 1 ns timer slack sleeps 100 us at a time for 10 s,
// with nothing else running. No engine releases packets more punctually
// than the machine wakes it.
func machineStalls() {
	done := make(chan string)
	go func() {
		// Locked for good, so that the tuned thread ends with this
		// goroutine: were it handed back, the test-beds started after
		// would inherit SCHED_FIFO.
		runtime.LockOSThread()
		unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 1, Flags: unix.SCHED_FLAG_RESET_ON_FORK}, 0)
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		const nap = 100 * time.Microsecond
		var late []time.Duration
		cpu0 := proc.ThreadCPU()
		for start, prev := time.Now(), time.Now(); time.Since(start) < 10*time.Second; {
			// A raw system call, as the engine's waits are: the runtime
			// neither hands the thread's processor away nor wakes another
			// thread to take it back.
			ts := unix.NsecToTimespec(int64(nap))
			unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
			now := time.Now()
			late = append(late, now.Sub(prev)-nap)
			prev = now
		}
		cost := (proc.ThreadCPU() - cpu0) / time.Duration(len(late))
		slices.Sort(late)
		q := func(p float64) string {
			return fmt.Sprintf("%.0f", float64(late[int(p*float64(len(late)-1))])/1e3)
		}
		done <- fmt.Sprintf("The machine's own wake-ups: a SCHED_FIFO thread sleeping 100 us at a time for 10 s, nothing else running, woke late by p50 %s, p99 %s, p99.9 %s, p99.99 %s, max %s us (%d sleeps). The engine's timer wake-up column is the same measure under load. Each sleep and wake-up cost the thread %.1f us of CPU with no other work.\n",
			q(0.5), q(0.99), q(0.999), q(0.9999), q(1), len(late), float64(cost)/1e3)
	}()
	fmt.Println(<-done)
}

// udpNearRate sends UDP at half a 1 Gbit/s link's rate, and at 50 Mbit/s
// through 1% loss: the engine's queue should drop nothing below the rate,
// and the receiving host's socket nothing because of the engine.
func udpNearRate() error {
	fmt.Println("UDP (iperf3 -u -l 1400): drops that the model did not decide. Queue drops are the engine's model (none expected below the rate); receiver drops are the receiving host's UDP RcvbufErrors.")
	fmt.Println()
	fmt.Println("| case | offloads | datagrams | lost (iperf3) | engine loss drops | 99% interval | engine queue drops | receiver drops | drops outside model | engine cores |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range []struct {
		label, link, rate string
		loss              float64
	}{
		{"500 Mbit/s into 1 Gbit/s, 5 ms", "rate: 1Gbit, delay: 5ms", "500M", 0},
		{"50 Mbit/s through 1% loss, 100 Mbit/s, 5 ms", "rate: 100Mbit, delay: 5ms, loss: 1%", "50M", 0.01},
	} {
		for _, offloads := range []bool{true, false} {
			b, err := upBed(pairsBed("bench-udp", 1, engineYAML(offloads, 1), c.link))
			if err != nil {
				return err
			}
			var res crosscheck.IperfResult
			r, err := measureEngine(b, 0, func() (float64, int, error) {
				var err error
				res, err = b.runner().Iperf(context.Background(), crosscheck.IperfOptions{Client: "s0", Server: "r0", ServerAddr: b.addr("r0"),
					Duration: duration(), UDP: true, Rate: c.rate, Length: 1400, Window: "8M"})
				return res.ReceivedBPS / 1e9, 0, err
			})
			if err == nil {
				r.rcvbuf, err = udpRcvbufErrors(b, "r0")
			}
			st, serr := b.status()
			b.down()
			if err != nil {
				return err
			}
			if serr != nil {
				return serr
			}
			interval := "-"
			if c.loss > 0 {
				lo, hi := binomial99(res.Packets, c.loss)
				interval = fmt.Sprintf("%.0f-%.0f", lo, hi)
			}
			var lossDrops, queueDrops uint64
			for _, d := range st.Engine.Dirs {
				lossDrops += d.LossDrops
				queueDrops += d.QueueDrops
			}
			fmt.Printf("| %s | %s | %d | %d | %d | %s | %d | %d | %d | %.2f |\n", c.label, onOff(offloads), res.Packets, res.LostPackets,
				lossDrops, interval, queueDrops, r.rcvbuf, r.outside, r.engineCores)
		}
	}
	fmt.Println()
	return nil
}

// vethCost is the kernel's own path: one TCP stream over a plain veth pair
// between two namespaces, with the whole machine's CPU per Gbit.
func vethCost() error {
	gbit, cores, err := vethLoad(1, nil)
	if err != nil {
		return err
	}
	fmt.Printf("The kernel's own path for comparison: one iperf3 TCP stream over a plain veth pair between two namespaces (no emulator, no delay): %.2f Gbit/s with %.2f of the machine's cores busy, %.3f machine CPU-seconds per Gbit.\n\n", gbit, cores, cores/gbit)
	return nil
}

// vethLoad runs one iperf3 TCP stream (cubic) over each of n veth pairs at
// once, each end with qdisc if given, and returns what they received in
// all and the machine's cores busy meanwhile.
func vethLoad(n int, qdisc []string) (gbit, cores float64, err error) {
	var servers []*exec.Cmd
	defer func() {
		for _, s := range servers {
			s.Process.Kill()
			s.Wait()
		}
	}()
	clients := make([]string, n) // each pair's sending namespace
	for i := range n {
		a, b, cleanup, err := vethPair(i, qdisc...)
		defer cleanup()
		if err != nil {
			return 0, 0, err
		}
		clients[i] = a
		server := exec.Command("ip", "netns", "exec", b, "iperf3", "-s", "-1")
		if err := server.Start(); err != nil {
			return 0, 0, err
		}
		servers = append(servers, server)
	}
	time.Sleep(300 * time.Millisecond)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	busy0, _ := testbed.MachineCPU()
	start := time.Now()
	for i, a := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command("ip", "netns", "exec", a, "iperf3", "-J", "-C", "cubic", "-c", vethAddr(i, 2), "-t", fmt.Sprint(duration().Seconds())).Output()
			var res crosscheck.IperfResult
			if err == nil {
				res, err = crosscheck.ParseIperf(out, false)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("iperf3 over veth pair %d: %w", i, err))
				return
			}
			gbit += res.ReceivedBPS / 1e9
		}()
	}
	wg.Wait()
	busy1, _ := testbed.MachineCPU()
	if len(errs) > 0 {
		return 0, 0, errs[0]
	}
	return gbit, (busy1 - busy0) / time.Since(start).Seconds(), nil
}

// lateTimeline runs the 175 ms, 10 Gbit/s case and, every second, reads
// the lateness of the segments written in that second and what the
// engine's real-time threads did: how long each ran and how long it
// waited, runnable, for a CPU. A thread that runs the whole second and
// hardly waits is saturated, not preempted.
func lateTimeline() error {
	b, err := upBed(pairsBed("bench-timeline", 1, engineYAML(true, 1), "rate: 10Gbit, delay: 87.5ms, mtu: 9000"))
	if err != nil {
		return err
	}
	defer b.down()
	d := 40 * time.Second
	if *quick {
		d = 15 * time.Second
	}
	fmt.Printf("One TCP stream through 10 Gbit/s, MTU 9000, 175 ms RTT, -w 400M, for %.0f s, second by second: the lateness of the segments written in each second (from the engine's histogram) and, per engine thread (SCHED_FIFO), the milliseconds it ran and waited runnable for a CPU (/proc/PID/task/TID/schedstat).\n\n", d.Seconds())
	fmt.Println("| second | Gbit/s through the link | lateness p50 / p99 / p99.9 / max us | engine threads: ran / waited ms |")
	fmt.Println("|---|---|---|---|")
	done := make(chan error, 1)
	go func() {
		_, _, err := iperfPairs(b, 1, crosscheck.IperfOptions{Duration: d, Window: "400M", Congestion: "cubic"})
		done <- err
	}()
	prev, err := b.status()
	if err != nil {
		return err
	}
	prevThreads, prevAt := rtThreads(prev.PID), time.Now()
	for i := 1; ; i++ {
		select {
		case err := <-done:
			fmt.Println()
			return err
		case <-time.After(time.Second):
		}
		cur, err := b.status()
		if err != nil {
			return err
		}
		threads, at := rtThreads(cur.PID), time.Now()
		var parts []string
		for _, tid := range slices.Sorted(maps.Keys(threads)) {
			t, p := threads[tid], prevThreads[tid]
			parts = append(parts, fmt.Sprintf("%.0f / %.0f", float64(t.ran-p.ran)/1e6, float64(t.waited-p.waited)/1e6))
		}
		l := linkemu.LatenessBetween(prev.Engine.LatenessHistogram, cur.Engine.LatenessHistogram)
		gbit := float64(forwardedBytes(cur)-forwardedBytes(prev)) * 8 / 1e9 / at.Sub(prevAt).Seconds() // ACKs' bytes are a trifle
		fmt.Printf("| %d | %.2f | %.0f / %.0f / %.0f / %.0f | %s |\n", i, gbit, l.P50us, l.P99us, l.P999us, l.Maxus, strings.Join(parts, ", "))
		prev, prevThreads, prevAt = cur, threads, at
	}
}

// schedTimes is a thread's time on a CPU and waiting for one, in ns.
type schedTimes struct{ ran, waited int64 }

// rtThreads reads the schedstat of process pid's SCHED_FIFO threads.
func rtThreads(pid int) map[int]schedTimes {
	out := map[int]schedTimes{}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if attr, err := unix.SchedGetAttr(tid, 0); err != nil || attr.Policy != unix.SCHED_FIFO {
			continue
		}
		var t schedTimes
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
		if err != nil {
			continue
		}
		if _, err := fmt.Sscan(string(b), &t.ran, &t.waited); err == nil {
			out[tid] = t
		}
	}
	return out
}
