// Package transfer moves a file from disk to disk between two hosts over
// parallel TCP streams (each stream a contiguous range of the file, as bbFTP
// does), optionally compressing each block with zstd, and proves with SHA-256
// checksums at both ends that no bit was lost.
//
// The package is the transfer workload kind too (Kind): the agents run the
// sender and the receiver (this file), the controller asks them for a
// transfer (Measure) through measure's endpoints, and a scenario's
// transfer step is a Step.
package transfer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/diskio"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// DefaultBlock is the block size unless one is given: bbFTP's order of size.
const DefaultBlock = 1 << 20

// Spec is one transfer.
type Spec struct {
	Streams  int
	Window   int // socket buffers; 0 for autotuning
	Block    int // bytes read, (compressed,) sent and written at a time
	Compress bool
	// Uncached makes the transfer touch the disk itself, as on a machine
	// whose RAM is far smaller than its files: the sender drops the file
	// from the page cache before reading it, and the receiver writes with
	// write-behind: each chunk is sent to the disk as soon as it is written
	// and a stream waits for its disk writes a few MiB back. A host whose
	// disk is capped needs it, since reads from the cache and the kernel's
	// later write-back escape the cap.
	Uncached bool
	// Serial alternates reading a block and sending it, with neither it
	// nor the kernel reading ahead meanwhile: the path idles while the
	// disk reads (GridFTP's pattern in ../shared/seeds/004).
	Serial bool
	// ReadRate is the host's disk read rate (bytes/s; 0: none), which a
	// serial reader's blocks each take their time at.
	ReadRate int64
}

// Validate checks a spec against itself and the limits.
func (s Spec) Validate(l limits.Limits) error {
	if err := l.Streams(s.Streams); err != nil {
		return err
	}
	switch {
	case s.Window != 0 && s.Window < 4096:
		return fmt.Errorf("window %d bytes: give 0 (autotuning) or at least 4096", s.Window)
	case s.Block < 4096 || s.Block > 16<<20:
		return fmt.Errorf("block %d bytes: give 4KiB to 16MiB", s.Block)
	}
	return nil
}

// Result is one end of a transfer.
type Result struct {
	Bytes     int64 // file bytes
	WireBytes int64 // bytes on the network (less than Bytes when compressed)
	Seconds   float64
	SHA256    string
	Streams   []int64 // file bytes per stream
}

var magic = [4]byte{'W', 'L', 'X', '2'}

// headerLen is the size of the header that opens each stream: magic,
// stream id, the file's total size, the stream's offset and length, flags.
const headerLen = 4 + 4 + 8 + 8 + 8 + 4

const flagCompressed = 1

// streamWait is how long a receiver waits for each stream and its header.
const streamWait = 30 * time.Second

// maxFrame bounds a compressed block on the wire: zstd never grows a block
// by more than a small fraction, so anything larger is not a block of ours.
func maxFrame(block int) int { return block + block/8 + 1024 }

// ranges splits size bytes into n contiguous ranges.
func ranges(size int64, n int) [][2]int64 {
	out := make([][2]int64, n)
	per := size / int64(n)
	for i := range out {
		start := int64(i) * per
		end := start + per
		if i == n-1 {
			end = size
		}
		out[i] = [2]int64{start, end - start}
	}
	return out
}

func dialControl(window int) func(string, string, syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		if window == 0 {
			return nil
		}
		var serr error
		c.Control(func(fd uintptr) {
			for _, opt := range []int{unix.SO_SNDBUF, unix.SO_RCVBUF} {
				if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, window); err != nil {
					serr = err
				}
			}
		})
		return serr
	}
}

