package mesh

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/workload/job"
)

func TestPickFollowsWeights(t *testing.T) {
	peers := []Peer{{Name: "slow", Weight: 8}, {Name: "fast", Weight: 155}, {Name: "none", Weight: 0}}
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	const n = 100000
	for range n {
		counts[pick(peers, rng.Float64()*163).Name]++
	}
	if counts["none"] != 0 {
		t.Errorf("a peer of weight 0 was picked %d times", counts["none"])
	}
	if got, want := float64(counts["slow"])/n, 8.0/163; got < want*0.9 || got > want*1.1 {
		t.Errorf("slow picked %.4f of the time, want %.4f", got, want)
	}
}

// TestLoopTransfersAndChecks runs a node's loop against a peer, from memory
// and from disk to disk, through the page cache and around it (a node
// whose disk is capped); the source file is smaller than a stream's share
// in the last case, so reads wrap around it.
func TestLoopTransfersAndChecks(t *testing.T) {
	for _, tc := range []struct {
		name           string
		disk, uncached bool
		largest        int64
	}{{"memory", false, false, 0}, {"disk", true, false, 1 << 20}, {"disk uncached", true, true, 256 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mine, theirs *Files
			if tc.disk {
				var err error
				if mine, err = OpenFiles(t.TempDir(), tc.largest, tc.uncached); err != nil {
					t.Skipf("no disk files here: %v", err) // O_DIRECT is refused on tmpfs
				}
				defer mine.Close()
				if theirs, err = OpenFiles(t.TempDir(), tc.largest, tc.uncached); err != nil {
					t.Fatal(err)
				}
				defer theirs.Close()
			}
			srv, err := Listen(0)
			if err != nil {
				t.Fatal(err)
			}
			srv.Files = theirs
			go srv.Serve(ctx)
			var mu sync.Mutex
			var recs []job.Record
			spec := NodeSpec{
				Host:  "a",
				Peers: []Peer{{Name: "b", Address: fmt.Sprintf("127.0.0.1:%d", srv.Port()), Weight: 1}},
				Sizes: []int64{3 << 20, 1<<20 + 7}, Streams: 4, MaxWait: 10 * time.Millisecond, Duration: 300 * time.Millisecond, Seed: 1,
			}
			sum, err := Loop(ctx, spec, mine, func(r job.Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() })
			if err != nil {
				t.Fatal(err)
			}
			if sum.Transfers == 0 || sum.Failed != 0 || len(recs) != sum.Transfers {
				t.Fatalf("summary %+v, %d records: %+v", sum, len(recs), recs)
			}
			for _, r := range recs {
				if r.Status != job.OK || (r.Bytes != 2*(3<<20) && r.Bytes != 2*(1<<20+7)) || r.Subject != "a<->b" || r.TCPRTTms <= 0 {
					t.Errorf("record %+v", r)
				}
			}
			if tc.disk {
				for _, f := range []*Files{mine, theirs} {
					if left, _ := filepath.Glob(filepath.Join(f.dir, "mesh-in-*")); len(left) > 0 {
						t.Errorf("received files left behind: %v", left)
					}
				}
			}
		})
	}
}

func TestUnreachablePeerFails(t *testing.T) {
	spec := NodeSpec{Host: "a", Peers: []Peer{{Name: "b", Address: "127.0.0.1:1", Weight: 1}}, Sizes: []int64{1000}, Streams: 2, Duration: 50 * time.Millisecond}
	var recs []job.Record
	sum, err := Loop(context.Background(), spec, nil, func(r job.Record) { recs = append(recs, r) })
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed == 0 || recs[0].Status != job.Failed {
		t.Fatalf("summary %+v, first %+v", sum, recs[0])
	}
}

func TestCorruptionIsDetected(t *testing.T) {
	// A peer whose checksum disagrees with what was sent (as if bits were
	// lost on the way) makes the transfer corrupt, not ok.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var h [headerSz]byte
				io.ReadFull(c, h[:])
				io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint64(h[5:])))
				c.Write(make([]byte, sha256.Size))
			}()
		}
	}()
	spec := NodeSpec{Host: "a", Peers: []Peer{{Name: "b", Address: ln.Addr().String(), Weight: 1}}, Sizes: []int64{10000}, Streams: 2, Duration: 20 * time.Millisecond}
	var recs []job.Record
	if _, err := Loop(context.Background(), spec, nil, func(r job.Record) { recs = append(recs, r) }); err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || recs[0].Status != job.Corrupt {
		t.Fatalf("records %+v, want the first corrupt", recs)
	}
}

// TestLoopWaitsForLatePeer: a peer that starts listening 300 ms after the
// node (as one writing its source file to a slow disk does) costs no failed
// transfer: the loop starts once every peer listens.
func TestLoopWaitsForLatePeer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	probe, err := Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Port()
	probe.ln.Close()
	go func() {
		time.Sleep(300 * time.Millisecond)
		srv, err := Listen(port)
		if err != nil {
			t.Error(err)
			return
		}
		srv.Serve(ctx)
	}()
	spec := NodeSpec{Host: "a", Peers: []Peer{{Name: "late", Address: fmt.Sprintf("127.0.0.1:%d", port), Weight: 1}},
		Sizes: []int64{1 << 20}, Streams: 2, MaxWait: 10 * time.Millisecond, Duration: 500 * time.Millisecond, Seed: 3}
	// Without the wait, the first transfers (within 10 ms) would be refused.
	sum, err := Loop(ctx, spec, nil, func(job.Record) {})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Transfers == 0 || sum.Failed != 0 {
		t.Errorf("summary %+v: want transfers and none failed", sum)
	}
}
