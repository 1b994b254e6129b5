// Package mesh is the random transfer mesh of the ALICE network stress tests
// (../shared/seeds/001_2d5b2234787d14ca.txt): every node waits a random
// time, picks a peer with probability proportional to its weight (its site's
// bandwidth), picks a file size, sends that many bytes there and has them
// sent back, each way over parallel streams, checks with SHA-256 that not a
// bit was lost, logs the transfer, and starts again until its time is up.
// It is one unit, registered as Kind: the step's settings and their checks
// (spec.go), its driver (run.go), the node's agent role (role.go) and what
// analysis reads of it (capabilities.go).
package mesh

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// Peer is a node a transfer can go to.
type Peer struct {
	Name    string  `json:"name"`
	Address string  `json:"address"` // host:port
	Weight  float64 `json:"weight"`
}

// NodeSpec configures one node's loop.
type NodeSpec struct {
	Host     string        `json:"host"`
	Peers    []Peer        `json:"peers"`
	Sizes    []int64       `json:"sizes"`
	Streams  int           `json:"streams"`
	MaxWait  time.Duration `json:"max_wait"`
	Duration time.Duration `json:"duration"`
	Seed     uint64        `json:"seed"`
	// FirstJob numbers this node's transfers FirstJob, FirstJob+1, ...
	FirstJob int `json:"first_job"`
	// Token is the mesh's: every node presents it and checks it.
	Token token.Token `json:"token"`
}

// Validate says what is wrong with the spec or over the limits.
func (s NodeSpec) Validate(l limits.Limits) error {
	total := 0.0
	for _, p := range s.Peers {
		if p.Weight < 0 {
			return fmt.Errorf("peer %s has a negative weight", p.Name)
		}
		total += p.Weight
	}
	switch {
	case len(s.Peers) == 0:
		return errors.New("no peers to send to")
	case total == 0:
		return errors.New("every peer has weight 0")
	case len(s.Sizes) == 0:
		return errors.New("no file sizes")
	case s.MaxWait < 0 || s.Duration <= 0:
		return fmt.Errorf("max_wait must not be negative and duration must be positive (got %v, %v)", s.MaxWait, s.Duration)
	}
	if err := errors.Join(l.Streams(s.Streams), l.Duration("duration", s.Duration), l.Duration("max_wait", s.MaxWait),
		l.Connections("peers", len(s.Peers))); err != nil {
		return err
	}
	for _, sz := range s.Sizes {
		if sz < int64(s.Streams) {
			return fmt.Errorf("file size %d B is smaller than one byte per stream (%d streams)", sz, s.Streams)
		}
		if err := l.Bytes("file size", sz); err != nil {
			return err
		}
	}
	return nil
}

// Wire format: each stream opens with [magic][op u8][length u64][seed
// u64]. For a put the client then sends length bytes and the server answers
// with the SHA-256 of what it received; for a get the server sends length
// bytes followed by the SHA-256 of what it sent.
var magic = [4]byte{'W', 'L', 'M', 'S'}

const (
	opPut    = 1
	opGet    = 2
	headerSz = 4 + 1 + 8 + 8
)

// pattern is the content every node generates: a stream with seed s sends
// pattern bytes starting at offset s mod its length, cyclically.
var pattern = func() []byte {
	b := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{'m', 'e', 's', 'h'}).Read(b)
	return b
}()

// Server answers the streams of other nodes' transfers.
type Server struct {
	ln    net.Listener
	token token.Token
	// Files, when set, makes the transfers disk to disk (see OpenFiles).
	Files *Files
	// maxLength bounds what one stream may ask to put or get.
	maxLength int64
	// MaxConnections bounds the streams served at once (0: the agent's
	// default limit of connections).
	MaxConnections int
	// Expect is how many streams the mesh's other nodes open to this one
	// at once (NodeSpec.Connections; 0: MaxConnections).
	Expect int
}

// Listen opens a node's port (0 picks a free one) at (the host's test
// address) for the streams of the test t, of at most maxLength bytes each:
// the largest share of a file one stream carries.
func Listen(port int, at bind.Local, t token.Token, maxLength int64) (*Server, error) {
	at, err := at.Port(port)
	if err != nil {
		return nil, fmt.Errorf("mesh node: %w", err)
	}
	ln, err := at.Listen(net.ListenConfig{})
	if err != nil {
		return nil, fmt.Errorf("mesh node: %w", err)
	}
	return &Server{ln: ln, token: t, maxLength: maxLength}, nil
}

// MaxStreamLength is the most one stream of spec's transfers carries.
func (s NodeSpec) MaxStreamLength() int64 {
	var largest int64
	for _, sz := range s.Sizes {
		largest = max(largest, sz)
	}
	return largest/int64(max(s.Streams, 1)) + 1
}

