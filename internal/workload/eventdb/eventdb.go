// Package eventdb is the event-store workload of the Objectivity/AMS tests
// (../shared/seeds/000_5c504ee7065da5e7.txt): a server holding a read-only
// store of events laid out in fixed-size pages, and client jobs that each open
// a session and read their events page by page, one request at a time, as an
// AMS client did. Server and client can spend CPU per page and per event to
// stand in for a heavy implementation; the server can serve one request at a
// time (AMS 5.1), a fixed pool of threads, or every connection at once. A
// step may have several servers, each holding the same store, each client
// reading from one of them (servers.go).
//
// The package is the whole eventdb kind (issue 32), registered in
// internal/workload/kinds as Kind: its settings and their checks
// (spec.go, servers.go), the driver that starts a step's servers and
// clients through kind.Env (run.go), the agent roles that serve and read
// the store (roles.go), what analysis reads of its steps
// (capabilities.go), and its simulation model (model.go, fit.go).
package eventdb

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// Store is the geometry of the event store: Events events of EventSize
// bytes, stored back to back in pages of PageSize bytes.
type Store struct {
	Events    int   `json:"events"`
	EventSize int64 `json:"event_size"`
	PageSize  int   `json:"page_size"`
}

// Validate says what makes a store impossible: it may hold at most
// l.MaxBytes.
func (s Store) Validate(l limits.Limits) error {
	switch {
	case s.Events <= 0:
		return fmt.Errorf("events must be at least 1 (got %d)", s.Events)
	case s.EventSize <= 0:
		return fmt.Errorf("event_size must be positive (got %d)", s.EventSize)
	case s.PageSize < 64 || s.PageSize > 1<<20:
		return fmt.Errorf("page_size must be between 64 B and 1 MiB (got %d B)", s.PageSize)
	case int64(s.PageSize) > s.EventSize:
		return fmt.Errorf("pages (%d B) are larger than events (%d B): an event must span at least one page", s.PageSize, s.EventSize)
	}
	return l.BytesTimes("the store", int64(s.Events), s.EventSize)
}

// Pages is the number of pages the store occupies.
func (s Store) Pages() int64 {
	return (int64(s.Events)*s.EventSize + int64(s.PageSize) - 1) / int64(s.PageSize)
}

// eventPages returns the first and last page holding event e.
func (s Store) eventPages(e int) (first, last int64) {
	start := int64(e) * s.EventSize
	return start / int64(s.PageSize), (start + s.EventSize - 1) / int64(s.PageSize)
}

// Server concurrency models.
const (
	ModelSingle     = "single"     // one request at a time, like AMS 5.1
	ModelThreads    = "threads"    // a pool of Threads requests at a time
	ModelConnection = "connection" // every connection served at once
)

// ServerSpec configures a server.
type ServerSpec struct {
	Store
	Model   string `json:"model"`
	Threads int    `json:"threads,omitempty"`
	// CPUPerPage is CPU time spent serving each page.
	CPUPerPage time.Duration `json:"cpu_per_page,omitempty"`
	// Port to listen on; 0 picks a free one.
	Port int `json:"port,omitempty"`
	// Sessions is how many sessions the step's clients open at once (its
	// clients times their jobs): as many may await their token at once
	// from one host (0: as many as the server serves at once).
	Sessions int `json:"sessions,omitempty"`
	// Token is the test's: a session that does not open with it is not served.
	Token token.Token `json:"token"`
}

// Validate says what is wrong with the spec or over the limits.
func (s ServerSpec) Validate(l limits.Limits) error {
	if err := s.Store.Validate(l); err != nil {
		return err
	}
	if err := l.Duration("cpu_per_page", s.CPUPerPage); err != nil {
		return err
	}
	if s.Sessions < 0 {
		return fmt.Errorf("sessions must not be negative (got %d)", s.Sessions)
	}
	switch s.Model {
	case ModelSingle, ModelConnection:
	case ModelThreads:
		if s.Threads < 1 {
			return fmt.Errorf("model threads needs threads >= 1 (got %d)", s.Threads)
		}
		if err := l.Connections("threads", s.Threads); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown server model %q (single, threads or connection)", s.Model)
	}
	return nil
}

// expect is how many sessions the server's listener lets in at once
// awaiting their token, serving at most conns at once.
func (s ServerSpec) expect(conns int) int {
	if s.Sessions > 0 {
		return min(s.Sessions, conns)
	}
	return conns
}

// ServerTotals is what a server did.
type ServerTotals struct {
	Sessions int64 `json:"sessions"`
	Pages    int64 `json:"pages"`
	Bytes    int64 `json:"bytes"` // user data sent: pages x page size
	Errors   int64 `json:"errors"`
}

// Wire format. A session opens with the client's hello (magic, job id) and
// the server's reply (magic, pages, page size); then the client sends 8-byte
// page numbers and the server answers each with the page. A page starts with
// its own number so the client can check it got the page it asked for.
var magic = [4]byte{'W', 'L', 'E', 'V'}

const helloLen = 12

