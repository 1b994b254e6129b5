// Package transfer moves a file from disk to disk between two hosts over
// parallel TCP streams (each stream a contiguous range of the file, as bbFTP
// does), optionally compressing each block with zstd, and proves with SHA-256
// checksums at both ends that no bit was lost.
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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/workload/diskio"
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
}

// Validate checks a spec.
func (s Spec) Validate(maxStreams int) error {
	switch {
	case s.Streams < 1 || s.Streams > maxStreams:
		return fmt.Errorf("streams %d: give 1 to %d", s.Streams, maxStreams)
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

var magic = [4]byte{'W', 'L', 'X', '1'}

// header opens each stream: magic, stream id, offset, length, flags.
const headerLen = 4 + 4 + 8 + 8 + 4

const flagCompressed = 1

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

// Send sends the file at path to the receiver at addr.
func Send(ctx context.Context, spec Spec, path, addr string) (Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return Result{}, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return Result{}, err
	}
	size := before.Size()
	if spec.Uncached {
		if err := diskio.DropCached(f); err != nil {
			return Result{}, fmt.Errorf("dropping %s from the page cache: %w", path, err)
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
			n, err := sendRange(ctx, d, addr, f, i, r[0], r[1], spec, &wire)
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
	after, err := os.Stat(path)
	if err != nil || after.Size() != size || !after.ModTime().Equal(before.ModTime()) {
		return res, fmt.Errorf("%s changed while it was being sent: the copy cannot be trusted", path)
	}
	res.SHA256, err = hashFile(path)
	return res, err
}

func sendRange(ctx context.Context, d net.Dialer, addr string, f *os.File, id int, off, length int64, spec Spec, wire *atomic.Int64) (int64, error) {
	c, err := d.DialContext(ctx, "tcp4", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	var h [headerLen]byte
	copy(h[:], magic[:])
	binary.BigEndian.PutUint32(h[4:], uint32(id))
	binary.BigEndian.PutUint64(h[8:], uint64(off))
	binary.BigEndian.PutUint64(h[16:], uint64(length))
	if spec.Compress {
		binary.BigEndian.PutUint32(h[24:], flagCompressed)
	}
	if _, err := c.Write(h[:]); err != nil {
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
	for sent < length {
		n := min(int64(len(buf)), length-sent)
		// Ask for the next block while this one is sent, so that the disk
		// is not idle while the network is busy (double buffering through
		// the page cache, as disk-to-disk movers do).
		if next := sent + n; next < length {
			diskio.Prefetch(f, off+next, min(int64(len(buf)), length-next))
		}
		k, err := f.ReadAt(buf[:n], off+sent)
		if err != nil && !(err == io.EOF && int64(k) == n) {
			return sent, fmt.Errorf("reading at %d: %w", off+sent, err)
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
	ln   net.Listener
	Port int
	spec Spec
	// CorruptAt, when non-negative, flips one byte of the received file at
	// that offset before it is hashed: the test that the checksum catches it.
	CorruptAt int64
}

// Listen opens the receiver on an ephemeral port.
func Listen(spec Spec) (*Receiver, error) {
	lc := net.ListenConfig{Control: dialControl(spec.Window)}
	ln, err := lc.Listen(context.Background(), "tcp4", ":0")
	if err != nil {
		return nil, fmt.Errorf("listening for a transfer: %w", err)
	}
	return &Receiver{ln: ln, Port: ln.Addr().(*net.TCPAddr).Port, spec: spec, CorruptAt: -1}, nil
}

// Run receives spec.Streams ranges into the file at path and hashes it.
func (r *Receiver) Run(ctx context.Context, path string) (Result, error) {
	defer r.ln.Close()
	out, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return Result{}, fmt.Errorf("creating %s: %w", path, err)
	}
	defer out.Close()
	stop := context.AfterFunc(ctx, func() { r.ln.Close() })
	defer stop()
	res := Result{Streams: make([]int64, r.spec.Streams)}
	var (
		wg    sync.WaitGroup
		wire  atomic.Int64
		total atomic.Int64
		mu    sync.Mutex
		errs  []error
		size  int64
		start time.Time
	)
	for i := 0; i < r.spec.Streams; i++ {
		r.ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
		c, err := r.ln.Accept()
		if err != nil {
			return res, fmt.Errorf("waiting for stream %d of %d: %w", i+1, r.spec.Streams, err)
		}
		if i == 0 {
			start = time.Now()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			stopConn := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
			defer stopConn()
			id, end, n, err := receiveRange(c, out, r.spec.Streams, r.spec.Uncached, &wire)
			total.Add(n)
			mu.Lock()
			defer mu.Unlock()
			if id >= 0 {
				res.Streams[id] = n
			}
			size = max(size, end)
			if err != nil {
				errs = append(errs, err)
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
		return res, fmt.Errorf("syncing %s: %w", path, err)
	}
	res.Seconds = time.Since(start).Seconds()
	if r.CorruptAt >= 0 && r.CorruptAt < size {
		var b [1]byte
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			f.ReadAt(b[:], r.CorruptAt)
			b[0] ^= 0x01
			f.WriteAt(b[:], r.CorruptAt)
			f.Close()
		}
	}
	res.SHA256, err = hashFile(path)
	return res, err
}

func receiveRange(c net.Conn, out *os.File, streams int, uncached bool, wire *atomic.Int64) (id int, end, n int64, err error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return -1, 0, 0, fmt.Errorf("reading a stream's header: %w", err)
	}
	if [4]byte(h[:4]) != magic {
		return -1, 0, 0, errors.New("a connection that is not a wanlab transfer")
	}
	id = int(binary.BigEndian.Uint32(h[4:]))
	off := int64(binary.BigEndian.Uint64(h[8:]))
	length := int64(binary.BigEndian.Uint64(h[16:]))
	compressed := binary.BigEndian.Uint32(h[24:])&flagCompressed != 0
	if id >= streams {
		return -1, 0, 0, fmt.Errorf("stream %d of %d", id, streams)
	}
	var dec *zstd.Decoder
	if compressed {
		if dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1)); err != nil {
			return id, off, 0, err
		}
		defer dec.Close()
	}
	buf := make([]byte, 1<<20)
	var plain []byte
	var behind *diskio.WriteBehind
	if uncached {
		behind = diskio.NewWriteBehind(out, off)
	}
	for n < length {
		var data []byte
		if dec != nil {
			var l [4]byte
			if _, err := io.ReadFull(c, l[:]); err != nil {
				return id, off + n, n, fmt.Errorf("stream %d ended after %d of %d bytes: %w", id, n, length, err)
			}
			frame := make([]byte, binary.BigEndian.Uint32(l[:]))
			if _, err := io.ReadFull(c, frame); err != nil {
				return id, off + n, n, fmt.Errorf("stream %d ended after %d of %d bytes: %w", id, n, length, err)
			}
			wire.Add(int64(len(frame)) + 4)
			if plain, err = dec.DecodeAll(frame, plain[:0]); err != nil {
				return id, off + n, n, fmt.Errorf("stream %d: a corrupt compressed block: %w", id, err)
			}
			data = plain
		} else {
			k, err := c.Read(buf[:min(int64(len(buf)), length-n)])
			if k == 0 && err != nil {
				return id, off + n, n, fmt.Errorf("stream %d ended after %d of %d bytes: %w", id, n, length, err)
			}
			wire.Add(int64(k))
			data = buf[:k]
		}
		if _, err := out.WriteAt(data, off+n); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return id, off + n, n, fmt.Errorf("the disk is full after %d bytes of stream %d: %w", n, id, err)
			}
			return id, off + n, n, fmt.Errorf("writing: %w", err)
		}
		n += int64(len(data))
		if behind != nil {
			if err := behind.Wrote(off+n, n == length); err != nil {
				return id, off + n, n, fmt.Errorf("writing to disk: %w", err)
			}
		}
	}
	return id, off + n, n, nil
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// MakeFile writes size bytes of pseudo-random data to path. Half of each
// 64 KiB is a repeating pattern, so that compression has something to gain,
// about as much as on typical event data.
func MakeFile(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	x := uint64(0x2545f4914f6cdd1d)
	for written := int64(0); written < size; {
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
	return f.Close()
}