// Send sends the open file f to the receiver at addr, presenting its token.
func Send(ctx context.Context, spec Spec, f *os.File, addr string, t token.Token) (Result, error) {
	before, err := f.Stat()
	if err != nil {
		return Result{}, err
	}
	size := before.Size()
	if spec.Uncached {
		if err := diskio.DropCached(f); err != nil {
			return Result{}, fmt.Errorf("dropping %s from the page cache: %w", f.Name(), err)
		}
	}
	if spec.Serial {
		if err := diskio.NoReadAhead(f); err != nil {
			return Result{}, fmt.Errorf("turning read-ahead off for %s: %w", f.Name(), err)
		}
	}
	res := Result{Bytes: size, Streams: make([]int64, spec.Streams)}
	d := net.Dialer{Timeout: 10 * time.Second, Control: dialControl(spec.Window)}
	start := time.Now()
	var wire atomic.Int64
	errs := make([]error, spec.Streams)
	var wg sync.WaitGroup
	for i, r := range ranges(size, spec.Streams) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := header{id: i, total: size, off: r[0], length: r[1], compressed: spec.Compress}
			n, err := sendRange(ctx, d, addr, t, f, h, spec, &wire)
			res.Streams[i] = n
			if err != nil {
				errs[i] = fmt.Errorf("stream %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.WireBytes = wire.Load()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	after, err := f.Stat()
	if err != nil || after.Size() != size || !after.ModTime().Equal(before.ModTime()) {
		return res, fmt.Errorf("%s changed while it was being sent: the copy cannot be trusted", f.Name())
	}
	res.SHA256, err = hashFile(ctx, f, size)
	return res, err
}

// header is what opens a stream.
type header struct {
	id                 int
	total, off, length int64
	compressed         bool
}

func (h header) encode() []byte {
	b := make([]byte, headerLen)
	copy(b, magic[:])
	binary.BigEndian.PutUint32(b[4:], uint32(h.id))
	binary.BigEndian.PutUint64(b[8:], uint64(h.total))
	binary.BigEndian.PutUint64(b[16:], uint64(h.off))
	binary.BigEndian.PutUint64(b[24:], uint64(h.length))
	if h.compressed {
		binary.BigEndian.PutUint32(b[32:], flagCompressed)
	}
	return b
}

// readHeader reads a stream's header and checks it against what the
// receiver accepts: its stream count and a file of at most maxBytes, in
// which the stream must carry exactly its own range.
func readHeader(r io.Reader, streams int, maxBytes int64) (header, error) {
	var b [headerLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return header{}, fmt.Errorf("reading a stream's header: %w", err)
	}
	if [4]byte(b[:4]) != magic {
		return header{}, errors.New("a connection that is not a wanlab transfer")
	}
	id := binary.BigEndian.Uint32(b[4:])
	total := binary.BigEndian.Uint64(b[8:])
	h := header{total: int64(total), off: int64(binary.BigEndian.Uint64(b[16:])), length: int64(binary.BigEndian.Uint64(b[24:])),
		compressed: binary.BigEndian.Uint32(b[32:])&flagCompressed != 0}
	switch {
	case id >= uint32(streams):
		return header{}, fmt.Errorf("stream %d of a %d-stream transfer", id, streams)
	case total > uint64(maxBytes):
		return header{}, fmt.Errorf("a file of %d bytes: over the receiver's limit of %d", total, maxBytes)
	}
	h.id = int(id)
	if want := ranges(h.total, streams)[h.id]; h.off != want[0] || h.length != want[1] {
		return header{}, fmt.Errorf("stream %d claims bytes %d+%d of a %d-byte file, not its range %d+%d", h.id, h.off, h.length, h.total, want[0], want[1])
	}
	return h, nil
}

func sendRange(ctx context.Context, d net.Dialer, addr string, t token.Token, f *os.File, h header, spec Spec, wire *atomic.Int64) (int64, error) {
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	// ctx's end closes the stream: a deadline set from it would be
	// cleared by Greet's own.
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := token.Greet(c, t, streamWait); err != nil {
		return 0, err
	}
	if _, err := c.Write(h.encode()); err != nil {
		return 0, err
	}
	var enc *zstd.Encoder
	if spec.Compress {
		if enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1)); err != nil {
			return 0, err
		}
		defer enc.Close()
	}
	buf := make([]byte, spec.Block)
	var packed []byte
	var sent int64
	off, length := h.off, h.length

	for sent < length {
		n := min(int64(len(buf)), length-sent)
		// Ask for the next block while this one is sent, so that the disk
		// is not idle while the network is busy (double buffering through
		// the page cache, as disk-to-disk movers do).
		if next := sent + n; next < length && !spec.Serial {
			diskio.Prefetch(f, off+next, min(int64(len(buf)), length-next))
		}
		began := time.Now()
		k, err := f.ReadAt(buf[:n], off+sent)
		if err != nil && !(err == io.EOF && int64(k) == n) {
			return sent, fmt.Errorf("reading at %d: %w", off+sent, err)
		}
		if spec.Serial && spec.ReadRate > 0 {
			// A block costs what the disk's rate says. The kernel's cap
			// lets a reader idle for a while take a slice of it at once
			// (blk-throttle's 100 ms), which a serial reader, idle while
			// it sends, would always get.
			took := time.Duration(float64(k) / float64(spec.ReadRate) * float64(time.Second))
			if wait := took - time.Since(began); wait > 0 {
				select {
				case <-ctx.Done():
					return sent, ctx.Err()
				case <-time.After(wait):
				}
			}
		}
		out := buf[:k]
		if enc != nil {
			// Each block is framed: compressed length, then the zstd frame.
			packed = enc.EncodeAll(out, packed[:0])
			var l [4]byte
			binary.BigEndian.PutUint32(l[:], uint32(len(packed)))
			if _, err := c.Write(l[:]); err != nil {
				return sent, err
			}
			out = packed
		}
		if _, err := c.Write(out); err != nil {
			return sent, err
		}
		wire.Add(int64(len(out)))
		sent += int64(k)
	}
	// Wait for the receiver to close: the data is on its disk.
	c.(*net.TCPConn).CloseWrite()
	io.Copy(io.Discard, c)
	return sent, nil
}

