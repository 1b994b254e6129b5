// Package taskfarm is the master/worker workload of the DIANE tests
// (../shared/seeds/002_35a54554d42aded5.txt): a master hands out tasks to
// workers that connect to it, each task takes a given time (asleep or on the
// CPU) and returns a result of a given size, and the master keeps Prefetch
// tasks in flight per worker (1 is DIANE's behaviour: the next task leaves
// only when the last result is back, so every task pays a round trip).
//
// It is one workload kind, registered as Kind: its wire protocol (here),
// its settings and their checks (spec.go), its driver (run.go), its
// agents' roles (roles.go) and what analysis reads of it (capabilities.go).
package taskfarm

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/job"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// Work kinds.
const (
	WorkSleep = "sleep"
	WorkCPU   = "cpu"
)

// MasterSpec configures the master.
type MasterSpec struct {
	Tasks      int           `json:"tasks"`
	Duration   time.Duration `json:"duration"` // of each task
	Work       string        `json:"work"`
	ResultSize int           `json:"result_size"` // bytes each result carries back
	Prefetch   int           `json:"prefetch"`
	// Workers is how many workers must connect before tasks are handed out.
	Workers int `json:"workers"`
	// ConnectTimeout bounds the wait for the workers.
	ConnectTimeout time.Duration `json:"connect_timeout"`
	Port           int           `json:"port,omitempty"`
	// Token is the test's: a worker that does not present it is not one.
	Token token.Token `json:"token"`
}

// MaxResultSize bounds a task's result.
const MaxResultSize = 64 << 20

// MaxTasks bounds the tasks of one farm.
const MaxTasks = 10_000_000

// Validate says what is wrong with the spec or over the limits: every
// worker is a connection, the results add up to bytes, and the farm's
// ideal time (rounds of tasks, each one task long) to a duration.
func (s MasterSpec) Validate(l limits.Limits) error {
	switch {
	case s.Tasks > MaxTasks:
		return fmt.Errorf("tasks %d: at most %d", s.Tasks, MaxTasks)
	case s.Prefetch > 1<<16:
		return fmt.Errorf("prefetch %d: at most %d", s.Prefetch, 1<<16)
	case s.Tasks < 1:
		return fmt.Errorf("tasks must be at least 1 (got %d)", s.Tasks)
	case s.Duration < 0:
		return fmt.Errorf("duration must not be negative (got %v)", s.Duration)
	case s.Work != WorkSleep && s.Work != WorkCPU:
		return fmt.Errorf("work %q: sleep or cpu", s.Work)
	case s.ResultSize < 0 || s.ResultSize > MaxResultSize:
		return fmt.Errorf("result_size must be between 0 and %d B (got %d)", MaxResultSize, s.ResultSize)
	case s.Prefetch < 1:
		return fmt.Errorf("prefetch must be at least 1 (got %d)", s.Prefetch)
	case s.Workers < 1:
		return fmt.Errorf("workers must be at least 1 (got %d)", s.Workers)
	}
	rounds := (int64(s.Tasks) + int64(s.Workers) - 1) / int64(s.Workers)
	return errors.Join(
		l.Connections("workers", s.Workers),
		l.BytesTimes("the results", int64(s.Tasks), int64(s.ResultSize)),
		l.Repeated("the farm's ideal time", rounds, s.Duration),
		l.Duration("connect_timeout", s.ConnectTimeout),
	)
}

// Result is what the master saw.
type Result struct {
	Tasks     int     `json:"tasks"`     // asked for
	Completed int     `json:"completed"` // results received
	Workers   int     `json:"workers"`   // connected
	Seconds   float64 `json:"seconds"`   // first dispatch to last result
	TaskRate  float64 `json:"task_rate_hz"`
	// MessageRate counts tasks sent and results received per second.
	MessageRate float64 `json:"message_rate_hz"`
	ResultBytes int64   `json:"result_bytes"`
	Error       string  `json:"error,omitempty"`
}

// Wire format: a task is [1][id u32][duration ns u64][work u8][result size
// u32]; the end of the work is [2]; a result is [id u32][size u32][payload].
const (
	msgTask = 1
	msgEnd  = 2
	taskLen = 1 + 4 + 8 + 1 + 4
)

