// Package diskio holds the disk disciplines of wanlab's disk-to-disk
// workloads on hosts whose disk is capped: reading a file from the disk
// rather than the page cache, and writing a stream to the disk as it
// arrives (write-behind), so that the kernel's throttling of the host's
// disk applies to what the workload does.
package diskio

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// AlignedBuffer returns size bytes of page-aligned memory, as O_DIRECT
// needs (an anonymous mapping is page-aligned), and the function that
// frees it.
func AlignedBuffer(size int) ([]byte, func(), error) {
	buf, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("allocating a %d-byte I/O buffer: %w", size, err)
	}
	return buf, func() { unix.Munmap(buf) }, nil
}

// DropCached writes the file's dirty pages to disk and drops its pages from
// the page cache, so that the next read comes from the disk.
func DropCached(f *os.File) error {
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// NoReadAhead turns the kernel's read-ahead off for f: each read waits
// for exactly what it asks of the disk, as in a program that alternates
// reading and sending on a kernel without read-ahead to hide it.
func NoReadAhead(f *os.File) error {
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM)
}

// Prefetch asks for length bytes at off to be read into the page cache
// without waiting, so that the disk works while the caller sends what it
// read before (double buffering through the page cache).
func Prefetch(f *os.File, off, length int64) {
	unix.Fadvise(int(f.Fd()), off, length, unix.FADV_WILLNEED)
}

// WriteBehindChunk is how much a stream writes before it sends it to the
// disk, and WriteBehindDepth how many such chunks may be on their way. Small
// chunks keep the queue at a slow disk short: with 1 MiB chunks, 8 streams
// into a 5 MB/s disk stalled long enough to idle a 32 Mbit/s path (27 Mbit/s
// against 30 with 256 KiB).
const (
	WriteBehindChunk = 256 << 10
	WriteBehindDepth = 4
)

// WriteBehind is a streaming writer's disk discipline: each chunk starts
// its way to the disk as soon as it is in the page cache, and the writer
// waits for the chunk WriteBehindDepth back, so that the disk stays busy
// without the writer waiting on every block or leaving the writing to the
// kernel's flusher (which, on cgroup v1, escapes the host's disk cap).
type WriteBehind struct {
	fd      int
	start   int64      // where the chunk being written begins
	pending [][2]int64 // chunks on their way: offset, length
}

// NewWriteBehind starts write-behind on f for a stream that writes from off.
func NewWriteBehind(f *os.File, off int64) *WriteBehind {
	return &WriteBehind{fd: int(f.Fd()), start: off}
}

// Wrote records that the stream's data now reaches end; last flushes all.
func (w *WriteBehind) Wrote(end int64, last bool) error {
	if end-w.start >= WriteBehindChunk || last && end > w.start {
		if err := unix.SyncFileRange(w.fd, w.start, end-w.start, unix.SYNC_FILE_RANGE_WRITE); err != nil {
			return fmt.Errorf("starting the disk write: %w", err)
		}
		w.pending = append(w.pending, [2]int64{w.start, end - w.start})
		w.start = end
	}
	for len(w.pending) > WriteBehindDepth || last && len(w.pending) > 0 {
		p := w.pending[0]
		w.pending = w.pending[1:]
		if err := unix.SyncFileRange(w.fd, p[0], p[1], unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER); err != nil {
			return fmt.Errorf("waiting for the disk write: %w", err)
		}
	}
	return nil
}