// Server serves one store.
type Server struct {
	spec   ServerSpec
	ln     net.Listener
	conns  int           // sessions at once: the agent's connection limit
	gate   chan struct{} // nil: no limit
	data   []byte        // the store's bytes repeat this block
	totals struct{ sessions, pages, bytes, errors atomic.Int64 }
}

// Listen opens the server's port at (the host's test address).
func Listen(spec ServerSpec, l limits.Limits, at bind.Local) (*Server, error) {
	if err := spec.Validate(l); err != nil {
		return nil, err
	}
	at, err := at.Port(spec.Port)
	if err != nil {
		return nil, fmt.Errorf("event server: %w", err)
	}
	ln, err := at.Listen(net.ListenConfig{})
	if err != nil {
		return nil, fmt.Errorf("event server: %w", err)
	}
	s := &Server{spec: spec, ln: ln, conns: l.MaxConnections, data: make([]byte, 1<<20+spec.PageSize)}
	rand.NewChaCha8([32]byte{1}).Read(s.data)
	switch spec.Model {
	case ModelSingle:
		s.gate = make(chan struct{}, 1)
	case ModelThreads:
		s.gate = make(chan struct{}, spec.Threads)
	}
	return s, nil
}

// Port is the port the server listens on.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Serve serves sessions that open with the test's token, as many at once
// as the connection limit allows, until ctx ends; then it closes every
// session and returns what it did.
func (s *Server) Serve(ctx context.Context) ServerTotals {
	job.Serve(ctx, token.NewListener(s.ln, s.spec.Token, token.Options{Expect: s.spec.expect(s.conns)}), s.conns, func(c net.Conn) {
		if err := s.session(c); err != nil && ctx.Err() == nil {
			s.totals.errors.Add(1)
		}
	})
	return ServerTotals{Sessions: s.totals.sessions.Load(), Pages: s.totals.pages.Load(), Bytes: s.totals.bytes.Load(), Errors: s.totals.errors.Load()}
}

// session serves one client whose connection presented the token.
func (s *Server) session(c net.Conn) error {
	r := bufio.NewReader(c)
	var hello [helloLen]byte
	if _, err := io.ReadFull(r, hello[:]); err != nil {
		return err
	}
	if [4]byte(hello[:4]) != magic {
		return errors.New("not an eventdb client")
	}
	s.totals.sessions.Add(1)
	var reply [16]byte
	copy(reply[:4], magic[:])
	binary.BigEndian.PutUint64(reply[4:], uint64(s.spec.Pages()))
	binary.BigEndian.PutUint32(reply[12:], uint32(s.spec.PageSize))
	if _, err := c.Write(reply[:]); err != nil {
		return err
	}
	page := make([]byte, s.spec.PageSize)
	var req [8]byte
	for {
		if _, err := io.ReadFull(r, req[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the client closed its session
			}
			return err
		}
		n := binary.BigEndian.Uint64(req[:])
		if n >= uint64(s.spec.Pages()) {
			return fmt.Errorf("page %d is beyond the store", n)
		}
		if err := s.serve(c, n, page); err != nil {
			return err
		}
	}
}

// serve sends one page, holding a slot of the server's concurrency model
// for the CPU work and the write, as a server thread would.
func (s *Server) serve(c net.Conn, n uint64, page []byte) error {
	if s.gate != nil {
		s.gate <- struct{}{}
		defer func() { <-s.gate }()
	}
	job.Burn(s.spec.CPUPerPage)
	off := int(n * 7919 % uint64(len(s.data)-len(page)))
	copy(page, s.data[off:off+len(page)])
	binary.BigEndian.PutUint64(page, n)
	if _, err := c.Write(page); err != nil {
		return err
	}
	s.totals.pages.Add(1)
	s.totals.bytes.Add(int64(len(page)))
	return nil
}

// ClientSpec configures the jobs one client host runs.
type ClientSpec struct {
	Store
	Address string `json:"address"` // the server's host:port
	// Token is the test's, which the server checks.
	Token token.Token `json:"token"`
	// Jobs run at once; each reads EventsPerJob consecutive events.
	Jobs         int `json:"jobs"`
	EventsPerJob int `json:"events_per_job"`
	// FirstJob numbers this client's jobs FirstJob, FirstJob+1, ...
	FirstJob int `json:"first_job"`
	// CPUPerEvent is CPU time a job spends on each event it has read.
	CPUPerEvent time.Duration `json:"cpu_per_event,omitempty"`
	// Timeout is the RPC timeout: a job whose request (or connection) gets
	// no answer for this long fails, as an Objectivity client did.
	Timeout time.Duration `json:"timeout"`
	Seed    uint64        `json:"seed"`
}