var hello = [4]byte{'W', 'L', 'T', 'F'}

// Master hands out tasks.
type Master struct {
	spec MasterSpec
	ln   net.Listener
}

// Listen opens the master's port.
func Listen(spec MasterSpec, l limits.Limits, at bind.Local) (*Master, error) {
	if err := spec.Validate(l); err != nil {
		return nil, err
	}
	ln, err := at.ListenPort(spec.Port, net.ListenConfig{})
	if err != nil {
		return nil, fmt.Errorf("task farm master: %w", err)
	}
	return &Master{spec: spec, ln: ln}, nil
}

// Port is the master's port.
func (m *Master) Port() int { return m.ln.Addr().(*net.TCPAddr).Port }

// Run waits for the workers, hands out every task and returns once all
// results are back (or a worker fails, or ctx ends: then the result says
// how far it got). Each task is reported as a job from its dispatch to its
// result's arrival, from several goroutines at once.
func (m *Master) Run(ctx context.Context, report func(job.Record)) Result {
	res := Result{Tasks: m.spec.Tasks}
	defer m.ln.Close()
	conns, err := m.accept(ctx)
	res.Workers = len(conns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			c.Close()
		}
	})
	defer stop()

	sent := make([]time.Time, m.spec.Tasks)
	var next atomic.Int64 // the next task to hand out
	var completed, resultBytes atomic.Int64
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) {
		errOnce.Do(func() {
			firstErr = err
			for _, c := range conns {
				c.Close()
			}
		})
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.feed(c, &next, sent, report, &completed, &resultBytes); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.Completed = int(completed.Load())
	res.ResultBytes = resultBytes.Load()
	if res.Seconds > 0 {
		res.TaskRate = float64(res.Completed) / res.Seconds
		res.MessageRate = 2 * float64(res.Completed) / res.Seconds
	}
	switch {
	case ctx.Err() != nil:
		res.Error = "the run was stopped"
	case firstErr != nil:
		res.Error = firstErr.Error()
	case res.Completed < res.Tasks:
		res.Error = fmt.Sprintf("only %d of %d results came back", res.Completed, res.Tasks)
	}
	return res
}

