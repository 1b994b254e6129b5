package linkemu

import (
	"encoding/binary"
	"reflect"
	"testing"
	"time"
)

func TestShardGroups(t *testing.T) {
	twoPairs := map[[2]int][]int{{0, 1}: {0}, {1, 0}: {1}, {2, 3}: {2}, {3, 2}: {3}}
	tests := []struct {
		name        string
		ports, dirs int
		paths       map[[2]int][]int
		joined      [][]int
		threads     int
		wantPorts   [][]int
		wantDirs    [][]int
	}{
		{"two pairs on two threads", 4, 4, twoPairs, nil, 2, [][]int{{0, 1}, {2, 3}}, [][]int{{0, 1}, {2, 3}}},
		{"two pairs on one thread", 4, 4, twoPairs, nil, 1, [][]int{{0, 1, 2, 3}}, [][]int{{0, 1, 2, 3}}},
		{"one pair on two threads: a direction each", 2, 2, map[[2]int][]int{{0, 1}: {0}, {1, 0}: {1}}, nil, 2,
			[][]int{{0}, {1}}, [][]int{{0}, {1}}},
		{"a shared uplink keeps its senders together", 3, 2, map[[2]int][]int{{0, 2}: {0}, {1, 2}: {0}, {2, 0}: {1}, {2, 1}: {1}}, nil, 4,
			[][]int{{0, 1}, {2}}, [][]int{{0}, {1}}},
		{"an unused direction goes with the first port", 4, 3, map[[2]int][]int{{2, 3}: {1}, {3, 2}: {2}}, nil, 3,
			[][]int{{0}, {1}, {2, 3}}, [][]int{{0}, nil, {1, 2}}},
		{"an empty path", 2, 0, map[[2]int][]int{{0, 1}: {}}, nil, 2, [][]int{{0}, {1}}, [][]int{nil, nil}},
		{"joined directions run on one thread, with their senders", 4, 4, twoPairs, [][]int{{1, 3}}, 2,
			[][]int{{0, 2}, {1, 3}}, [][]int{{0, 2}, {1, 3}}},
		{"a joined direction on no path goes with its group", 4, 5, twoPairs, [][]int{{2, 4}}, 2,
			[][]int{{0, 1}, {2, 3}}, [][]int{{0, 1}, {2, 3, 4}}},
		{"a joined group on no path goes with the first port", 4, 4, map[[2]int][]int{{2, 3}: {0}, {3, 2}: {1}}, [][]int{{2, 3}}, 3,
			[][]int{{0}, {1}, {2, 3}}, [][]int{{2, 3}, nil, {0, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ports, dirs [][]int
			for _, b := range shardGroups(tt.ports, tt.dirs, tt.paths, tt.joined, tt.threads) {
				ports, dirs = append(ports, b.ports), append(dirs, b.dirs)
			}
			if !reflect.DeepEqual(ports, tt.wantPorts) || !reflect.DeepEqual(dirs, tt.wantDirs) {
				t.Errorf("ports %v, directions %v; want %v, %v", ports, dirs, tt.wantPorts, tt.wantDirs)
			}
		})
	}
}

// Two links on two threads behave as on one: delays, counters and
// changes in the Engine's own numbering, captures on either thread.
func TestEngineThreads(t *testing.T) {
	const delay = 10 * time.Millisecond
	dirs := []DirConfig{{Name: "a->b", Delay: delay}, {Name: "b->a", Delay: delay}, {Name: "c->d", Delay: delay}, {Name: "d->c", Delay: delay}}
	paths := map[[2]int][]int{{0, 1}: {0}, {1, 0}: {1}, {2, 3}: {2}, {3, 2}: {3}}
	tn := startNetWith(t, Config{Dirs: dirs, Paths: paths, Seed: 1, MaxPacket: 1500, Threads: 2}, 4)
	if n := tn.eng.Stats().Threads; n != 2 {
		t.Fatalf("%d threads, want 2", n)
	}
	c, err := tn.eng.StartCapture([]int{2}, 64)
	if err != nil {
		t.Fatal(err)
	}
	// A capture across both threads that finds one direction taken
	// leaves the other free.
	if _, err := tn.eng.StartCapture([]int{0, 2}, 64); err == nil {
		t.Error("a second capture of direction 2 was started")
	}
	if c0, err := tn.eng.StartCapture([]int{0}, 64); err != nil {
		t.Errorf("direction 0 after a failed capture: %v", err)
	} else {
		tn.eng.StopCapture(c0)
	}
	for _, pair := range [][2]int{{0, 1}, {2, 3}, {3, 2}} {
		sent := time.Now()
		tn.send(t, pair[0], packet(pair[0], pair[1], 300, uint32(pair[0])))
		got, ok := tn.recv(pair[1], 2*time.Second)
		if !ok {
			t.Fatalf("%v: the packet never arrived", pair)
		}
		if took := time.Since(sent); took < delay {
			t.Errorf("%v: arrived after %v, before the delay", pair, took)
		}
		if s := binary.BigEndian.Uint32(got[20:]); s != uint32(pair[0]) {
			t.Errorf("%v: got packet %d", pair, s)
		}
	}
	st := tn.eng.Stats()
	for i, want := range []uint64{1, 0, 1, 1} {
		if st.Dirs[i].Name != dirs[i].Name || st.Dirs[i].Packets != want {
			t.Errorf("direction %d: %s with %d packets, want %s with %d", i, st.Dirs[i].Name, st.Dirs[i].Packets, dirs[i].Name, want)
		}
	}
	if st.Ports[3].Name != "d" || st.Ports[3].RxPackets != 1 || st.Ports[3].TxPackets != 1 {
		t.Errorf("port 3: %+v", st.Ports[3])
	}
	if err := tn.eng.Set(3, DirConfig{Delay: 2 * delay}); err != nil {
		t.Fatal(err)
	}
	applied := tn.eng.Applied()
	for end := time.Now().Add(time.Second); len(applied) == 0 && time.Now().Before(end); applied = tn.eng.Applied() {
		time.Sleep(time.Millisecond)
	}
	if len(applied) != 1 || applied[0].Dir != 3 {
		t.Errorf("applied %+v, want direction 3 once", applied)
	}
	if got := tn.eng.Settings(); got[3].Delay != 2*delay || got[3].Name != "d->c" || got[2].Delay != delay {
		t.Errorf("settings after Set(3): %+v", got)
	}
	var captured []CapturedPacket
	c.Read(func(p CapturedPacket) error { captured = append(captured, p); return nil })
	if len(captured) != 1 || captured[0].Dir != 2 {
		t.Errorf("captured %+v, want one packet on direction 2", captured)
	}
	tn.eng.StopCapture(c)
	for end := time.Now().Add(time.Second); st.Lateness.Count < 3 && time.Now().Before(end); st = tn.eng.Stats() {
		time.Sleep(time.Millisecond)
	}
	if st.Lateness.Count != 3 || st.IO.Writes != 3 {
		t.Errorf("lateness of %d deliveries, %d writes; want 3 from both threads", st.Lateness.Count, st.IO.Writes)
	}
}

// One link on two threads, a direction each: each thread delivers into
// the host the other reads, and a capture of both directions comes back
// in time order.
func TestEngineThreadsSplitALink(t *testing.T) {
	const delay = 5 * time.Millisecond
	dirs := []DirConfig{{Name: "a->b", Delay: delay}, {Name: "b->a", Delay: delay}}
	tn := startNetWith(t, Config{Dirs: dirs, Paths: map[[2]int][]int{{0, 1}: {0}, {1, 0}: {1}}, Seed: 1, MaxPacket: 1500, Threads: 2}, 2)
	if n := tn.eng.Stats().Threads; n != 2 {
		t.Fatalf("%d threads, want 2", n)
	}
	c, err := tn.eng.StartCapture([]int{0, 1}, 64)
	if err != nil {
		t.Fatal(err)
	}
	for seq := range uint32(4) {
		from, to := int(seq%2), int(1-seq%2)
		tn.send(t, from, packet(from, to, 100, seq))
		got, ok := tn.recv(to, 2*time.Second)
		if !ok || binary.BigEndian.Uint32(got[20:]) != seq {
			t.Fatalf("packet %d from %d to %d: %v %v", seq, from, to, ok, got)
		}
	}
	time.Sleep(20 * time.Millisecond) // the last write's counters
	var seqs []uint32
	var dirsSeen []int
	c.Read(func(p CapturedPacket) error {
		seqs = append(seqs, binary.BigEndian.Uint32(p.Data[20:]))
		dirsSeen = append(dirsSeen, p.Dir)
		return nil
	})
	if !reflect.DeepEqual(seqs, []uint32{0, 1, 2, 3}) || !reflect.DeepEqual(dirsSeen, []int{0, 1, 0, 1}) {
		t.Errorf("captured packets %v on directions %v, want 0-3 alternating a->b and b->a", seqs, dirsSeen)
	}
	tn.eng.StopCapture(c)
	st := tn.eng.Stats()
	for i, p := range st.Ports {
		if p.RxPackets != 2 || p.TxPackets != 2 {
			t.Errorf("port %d: %+v, want 2 packets each way", i, p)
		}
	}
	if st.Dirs[0].Packets != 2 || st.Dirs[1].Packets != 2 {
		t.Errorf("directions %+v, want 2 packets each", st.Dirs)
	}
}
