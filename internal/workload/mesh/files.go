package mesh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/workload/diskio"
)

// Files are a node's disk, for transfers from disk to disk as bbFTP's were:
// a source file that what the node sends is read from, and a folder that
// what it receives is written to (and then removed).
type Files struct {
	dir      *os.Root
	source   *os.File
	span     int64 // bytes of the source; reads wrap around it
	uncached bool
}

// sourceName is the source file in the node's folder.
const sourceName = "mesh-source"

const (
	// directAlign is the alignment of O_DIRECT offsets, sizes and buffers.
	directAlign = 4096
	// fileChunk is how much a stream reads or writes at a time.
	fileChunk = 256 << 10
	// maxSpan bounds the source file: a stream's share wraps around it, so
	// that a slow disk is not kept busy for minutes writing it first.
	maxSpan = 64 << 20
)

// OpenFiles writes the source file into dir, the node's own folder:
// largest bytes (the largest share of a transfer one stream carries), at
// most 64 MiB. With uncached, reads bypass the page cache (O_DIRECT) and
// received data is written with write-behind, so that a host's disk cap
// applies to every byte moved; a host whose disk is capped needs it. Once
// ctx ends, it stops writing within a chunk, removes the file and returns
// an error that wraps ctx's.
func OpenFiles(ctx context.Context, dir *os.Root, largest int64, uncached bool) (*Files, error) {
	span := min(maxSpan, (largest+fileChunk-1)/fileChunk*fileChunk)
	flags := os.O_CREATE | os.O_TRUNC | os.O_RDWR | unix.O_NOFOLLOW
	if uncached {
		flags |= unix.O_DIRECT
	}
	f, err := dir.OpenFile(sourceName, flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating the mesh source file: %w", err)
	}
	buf, free, err := diskio.AlignedBuffer(fileChunk)
	if err != nil {
		f.Close()
		return nil, err
	}
	defer free()
	for off := int64(0); off < span; off += fileChunk {
		if err := ctx.Err(); err != nil {
			f.Close()
			dir.Remove(sourceName)
			return nil, fmt.Errorf("writing the mesh source file stopped after %d of %d bytes: %w", off, span, err)
		}
		for i := range buf {
			buf[i] = pattern[(int(off)+i)%len(pattern)]
		}
		if _, err := f.WriteAt(buf, off); err != nil {
			f.Close()
			dir.Remove(sourceName)
			if errors.Is(err, unix.ENOSPC) {
				return nil, fmt.Errorf("the disk under %s is full after %d of %d bytes of the mesh source file: %w", dir.Name(), off, span, err)
			}
			return nil, fmt.Errorf("writing the mesh source file: %w", err)
		}
	}
	return &Files{dir: dir, source: f, span: span, uncached: uncached}, nil
}

// Close closes the source file and removes it.
func (f *Files) Close() error {
	f.source.Close()
	return f.dir.Remove(sourceName)
}

// send writes length bytes of the source file to w, starting at an aligned
// offset chosen by seed and wrapping around the file.
func (f *Files) send(w io.Writer, seed uint64, length int64) error {
	buf, free, err := diskio.AlignedBuffer(fileChunk)
	if err != nil {
		return err
	}
	defer free()
	pos := int64(seed%uint64(f.span/directAlign)) * directAlign
	for length > 0 {
		n := min(fileChunk, length, f.span-pos)
		// O_DIRECT reads whole aligned blocks; the span is a multiple of them.
		read := (n + directAlign - 1) / directAlign * directAlign
		if _, err := f.source.ReadAt(buf[:read], pos); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading the mesh source file: %w", err)
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		length -= n
		pos = (pos + n) % f.span
	}
	return nil
}

// receive writes length bytes from r into a new file, also into also, and
// removes the file once all is on the disk.
func (f *Files) receive(r io.Reader, length int64, also io.Writer) error {
	name := fmt.Sprintf("mesh-in-%016x", rand.Uint64())
	out, err := f.dir.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("creating a file for what arrives: %w", err)
	}
	defer f.dir.Remove(name)
	defer out.Close()
	var behind *diskio.WriteBehind
	if f.uncached {
		behind = diskio.NewWriteBehind(out, 0)
	}
	buf := make([]byte, fileChunk)
	var n int64
	for n < length {
		k, err := io.ReadFull(r, buf[:min(int64(len(buf)), length-n)])
		if err != nil {
			return fmt.Errorf("after %d of %d bytes: %w", n, length, err)
		}
		also.Write(buf[:k])
		if _, err := out.WriteAt(buf[:k], n); err != nil {
			if errors.Is(err, unix.ENOSPC) {
				return fmt.Errorf("the disk under %s is full after %d of %d bytes: %w", f.dir.Name(), n, length, err)
			}
			return fmt.Errorf("writing what arrives: %w", err)
		}
		n += int64(k)
		if behind != nil {
			if err := behind.Wrote(n, n == length); err != nil {
				return err
			}
		}
	}
	if behind == nil {
		return out.Sync()
	}
	return nil
}