// accept waits up to the connect timeout for the workers. Each connection
// presents the test's token on its own, within its own wait, and then its
// hello, within its own wait too, off the accepting loop: a stranger that
// connects and sends nothing costs the farm a socket, never a worker, and
// the wait ends at once with ctx.
func (m *Master) accept(ctx context.Context) ([]net.Conn, error) {
	limit := m.spec.ConnectTimeout
	if limit <= 0 {
		limit = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the hellos still awaited
	stop := make(chan struct{})
	defer close(stop)
	incoming := token.Accept(m.ln, m.spec.Token, token.Options{Expect: m.spec.Workers}, stop)
	greeted := make(chan net.Conn)
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var conns []net.Conn
	for len(conns) < m.spec.Workers {
		select {
		case c := <-incoming:
			if c == nil {
				return conns, fmt.Errorf("waiting for workers: %d of %d connected: %w", len(conns), m.spec.Workers, net.ErrClosed)
			}
			go func() {
				if err := readHello(ctx, c); err != nil {
					c.Close()
					return
				}
				select {
				case greeted <- c:
				case <-stop:
					c.Close()
				}
			}()
		case c := <-greeted:
			conns = append(conns, c)
		case <-timer.C:
			return conns, fmt.Errorf("waiting for workers: %d of %d connected within %v", len(conns), m.spec.Workers, limit)
		case <-ctx.Done():
			return conns, fmt.Errorf("waiting for workers: %d of %d connected: %w", len(conns), m.spec.Workers, ctx.Err())
		}
	}
	return conns, nil
}

// readHello reads a worker's hello, which it sends with the token, within
// token.Wait; the connection is closed at once if ctx ends first.
func readHello(ctx context.Context, c net.Conn) error {
	c.SetReadDeadline(time.Now().Add(token.Wait))
	stop := context.AfterFunc(ctx, func() { c.Close() })
	var h [4]byte
	_, err := io.ReadFull(c, h[:])
	if !stop() {
		return fmt.Errorf("reading a worker's hello: %w", ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("reading a worker's hello: %w", err)
	}
	if h != hello {
		return errors.New("not a task farm worker")
	}
	return c.SetReadDeadline(time.Time{})
}

// feed keeps Prefetch tasks in flight on one worker's connection until the
// tasks run out and every result it owes is back.
func (m *Master) feed(c net.Conn, next *atomic.Int64, sent []time.Time, report func(job.Record), completed, resultBytes *atomic.Int64) error {
	w := bufio.NewWriter(c)
	r := bufio.NewReaderSize(c, 64<<10)
	var task [taskLen]byte
	dispatch := func() bool {
		id := next.Add(1) - 1
		if id >= int64(m.spec.Tasks) {
			return false
		}
		task[0] = msgTask
		binary.BigEndian.PutUint32(task[1:], uint32(id))
		binary.BigEndian.PutUint64(task[5:], uint64(m.spec.Duration))
		task[13] = 0
		if m.spec.Work == WorkCPU {
			task[13] = 1
		}
		binary.BigEndian.PutUint32(task[14:], uint32(m.spec.ResultSize))
		sent[id] = time.Now()
		w.Write(task[:])
		return true
	}
	inFlight := 0
	for inFlight < m.spec.Prefetch && dispatch() {
		inFlight++
	}
	var hdr [8]byte
	for inFlight > 0 {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("sending a task: %w", err)
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return fmt.Errorf("waiting for a result (%d in flight): %w", inFlight, err)
		}
		id := binary.BigEndian.Uint32(hdr[:])
		size := binary.BigEndian.Uint32(hdr[4:])
		if int(id) >= len(sent) || size > MaxResultSize {
			return fmt.Errorf("a worker sent a malformed result (task %d, %d B)", id, size)
		}
		if _, err := r.Discard(int(size)); err != nil {
			return fmt.Errorf("reading the result of task %d: %w", id, err)
		}
		report(job.Record{ID: int(id), Subject: "task", Start: sent[id], End: time.Now(), Bytes: int64(size), Status: job.OK})
		completed.Add(1)
		resultBytes.Add(int64(size))
		inFlight--
		if dispatch() {
			inFlight++
		}
	}
	w.WriteByte(msgEnd)
	return w.Flush()
}

// WorkerSpec configures the workers on one host.
type WorkerSpec struct {
	Address string `json:"address"` // the master's host:port
	Workers int    `json:"workers"`
	// Token is the test's, which the master checks.
	Token token.Token `json:"token"`
}

// Validate says what is wrong with the spec or over the limits.
func (s WorkerSpec) Validate(l limits.Limits) error {
	if s.Workers < 1 {
		return fmt.Errorf("workers must be at least 1 (got %d)", s.Workers)
	}
	return l.Connections("workers", s.Workers)
}

// WorkerResult is what the workers of one host did.
type WorkerResult struct {
	Workers int     `json:"workers"`
	Tasks   int64   `json:"tasks"`
	Busy    float64 `json:"busy_s"` // summed over workers
	Idle    float64 `json:"idle_s"` // waiting with no task at hand
	Error   string  `json:"error,omitempty"`
}

// RunWorkers connects Workers workers to the master and runs tasks until
// the master says there are no more. A task longer than maxTask, or with a
// result over MaxResultSize, is refused as malformed: the master is a peer.
func RunWorkers(ctx context.Context, spec WorkerSpec, maxTask time.Duration) WorkerResult {
	res := WorkerResult{Workers: spec.Workers}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range spec.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tasks, busy, idle, err := work(ctx, spec.Address, spec.Token, maxTask)
			mu.Lock()
			defer mu.Unlock()
			res.Tasks += tasks
			res.Busy += busy.Seconds()
			res.Idle += idle.Seconds()
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		res.Error = fmt.Sprintf("%d of %d workers failed; first: %v", len(errs), spec.Workers, errs[0])
	}
	return res
}