// Receiver accepts one transfer into a file.
type Receiver struct {
	ln net.Listener
	// Port is where senders connect, presenting Token.
	Port  int
	Token token.Token
	spec  Spec
	// MaxBytes bounds the file a sender may announce; ExpectedSize, when
	// not 0, is the size it must announce.
	MaxBytes     int64
	ExpectedSize int64
	// CorruptAt, when non-negative, flips one byte of the received file at
	// that offset before it is hashed: the test that the checksum catches it.
	CorruptAt int64
}

// Listen opens the receiver at (its test address and port range) and draws
// the transfer's token; it accepts files of at most maxBytes.
func Listen(spec Spec, at bind.Local, maxBytes int64) (*Receiver, error) {
	ln, err := at.Listen(net.ListenConfig{Control: dialControl(spec.Window)})
	if err != nil {
		return nil, fmt.Errorf("listening for a transfer: %w", err)
	}
	return &Receiver{ln: ln, Port: ln.Addr().(*net.TCPAddr).Port, Token: token.New(), spec: spec, MaxBytes: maxBytes, CorruptAt: -1}, nil
}

// Close stops listening, for a receiver that will not Run.
func (r *Receiver) Close() error { return r.ln.Close() }

// Run receives spec.Streams ranges into the empty file out and hashes it.
// Each stream's header must announce the same file, within the limits,
// and its own range of it; the file is good only when every range arrived
// whole.
func (r *Receiver) Run(ctx context.Context, out *os.File) (Result, error) {
	defer r.ln.Close()
	stop := context.AfterFunc(ctx, func() { r.ln.Close() })
	defer stop()
	res := Result{Streams: make([]int64, r.spec.Streams)}
	var (
		wg    sync.WaitGroup
		wire  atomic.Int64
		total atomic.Int64
		mu    sync.Mutex
		errs  []error
		size  int64 = -1
		seen        = make([]bool, r.spec.Streams)
		start time.Time
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	stopAccept := make(chan struct{})
	defer close(stopAccept)
	conns := token.Accept(r.ln, r.Token, token.Options{Expect: r.spec.Streams}, stopAccept)
	for i := 0; i < r.spec.Streams; i++ {
		var c net.Conn
		select {
		case c = <-conns:
		case <-time.After(streamWait):
		}
		if c == nil {
			wg.Wait()
			why := fmt.Errorf("none came within %v", streamWait)
			if ctx.Err() != nil {
				why = ctx.Err()
			}
			return res, errors.Join(append(errs, fmt.Errorf("waiting for stream %d of %d: %w", i+1, r.spec.Streams, why))...)
		}
		if i == 0 {
			start = time.Now()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			// The header has its own wait; ctx's end closes the stream
			// (a deadline set from ctx could be cleared after the header).
			c.SetReadDeadline(time.Now().Add(streamWait))
			stopConn := context.AfterFunc(ctx, func() { c.Close() })
			defer stopConn()
			h, err := readHeader(c, r.spec.Streams, r.MaxBytes)
			if err == nil {
				mu.Lock()
				switch {
				case seen[h.id]:
					err = fmt.Errorf("stream %d arrived twice", h.id)
				case size >= 0 && h.total != size:
					err = fmt.Errorf("stream %d announces a %d-byte file, stream 0 a %d-byte one", h.id, h.total, size)
				case r.ExpectedSize > 0 && h.total != r.ExpectedSize:
					err = fmt.Errorf("the sender announces a %d-byte file, %d bytes were expected", h.total, r.ExpectedSize)
				}
				seen[h.id] = err == nil || seen[h.id]
				size = h.total
				mu.Unlock()
			}
			if err != nil {
				fail(err)
				return
			}
			c.SetReadDeadline(time.Time{})
			var behind *diskio.WriteBehind
			if r.spec.Uncached {
				behind = diskio.NewWriteBehind(out, h.off)
			}
			n, err := copyRange(c, out, h, r.spec.Block, behind, &wire)
			total.Add(n)
			mu.Lock()
			res.Streams[h.id] = n
			mu.Unlock()
			if err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	res.Bytes, res.WireBytes = total.Load(), wire.Load()
	if err := errors.Join(errs...); err != nil {
		res.Seconds = time.Since(start).Seconds()
		return res, err
	}
	// Disk to disk: the copy counts once it is on the disk.
	if err := out.Sync(); err != nil {
		return res, fmt.Errorf("syncing %s: %w", out.Name(), err)
	}
	res.Seconds = time.Since(start).Seconds()
	if r.CorruptAt >= 0 && r.CorruptAt < size {
		var b [1]byte
		out.ReadAt(b[:], r.CorruptAt)
		b[0] ^= 0x01
		out.WriteAt(b[:], r.CorruptAt)
	}
	var err error
	res.SHA256, err = hashFile(ctx, out, size)
	return res, err
}

// copyRange reads a stream's range after its header into out, and returns
// the file bytes written. A compressed block may not exceed the frame
// bound on the wire nor block bytes once decoded, and no stream may write
// outside its range.
func copyRange(c io.Reader, out io.WriterAt, h header, block int, behind *diskio.WriteBehind, wire *atomic.Int64) (n int64, err error) {
	var dec *zstd.Decoder
	if h.compressed {
		if dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(block)), zstd.WithDecoderMaxWindow(uint64(max(block, zstd.MinWindowSize)))); err != nil {
			return 0, err
		}
		defer dec.Close()
	}
	buf := make([]byte, min(1<<20, max(block, 4096)))
	var frame, plain []byte
	ended := func(err error) error {
		return fmt.Errorf("stream %d ended after %d of %d bytes: %w", h.id, n, h.length, err)
	}
	for n < h.length {
		var data []byte
		if dec != nil {
			var l [4]byte
			if _, err := io.ReadFull(c, l[:]); err != nil {
				return n, ended(err)
			}
			size := binary.BigEndian.Uint32(l[:])
			if size == 0 || size > uint32(maxFrame(block)) {
				return n, fmt.Errorf("stream %d: a compressed block of %d bytes, over the bound of %d for %d-byte blocks", h.id, size, maxFrame(block), block)
			}
			frame = slices.Grow(frame[:0], int(size))[:size]
			if _, err := io.ReadFull(c, frame); err != nil {
				return n, ended(err)
			}
			wire.Add(int64(size) + 4)
			if plain, err = dec.DecodeAll(frame, plain[:0]); err != nil {
				return n, fmt.Errorf("stream %d: a corrupt compressed block: %w", h.id, err)
			}
			data = plain
		} else {
			k, err := c.Read(buf[:min(int64(len(buf)), h.length-n)])
			if k == 0 && err != nil {
				return n, ended(err)
			}
			wire.Add(int64(k))
			data = buf[:k]
		}
		if int64(len(data)) > h.length-n {
			return n, fmt.Errorf("stream %d: a block runs %d bytes past the end of its range", h.id, int64(len(data))-(h.length-n))
		}
		if _, err := out.WriteAt(data, h.off+n); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return n, fmt.Errorf("the disk is full after %d bytes of stream %d: %w", n, h.id, err)
			}
			return n, fmt.Errorf("writing: %w", err)
		}
		n += int64(len(data))
		if behind != nil {
			if err := behind.Wrote(h.off+n, n == h.length); err != nil {
				return n, fmt.Errorf("writing to disk: %w", err)
			}
		}
	}
	return n, nil
}