// Connections is how many connections the node's peers open to it at
// once: a node moves one transfer at a time over Streams streams, and its
// first may overlap the empty connection with which it awaited its peers;
// its peers are the mesh's other nodes.
func (s NodeSpec) Connections() int { return len(s.Peers) * (max(s.Streams, 1) + 1) }

// Port is the port the node listens on.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Serve answers streams that present the test's token, at most
// MaxConnections at once, until ctx ends.
func (s *Server) Serve(ctx context.Context) {
	limit := s.MaxConnections
	if limit <= 0 {
		limit = limits.Default.MaxConnections
	}
	job.Serve(ctx, token.NewListener(s.ln, s.token, token.Options{Expect: s.expect(limit)}), limit, func(c net.Conn) {
		serveStream(c, s.Files, s.maxLength)
	})
}

// expect is how many streams the node's listener lets in at once
// awaiting their token, serving at most limit at once.
func (s *Server) expect(limit int) int {
	if s.Expect > 0 {
		return min(s.Expect, limit)
	}
	return limit
}

// serveStream answers one stream of a peer's transfer, of at most maxLength bytes.
func serveStream(c io.ReadWriter, files *Files, maxLength int64) error {
	r := bufio.NewReaderSize(c, 256<<10)
	var h [headerSz]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return err
	}
	if [4]byte(h[:4]) != magic {
		return errors.New("not a mesh stream")
	}
	length := binary.BigEndian.Uint64(h[5:])
	seed := binary.BigEndian.Uint64(h[13:])
	if length > uint64(maxLength) {
		return fmt.Errorf("a stream of %d bytes, over this node's %d", length, maxLength)
	}
	switch h[4] {
	case opPut:
		hash := sha256.New()
		if err := receive(files, r, int64(length), hash); err != nil {
			return err
		}
		_, err := c.Write(hash.Sum(nil))
		return err
	case opGet:
		hash := sha256.New()
		if err := send(files, io.MultiWriter(c, hash), seed, int64(length)); err != nil {
			return err
		}
		_, err := c.Write(hash.Sum(nil))
		return err
	}
	return fmt.Errorf("unknown mesh operation %d", h[4])
}

// send writes length bytes chosen by seed: from the node's source file, or
// with no files, of the pattern in memory from offset seed.
func send(files *Files, w io.Writer, seed uint64, length int64) error {
	if files != nil {
		return files.send(w, seed, length)
	}
	off := int(seed % uint64(len(pattern)))
	for length > 0 {
		chunk := pattern[off:min(len(pattern), off+256<<10)]
		if int64(len(chunk)) > length {
			chunk = chunk[:length]
		}
		n, err := w.Write(chunk)
		if err != nil {
			return err
		}
		length -= int64(n)
		off = (off + n) % len(pattern)
	}
	return nil
}

// receive reads length bytes from r into hash, and with files also onto
// the node's disk.
func receive(files *Files, r io.Reader, length int64, hash io.Writer) error {
	if files != nil {
		return files.receive(r, length, hash)
	}
	_, err := io.CopyN(hash, r, length)
	return err
}

// Summary is what one node's loop did.
type Summary struct {
	Transfers int   `json:"transfers"`
	Failed    int   `json:"failed"`
	Bytes     int64 `json:"bytes"`
}

// Loop transfers files to peers until the spec's duration is up (a transfer
// under way then finishes), reporting each, and returns the totals; files,
// if not nil, makes the transfers disk to disk. Cancelling ctx stops it at
// once.
func Loop(ctx context.Context, spec NodeSpec, files *Files, report func(job.Record)) (Summary, error) {
	var sum Summary
	if err := spec.Validate(limits.Unlimited); err != nil {
		return sum, err
	}
	rng := rand.New(rand.NewPCG(spec.Seed, 0x6d657368))
	total := 0.0
	for _, p := range spec.Peers {
		total += p.Weight
	}
	awaitPeers(ctx, spec.Peers, min(PeerWait, spec.Duration))
	deadline := time.Now().Add(spec.Duration)
	var backoff time.Duration // after failures in a row, so a dead peer is not hammered
	for id := spec.FirstJob; ; id++ {
		wait := max(time.Duration(rng.Float64()*float64(spec.MaxWait)), backoff)
		if time.Now().Add(wait).After(deadline) {
			return sum, nil
		}
		select {
		case <-ctx.Done():
			return sum, nil
		case <-time.After(wait):
		}
		peer := pick(spec.Peers, rng.Float64()*total)
		size := spec.Sizes[rng.IntN(len(spec.Sizes))]
		rec := job.Record{ID: id, Host: spec.Host, Subject: spec.Host + "<->" + peer.Name, Start: time.Now()}
		var err error
		rec.Bytes, err = transfer(ctx, files, peer.Address, spec.Token, size, spec.Streams, rng.Uint64(), &rec)
		rec.End = time.Now()
		switch {
		case err == nil:
			rec.Status = job.OK
		case ctx.Err() != nil:
			rec.Status, rec.Reason = job.Cancelled, "the run was stopped"
		case errors.Is(err, errCorrupt):
			rec.Status, rec.Reason = job.Corrupt, err.Error()
		default:
			rec.Status, rec.Reason = job.Failed, err.Error()
		}
		sum.Transfers++
		sum.Bytes += rec.Bytes
		if rec.Status != job.OK {
			sum.Failed++
			backoff = min(MaxBackoff, max(MinBackoff, 2*backoff))
		} else {
			backoff = 0
		}
		report(rec)
		if ctx.Err() != nil {
			return sum, nil
		}
	}
}