type task struct {
	id       uint32
	duration time.Duration
	cpu      bool
	size     uint32
}

// work is one worker: a reader takes tasks off the connection into a local
// queue, so that prefetched tasks wait at the worker, not on the wire.
func work(ctx context.Context, addr string, t token.Token, maxTask time.Duration) (n int64, busy, idle time.Duration, err error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("connecting to the master: %w", err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := c.Write(append(t.Greeting(), hello[:]...)); err != nil {
		return 0, 0, 0, err
	}
	queue := make(chan task, 1024)
	readErr := make(chan error, 1)
	defer func() {
		// Tasks still queued are not done: the reader ends once the
		// connection is closed.
		c.Close()
		for range queue {
		}
	}()
	go func() {
		defer close(queue)
		r := bufio.NewReader(c)
		if err := token.ReadProof(r, t); err != nil {
			readErr <- err
			return
		}
		var msg [taskLen]byte
		for {
			if _, err := io.ReadFull(r, msg[:1]); err != nil {
				readErr <- fmt.Errorf("reading a task: %w", err)
				return
			}
			if msg[0] == msgEnd {
				readErr <- nil
				return
			}
			if _, err := io.ReadFull(r, msg[1:]); err != nil {
				readErr <- fmt.Errorf("reading a task: %w", err)
				return
			}
			t := task{
				id:       binary.BigEndian.Uint32(msg[1:]),
				duration: time.Duration(binary.BigEndian.Uint64(msg[5:])),
				cpu:      msg[13] == 1,
				size:     binary.BigEndian.Uint32(msg[14:]),
			}
			if msg[0] != msgTask || t.duration < 0 || t.duration > maxTask || t.size > MaxResultSize {
				readErr <- fmt.Errorf("the master sent a malformed task (kind %d, %v, a %d-byte result)", msg[0], t.duration, t.size)
				return
			}
			queue <- t
		}
	}()
	w := bufio.NewWriterSize(c, 64<<10)
	var payload []byte
	for {
		var t task
		var ok bool
		select {
		case t, ok = <-queue:
		default:
			// Nothing at hand: flush what is done and wait for the master.
			if err := w.Flush(); err != nil {
				return n, busy, idle, fmt.Errorf("sending a result: %w", err)
			}
			waited := time.Now()
			t, ok = <-queue
			idle += time.Since(waited)
		}
		if !ok {
			break
		}
		began := time.Now()
		taskStarted(t.id)
		do(ctx, t)
		busy += time.Since(began)
		if ctx.Err() != nil {
			return n, busy, idle, nil // the task was cut short: it has no result
		}
		var hdr [8]byte
		binary.BigEndian.PutUint32(hdr[:], t.id)
		binary.BigEndian.PutUint32(hdr[4:], t.size)
		if int(t.size) > len(payload) {
			payload = make([]byte, t.size)
		}
		w.Write(hdr[:])
		w.Write(payload[:t.size])
		n++
		// Results of zero-length tasks queued behind each other go out
		// together; any other result goes at once.
		if t.duration > 0 || len(queue) == 0 {
			if err := w.Flush(); err != nil {
				return n, busy, idle, fmt.Errorf("sending a result: %w", err)
			}
		}
	}
	w.Flush()
	if err := <-readErr; err != nil && ctx.Err() == nil {
		return n, busy, idle, err
	}
	return n, busy, idle, nil
}

// taskStarted is called as a worker starts a task: tests wait for it.
var taskStarted = func(id uint32) {}

// burnSlice is how much CPU time a task burns between two looks at its
// context.
const burnSlice = 10 * time.Millisecond

// do does a task's work, asleep or on the CPU, until it is done or ctx
// ends: a worker whose controller is gone stops within a slice, however
// long its task.
func do(ctx context.Context, t task) {
	if !t.cpu {
		if t.duration > 0 {
			timer := time.NewTimer(t.duration)
			defer timer.Stop()
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
		}
		return
	}
	for left := t.duration; left > 0 && ctx.Err() == nil; left -= burnSlice {
		job.Burn(min(left, burnSlice))
	}
}