// hashFile hashes the first size bytes of f; once ctx ends, it stops
// within a chunk with an error that wraps ctx's.
func hashFile(ctx context.Context, f *os.File, size int64) (string, error) {
	h := sha256.New()
	r := io.NewSectionReader(f, 0, size)
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("hashing %s: %w", f.Name(), err)
		}
		n, err := r.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return "", fmt.Errorf("hashing %s: %w", f.Name(), err)
		}
	}
}

// MakeFile writes size bytes of pseudo-random data to the empty file f.
// Half of each 64 KiB is a repeating pattern, so that compression has
// something to gain, about as much as on typical event data. Once ctx
// ends, it stops within 64 KiB with an error that wraps ctx's.
func MakeFile(ctx context.Context, f *os.File, size int64) error {
	buf := make([]byte, 64<<10)
	x := uint64(0x2545f4914f6cdd1d)
	for written := int64(0); written < size; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("making the file stopped after %d of %d bytes: %w", written, size, err)
		}
		for i := 0; i+8 <= len(buf)/2; i += 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			binary.LittleEndian.PutUint64(buf[i:], x)
		}
		for i := len(buf) / 2; i < len(buf); i++ {
			buf[i] = byte(i % 251)
		}
		n := min(int64(len(buf)), size-written)
		if _, err := f.Write(buf[:n]); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return fmt.Errorf("the disk is full after %d of %d bytes: %w", written, size, err)
			}
			return err
		}
		written += n
	}
	return nil
}