// Validate says what is wrong with the spec or over the limits: the jobs
// open one connection each and read Jobs x EventsPerJob events in all.
func (s ClientSpec) Validate(l limits.Limits) error {
	if err := s.Store.Validate(l); err != nil {
		return err
	}
	if err := l.Connections("jobs", s.Jobs); err != nil {
		return err
	}
	if err := errors.Join(l.Duration("timeout", s.Timeout), l.Duration("cpu_per_event", s.CPUPerEvent)); err != nil {
		return err
	}
	if s.EventsPerJob > 0 && s.EventSize > 0 && s.Jobs > 0 {
		if err := l.BytesTimes("the events the jobs read", int64(s.EventsPerJob)*int64(min(s.Jobs, 1<<20)), s.EventSize); err != nil {
			return err
		}
	}
	switch {
	case s.Jobs < 1:
		return fmt.Errorf("jobs must be at least 1 (got %d)", s.Jobs)
	case s.EventsPerJob < 1:
		return fmt.Errorf("events_per_job must be at least 1 (got %d)", s.EventsPerJob)
	case s.EventsPerJob > s.Events:
		return fmt.Errorf("events_per_job (%d) is more than the store holds (%d events)", s.EventsPerJob, s.Events)
	case s.Timeout <= 0:
		return fmt.Errorf("timeout must be positive (got %v)", s.Timeout)
	}
	return nil
}

// RunClient runs the client's jobs at once and reports each as it ends. It
// returns when all have ended; cancelling ctx ends the jobs still running.
func RunClient(ctx context.Context, spec ClientSpec, l limits.Limits, host string, report func(job.Record)) error {
	if err := spec.Validate(l); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for i := range spec.Jobs {
		id := spec.FirstJob + i
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(spec.Seed, uint64(id)))
			first := rng.IntN(spec.Events)
			rec := job.Record{ID: id, Host: host, Start: time.Now()}
			var err error
			rec.Bytes, err = runJob(ctx, spec, id, first, &rec)
			rec.End = time.Now()
			rec.Status, rec.Reason = status(ctx, err)
			report(rec)
		}()
	}
	wg.Wait()
	return nil
}

func status(ctx context.Context, err error) (string, string) {
	var ne net.Error
	switch {
	case err == nil:
		return job.OK, ""
	case ctx.Err() != nil:
		return job.Cancelled, "the run was stopped"
	case errors.As(err, &ne) && ne.Timeout():
		return job.Timeout, err.Error()
	}
	return job.Failed, err.Error()
}

// runJob reads events first, first+1, ... (wrapping) page by page and
// returns the bytes it received; rec gets its connection's TCP figures.
func runJob(ctx context.Context, spec ClientSpec, id, first int, rec *job.Record) (int64, error) {
	d := net.Dialer{Timeout: spec.Timeout}
	c, err := d.DialContext(ctx, "tcp", spec.Address)
	if err != nil {
		return 0, fmt.Errorf("job %d: opening a session: %w", id, err)
	}
	defer c.Close()
	defer func() {
		if info, err := job.ReadTCPInfo(c); err == nil {
			rec.AddTCP(info, 1)
		}
	}()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	var hello [helloLen]byte
	copy(hello[:4], magic[:])
	binary.BigEndian.PutUint64(hello[4:], uint64(id))
	c.SetDeadline(time.Now().Add(spec.Timeout))
	if _, err := c.Write(append(spec.Token.Greeting(), hello[:]...)); err != nil {
		return 0, fmt.Errorf("job %d: opening a session: %w", id, err)
	}
	if err := token.ReadProof(c, spec.Token); err != nil {
		return 0, fmt.Errorf("job %d: opening a session: %w", id, err)
	}
	var reply [16]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		return 0, fmt.Errorf("job %d: opening a session: %w", id, err)
	}
	if [4]byte(reply[:4]) != magic || int64(binary.BigEndian.Uint64(reply[4:])) != spec.Pages() || int(binary.BigEndian.Uint32(reply[12:])) != spec.PageSize {
		return 0, fmt.Errorf("job %d: the server holds a different store (%d pages of %d B, expected %d of %d B)",
			id, binary.BigEndian.Uint64(reply[4:]), binary.BigEndian.Uint32(reply[12:]), spec.Pages(), spec.PageSize)
	}
	page := make([]byte, spec.PageSize)
	var req [8]byte
	var got int64
	last := int64(-1) // the page read last stays in the client's cache
	for k := range spec.EventsPerJob {
		e := (first + k) % spec.Events
		lo, hi := spec.eventPages(e)
		for p := lo; p <= hi; p++ {
			if p == last {
				continue
			}
			binary.BigEndian.PutUint64(req[:], uint64(p))
			c.SetDeadline(time.Now().Add(spec.Timeout))
			if _, err := c.Write(req[:]); err != nil {
				return got, fmt.Errorf("job %d: asking for page %d: %w", id, p, err)
			}
			if _, err := io.ReadFull(c, page); err != nil {
				return got, fmt.Errorf("job %d: reading page %d (event %d of %d): %w", id, p, k+1, spec.EventsPerJob, err)
			}
			if n := binary.BigEndian.Uint64(page); n != uint64(p) {
				return got, fmt.Errorf("job %d: asked for page %d, got page %d", id, p, n)
			}
			got += int64(len(page))
			last = p
		}
		job.Burn(spec.CPUPerEvent)
	}
	return got, nil
}
