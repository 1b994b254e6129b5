package linkemu

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkEngineLoop is the whole packet loop over datagram socketpairs:
// the benchmark keeps 64 packets of 1500 bytes in flight from host 0 to
// host 1 across a direction with no rate, delay or loss, so each packet
// costs the engine a poll, a read, the model and a write.
func BenchmarkEngineLoop(b *testing.B) { benchEngineLoop(b, packet(0, 1, 1500, 1)) }

// BenchmarkEngineLoopIPv6 is BenchmarkEngineLoop with IPv6 packets.
func BenchmarkEngineLoopIPv6(b *testing.B) { benchEngineLoop(b, packet6(0, 1, 1500, 1)) }

// benchEngineLoop keeps 64 packets like pkt in flight through the loop.
func benchEngineLoop(b *testing.B, pkt []byte) {
	const window = 64
	tn := startNetWith(b, Config{Dirs: []DirConfig{{Name: "a->b"}}, Paths: map[[2]int][]int{{0, 1}: {0}}, Seed: 1, MaxPacket: 1500}, 2)
	buf := make([]byte, 2048)
	fds := []unix.PollFd{{Fd: int32(tn.hosts[1]), Events: unix.POLLIN}}
	recv := func() {
		for {
			if _, err := unix.Read(tn.hosts[1], buf); err == nil {
				return
			}
			unix.Poll(fds, 1000)
		}
	}
	send := func() {
		for {
			if _, err := unix.Write(tn.hosts[0], pkt); err == nil {
				return
			}
			unix.Poll(nil, 0)
		}
	}
	for range window {
		send()
	}
	b.SetBytes(int64(len(pkt)))
	cpu := cpuMeter(b)
	n := 0
	for b.Loop() {
		recv()
		send()
		n++
	}
	cpu(n)
	for range window {
		recv()
	}
}

// cpuMeter starts counting the process's CPU time (every thread's: the
// engine's, its writer's and the benchmark's); the function it returns
// reports it per op, as cpu-ns/op, for n ops. On a shared machine, wall
// time per op also counts the time others had the CPUs; CPU time much
// less so.
func cpuMeter(b *testing.B) func(n int) {
	start := cpuTime()
	return func(n int) {
		if n > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
		}
	}
}

// cpuTime is the CPU time the process has used, ns.
func cpuTime() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
