// Package disk measures a host's sequential write and read rates of a file,
// the end-host I/O reference beside network figures (as Bonnie++ and IOzone
// were in the ALICE tests).
package disk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/diskio"
)

// Spec is one disk test.
type Spec struct {
	Dir   *os.Root // the folder the test file is written in (and removed from)
	Size  int64
	Block int
	// Fsync makes the write phase end with fsync, so that it measures the
	// disk rather than the page cache.
	Fsync bool
	// Direct uses O_DIRECT for both phases, bypassing the page cache.
	Direct bool
}

// Result is one test's rates.
type Result struct {
	WriteBytesPerSecond float64 `json:"write_bytes_per_second"`
	ReadBytesPerSecond  float64 `json:"read_bytes_per_second"`
	WriteSeconds        float64 `json:"write_seconds"`
	ReadSeconds         float64 `json:"read_seconds"`
	Bytes               int64   `json:"bytes"`
	// CacheDropped says the page cache was emptied of the file before the
	// read phase, so reads came from the device.
	CacheDropped bool `json:"cache_dropped"`
}

// alignment of O_DIRECT buffers and sizes.
const alignment = 4096

// Validate checks a spec.
func (s Spec) Validate(l limits.Limits) error {
	if err := l.Bytes("size", s.Size); err != nil {
		return err
	}
	switch {
	case s.Size <= 0:
		return errors.New("size must be positive")
	case s.Block < alignment || s.Block > 64<<20:
		return fmt.Errorf("block %d: give %d bytes to 64 MiB", s.Block, alignment)
	case s.Direct && s.Block%alignment != 0:
		return fmt.Errorf("block %d: O_DIRECT needs a multiple of %d", s.Block, alignment)
	}
	return nil
}

// Run writes the file, reads it back, removes it and returns the rates. A
// full disk is an error naming the directory and how much was written.
// Run checks ctx between blocks: once ctx ends (its controller is gone, or
// its deadline passed), it stops within a block, removes the file and
// returns an error that wraps ctx's.
func Run(ctx context.Context, s Spec) (Result, error) {
	name := fmt.Sprintf("wanlab-disk-%d-%d", os.Getpid(), time.Now().UnixNano())
	defer s.Dir.Remove(name)
	flags := unix.O_NOFOLLOW
	if s.Direct {
		flags |= unix.O_DIRECT
	}
	buf, free, err := diskio.AlignedBuffer(s.Block)
	if err != nil {
		return Result{}, err
	}
	defer free()
	for i := range buf {
		buf[i] = byte(i*7 + i>>8)
	}
	res := Result{Bytes: s.Size}

	f, err := s.Dir.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY|flags, 0o600)
	if err != nil {
		return res, fmt.Errorf("creating the test file in %s: %w", s.Dir.Name(), err)
	}
	start := time.Now()
	var written int64
	var sync *chunkSync
	if s.Fsync && !s.Direct {
		sync = &chunkSync{fd: int(f.Fd())}
	}
	for written < s.Size {
		if err := ctx.Err(); err != nil {
			f.Close()
			return res, stopped("writing", written, s.Size, err)
		}
		n := min(int64(len(buf)), s.Size-written)
		if s.Direct {
			n = int64(len(buf)) // whole aligned blocks; the size is rounded up
		}
		k, err := f.Write(buf[:n])
		written += int64(k)
		if err != nil {
			f.Close()
			if errors.Is(err, unix.ENOSPC) {
				return res, fmt.Errorf("the disk under %s is full after %d of %d bytes: %w", s.Dir.Name(), written, s.Size, err)
			}
			return res, fmt.Errorf("writing the test file: %w", err)
		}
		if sync != nil {
			if err := sync.wrote(written); err != nil {
				f.Close()
				return res, err
			}
		}
	}
	if s.Fsync {
		if err := ctx.Err(); err != nil {
			f.Close()
			return res, stopped("writing", written, s.Size, err)
		}
		// The chunks have reached the disk as they were written: what
		// is left is short.
		if err := f.Sync(); err != nil {
			f.Close()
			return res, fmt.Errorf("fsync: %w", err)
		}
	}
	res.WriteSeconds = time.Since(start).Seconds()
	f.Close()
	res.WriteBytesPerSecond = float64(written) / res.WriteSeconds

	// Drop the file from the page cache so that the reads come from the device.
	if err := ctx.Err(); err != nil {
		return res, stopped("writing", written, s.Size, err)
	}
	if f, err := s.Dir.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW, 0); err == nil {
		f.Sync()
		res.CacheDropped = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED) == nil
		f.Close()
	}
	f, err = s.Dir.OpenFile(name, os.O_RDONLY|flags, 0)
	if err != nil {
		return res, err
	}
	defer f.Close()
	start = time.Now()
	var read int64
	for {
		if err := ctx.Err(); err != nil {
			return res, stopped("reading", read, written, err)
		}
		k, err := f.Read(buf)
		read += int64(k)
		if err == io.EOF || k == 0 {
			break
		}
		if err != nil {
			return res, fmt.Errorf("reading the test file: %w", err)
		}
	}
	res.ReadSeconds = time.Since(start).Seconds()
	res.ReadBytesPerSecond = float64(read) / res.ReadSeconds
	return res, nil
}

// syncChunk is how much of a buffered test file with Fsync is written
// before its way to the disk starts; the chunk before it is waited for
// then, so that the page cache holds at most two chunks of it, the final
// fsync is short, and ctx is checked between chunks. One fsync of a
// multi-GB file, which nothing can interrupt, once held a host for
// minutes after its controller had gone.
const syncChunk = 8 << 20

// syncRange is unix.SyncFileRange (tests watch it).
var syncRange = unix.SyncFileRange

// chunkSync sends a file's chunks to the disk as they are written.
type chunkSync struct {
	fd                int
	start             int64 // of the chunk being written
	prevOff, prevSize int64 // the chunk on its way
}

// wrote records that the file is written up to end.
func (c *chunkSync) wrote(end int64) error {
	if end-c.start < syncChunk {
		return nil
	}
	if err := syncRange(c.fd, c.start, end-c.start, unix.SYNC_FILE_RANGE_WRITE); err != nil {
		return fmt.Errorf("starting the write of the test file to the disk: %w", err)
	}
	if c.prevSize > 0 {
		if err := syncRange(c.fd, c.prevOff, c.prevSize, unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER); err != nil {
			return fmt.Errorf("writing the test file to the disk: %w", err)
		}
	}
	c.prevOff, c.prevSize, c.start = c.start, end-c.start, end
	return nil
}

// stopped is the error of a test whose context ended after done of total
// bytes of a phase.
func stopped(phase string, done, total int64, err error) error {
	return fmt.Errorf("the disk test stopped %s after %d of %d bytes: %w", phase, done, total, err)
}
