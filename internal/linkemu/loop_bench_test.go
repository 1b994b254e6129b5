package linkemu

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkEngineLoop is the whole packet loop over datagram socketpairs:
// the benchmark keeps 64 packets of 1500 bytes in flight from host 0 to
// host 1 across a direction with no rate, delay or loss, so each packet
// costs the engine a poll, a read, the model and a write.
func BenchmarkEngineLoop(b *testing.B) {
	const window = 64
	tn := startNetWith(b, Config{Dirs: []DirConfig{{Name: "a->b"}}, Paths: map[[2]int][]int{{0, 1}: {0}}, Seed: 1, MaxPacket: 1500}, 2)
	pkt := packet(0, 1, 1500, 1)
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
	for b.Loop() {
		recv()
		send()
	}
	for range window {
		recv()
	}
}
