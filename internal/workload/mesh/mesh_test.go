package mesh

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/token"
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
				if mine, err = OpenFiles(context.Background(), testsupport.TempRoot(t), tc.largest, tc.uncached); err != nil {
					t.Skipf("no disk files here: %v", err) // O_DIRECT is refused on tmpfs
				}
				defer mine.Close()
				if theirs, err = OpenFiles(context.Background(), testsupport.TempRoot(t), tc.largest, tc.uncached); err != nil {
					t.Fatal(err)
				}
				defer theirs.Close()
			}
			srv, err := Listen(0, bind.Local{Addr: "127.0.0.1"}, token.Token{}, 4<<20)
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
					if left, _ := filepath.Glob(filepath.Join(f.dir.Name(), "mesh-in-*")); len(left) > 0 {
						t.Errorf("received files left behind: %v", left)
					}
				}
			}
		})
	}
}

// TestDeadPeerIsNotHammered: a node whose peer is gone backs off between
// failed transfers, even with max_wait 0 (it used to log thousands of
// failures a second).
func TestDeadPeerIsNotHammered(t *testing.T) {
	spec := NodeSpec{Host: "a", Peers: []Peer{{Name: "b", Address: "127.0.0.1:1", Weight: 1}}, Sizes: []int64{1000}, Streams: 2, Duration: time.Second}
	sum, err := Loop(context.Background(), spec, nil, func(job.Record) {})
	if err != nil {
		t.Fatal(err)
	}
	// 100, 200, 400 ms... in a second: at most a handful.
	if sum.Failed == 0 || sum.Failed > 5 {
		t.Errorf("%d failed transfers in 1 s against a dead peer, want 1 to 5", sum.Failed)
	}
}

// TestServerRefusesOverlongStreams: a peer may not ask a node to send or
// store more than its transfers ever carry.
func TestServerRefusesOverlongStreams(t *testing.T) {
	for _, op := range []byte{opPut, opGet} {
		var h [headerSz]byte
		copy(h[:], magic[:])
		h[4] = op
		binary.BigEndian.PutUint64(h[5:], 1<<40)
		conn := &fakeConn{in: bytes.NewReader(h[:])}
		if err := serveStream(conn, nil, 1<<20); err == nil || !strings.Contains(err.Error(), "over this node's") {
			t.Errorf("op %d of 1 TiB: %v, want a refusal", op, err)
		}
		if conn.out.Len() > 0 {
			t.Errorf("op %d: the node sent %d bytes to a refused stream", op, conn.out.Len())
		}
	}
}

// fakeConn is one stream: what the peer sent, and what the node answers.
type fakeConn struct {
	in  io.Reader
	out bytes.Buffer
}

func (c *fakeConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *fakeConn) Write(p []byte) (int, error) { return c.out.Write(p) }

// FuzzServeStream feeds arbitrary bytes to a node as a peer's stream: it
// never answers with more than the stream's bound plus its checksum.
func FuzzServeStream(f *testing.F) {
	var h [headerSz]byte
	copy(h[:], magic[:])
	h[4] = opGet
	binary.BigEndian.PutUint64(h[5:], 100)
	f.Add(h[:])
	h[4] = opPut
	f.Add(append(h[:], make([]byte, 100)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		const bound = 4096
		conn := &fakeConn{in: bytes.NewReader(data)}
		serveStream(conn, nil, bound)
		if conn.out.Len() > bound+sha256.Size {
			t.Fatalf("answered %d bytes to a %d-byte stream", conn.out.Len(), len(data))
		}
	})
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
				token.Check(c, token.Token{}, time.Second) // the test's token: zero here
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
	probe, err := Listen(0, bind.Local{Addr: "127.0.0.1"}, token.Token{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Port()
	probe.ln.Close()
	go func() {
		time.Sleep(300 * time.Millisecond)
		srv, err := Listen(port, bind.Local{Addr: "127.0.0.1"}, token.Token{}, 1<<20)
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
