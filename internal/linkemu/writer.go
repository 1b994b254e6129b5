package linkemu

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Writing a packet into a host's TUN device runs that host's network stack in
// the writer's context: the receiver's TCP input and, for an ACK, the sender's
// next transmissions. At high packet rates that is most of the work, so it is
// done by a writer thread, on another core, while the engine thread keeps
// reading and timing. The hand-over costs a wake-up of the writer when it
// was idle: a few microseconds, measured in docs/benchmarks.md.

// delivery is one packet handed to the writer: everything the write
// needs, since the writer never reads the pool (the engine grows it).
type delivery struct {
	head    []byte // virtio-net header and packet, or a piece's headers; in pool memory, which never moves
	payload []byte // a piece's payload, in its parent's slot; nil for a packet
	dst     int32
	slot    int32
	segs    int32 // wire segments
	// first and last are when the first and last wire segment were due;
	// held is how long after last the engine chose to wait, to release it
	// in one wake-up with later packets.
	first, last, held int64
}

// writeBatch is the one-packet batch a thread writes through a Port, kept
// where it lives so that passing it through the interface allocates nothing.
type writeBatch struct {
	heads, payloads [1][]byte
}

// writev2 writes a piece, its headers and its payload, in one system call
// and without allocating; a raw one, as rawWrite.
func writev2(fd int, head, payload []byte) error {
	iov := [2]unix.Iovec{{Base: &head[0]}, {Base: &payload[0]}}
	iov[0].SetLen(len(head))
	iov[1].SetLen(len(payload))
	_, _, errno := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), 2)
	if errno != 0 {
		return errno
	}
	return nil
}

// ring is a single-producer, single-consumer queue of fixed capacity.
type ring[T any] struct {
	buf  []T
	mask uint64
	head atomic.Uint64 // next to read, advanced by the consumer
	tail atomic.Uint64 // next to write, advanced by the producer
}

func newRing[T any](capacity int) *ring[T] {
	n := 1
	for n < capacity {
		n <<= 1
	}
	return &ring[T]{buf: make([]T, n), mask: uint64(n - 1)}
}

func (r *ring[T]) push(v T) bool {
	t := r.tail.Load()
	if t-r.head.Load() == uint64(len(r.buf)) {
		return false
	}
	r.buf[t&r.mask] = v
	r.tail.Store(t + 1)
	return true
}

func (r *ring[T]) pop() (T, bool) {
	var zero T
	h := r.head.Load()
	if h == r.tail.Load() {
		return zero, false
	}
	v := r.buf[h&r.mask]
	r.buf[h&r.mask] = zero
	r.head.Store(h + 1)
	return v, true
}

func (r *ring[T]) empty() bool { return r.head.Load() == r.tail.Load() }

// writerQueue bounds the packets waiting for the writer; when it is full the
// engine waits, which is back-pressure, never a silent drop.
const writerQueue = 1 << 16

type writer struct {
	e     *shard
	out   *ring[delivery] // engine -> writer
	back  *ring[int32]    // written slots, writer -> engine
	wake  int             // eventfd the idle writer sleeps on
	idle  atomic.Bool
	quit  atomic.Bool // set by stop: the engine is done, even by a panic
	done  chan struct{}
	batch writeBatch // the writer's, apart from the engine's
}

func newWriter(e *shard) (*writer, error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &writer{e: e, out: newRing[delivery](writerQueue), back: newRing[int32](writerQueue), wake: wake, done: make(chan struct{})}, nil
}

func (w *writer) run() {
	defer close(w.done)
	runtime.LockOSThread() // for good: tuneThread
	w.e.tuneThread()
	var buf [8]byte
	for {
		for {
			d, ok := w.out.pop()
			if !ok {
				break
			}
			w.e.write(d, &w.batch)
			w.e.m.inFlight.Add(-1)
			for !w.back.push(d.slot) {
				runtime.Gosched() // the engine returns slots every loop
			}
		}
		// Announce idleness before the last look at the queue, so that a
		// packet pushed in between is either seen here or followed by a wake.
		w.idle.Store(true)
		if !w.out.empty() {
			w.idle.Store(false)
			continue
		}
		if w.quit.Load() {
			return
		}
		unix.Read(w.wake, buf[:])
		w.idle.Store(false)
	}
}

// submit hands a due packet to the writer.
func (w *writer) submit(d delivery) {
	for !w.out.push(d) {
		w.e.reclaim()
		runtime.Gosched()
	}
	if w.idle.Load() {
		w.kick()
	}
}

func (w *writer) kick() {
	one := [8]byte{1}
	unix.Write(w.wake, one[:])
}

// stop waits for the writer to drain its queue and exit.
func (w *writer) stop() {
	w.quit.Store(true)
	w.kick()
	<-w.done
	unix.Close(w.wake)
}