// After a failed transfer a node waits at least MinBackoff before the next,
// doubling with each failure in a row up to MaxBackoff.
const (
	MinBackoff = 100 * time.Millisecond
	MaxBackoff = 5 * time.Second
)

// PeerWait is the longest a node waits for its peers to listen before its
// loop starts (at most its duration): nodes come up one by one, and one
// writing its source file to a slow disk may take a while.
const PeerWait = 5 * time.Minute

// awaitPeers returns once every peer accepts a connection, as the seed's
// servers were all up before the test began, so that no early transfer
// fails against a peer still starting; or after wait, or when ctx ends. A
// peer that never listens is then the loop's to find: its transfers fail,
// each with its reason.
func awaitPeers(ctx context.Context, peers []Peer, wait time.Duration) {
	deadline := time.Now().Add(wait)
	var d net.Dialer
	for _, p := range peers {
		for ctx.Err() == nil && time.Now().Before(deadline) {
			dctx, cancel := context.WithTimeout(ctx, time.Second)
			c, err := d.DialContext(dctx, "tcp", p.Address)
			cancel()
			if err == nil {
				c.Close()
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func pick(peers []Peer, x float64) Peer {
	for _, p := range peers {
		if x < p.Weight {
			return p
		}
		x -= p.Weight
	}
	return peers[len(peers)-1]
}

var errCorrupt = errors.New("checksum mismatch")

// transfer sends size bytes to addr over streams and has them sent back,
// and returns the bytes moved; rec gets the connections' TCP figures.
func transfer(ctx context.Context, files *Files, addr string, t token.Token, size int64, streams int, seed uint64, rec *job.Record) (int64, error) {
	var moved int64
	for _, op := range []byte{opPut, opGet} {
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for i := range streams {
			lo, hi := size*int64(i)/int64(streams), size*int64(i+1)/int64(streams)
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, info, err := stream(ctx, files, addr, t, op, hi-lo, seed+uint64(lo))
				mu.Lock()
				moved += n
				rec.AddTCP(info, 2*streams)
				if err != nil {
					errs = append(errs, fmt.Errorf("stream %d: %w", i+1, err))
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			way := "there"
			if op == opGet {
				way = "back"
			}
			return moved, fmt.Errorf("%s to %s: %w", way, addr, errors.Join(errs...))
		}
	}
	return moved, nil
}

// stream moves one stream's share of a transfer and returns the bytes it
// moved and its connection's TCP_INFO at the end.
func stream(ctx context.Context, files *Files, addr string, t token.Token, op byte, length int64, seed uint64) (n int64, info job.TCPInfo, err error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, info, err
	}
	defer c.Close()
	defer func() { info, _ = job.ReadTCPInfo(c) }()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	var h [headerSz]byte
	copy(h[:], magic[:])
	h[4] = op
	binary.BigEndian.PutUint64(h[5:], uint64(length))
	binary.BigEndian.PutUint64(h[13:], seed)
	if _, err := c.Write(append(t.Greeting(), h[:]...)); err != nil {
		return 0, info, err
	}
	if op == opGet {
		if err := token.ReadProof(c, t); err != nil {
			return 0, info, err
		}
	}
	hash := sha256.New()
	var peerSum [sha256.Size]byte
	if op == opPut {
		if err := send(files, io.MultiWriter(c, hash), seed, length); err != nil {
			return 0, info, err
		}
		if err := token.ReadProof(c, t); err != nil {
			return length, info, err
		}
		if _, err := io.ReadFull(c, peerSum[:]); err != nil {
			return length, info, fmt.Errorf("waiting for the peer's checksum: %w", err)
		}
	} else {
		r := bufio.NewReaderSize(c, 256<<10)
		if err := receive(files, r, length, hash); err != nil {
			return 0, info, err
		}
		if _, err := io.ReadFull(r, peerSum[:]); err != nil {
			return length, info, fmt.Errorf("reading the peer's checksum: %w", err)
		}
	}
	if [sha256.Size]byte(hash.Sum(nil)) != peerSum {
		return length, info, errCorrupt
	}
	return length, info, nil
}
