package transfer

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// newFile creates an empty file in a test's folder.
func newFile(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), name), os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func transfer(t *testing.T, spec Spec, size, corruptAt int64) (sent, recv Result) {
	t.Helper()
	src, dst := newFile(t, "src"), newFile(t, "dst")
	if err := MakeFile(context.Background(), src, size); err != nil {
		t.Fatal(err)
	}
	r, err := Listen(spec, bind.Local{Addr: "127.0.0.1"}, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	r.CorruptAt = corruptAt
	done := make(chan error, 1)
	go func() {
		var err error
		recv, err = r.Run(context.Background(), dst)
		done <- err
	}()
	sent, err = Send(context.Background(), spec, src, fmt.Sprintf("127.0.0.1:%d", r.Port), r.Token)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return sent, recv
}

func TestTransfer(t *testing.T) {
	const size = 10<<20 + 12345
	for _, spec := range []Spec{
		{Streams: 1, Block: 1 << 20},
		{Streams: 4, Block: 256 << 10},
		{Streams: 3, Block: 1 << 20, Compress: true},
		{Streams: 3, Block: 1 << 20, Uncached: true},
		{Streams: 2, Block: 256 << 10, Compress: true, Uncached: true},
	} {
		t.Run(fmt.Sprintf("%d streams compress %v uncached %v", spec.Streams, spec.Compress, spec.Uncached), func(t *testing.T) {
			sent, recv := transfer(t, spec, size, -1)
			if sent.SHA256 == "" || sent.SHA256 != recv.SHA256 || recv.Bytes != size || sent.Bytes != size {
				t.Fatalf("sent %+v, received %+v", sent, recv)
			}
			var sum int64
			for _, n := range recv.Streams {
				sum += n
			}
			if sum != size || len(recv.Streams) != spec.Streams {
				t.Errorf("streams %v do not add up to %d", recv.Streams, size)
			}
			if spec.Compress && (sent.WireBytes >= size*3/4 || recv.WireBytes <= 0) {
				t.Errorf("compressed transfer put %d bytes on the wire for %d", sent.WireBytes, size)
			}
			if !spec.Compress && sent.WireBytes != size {
				t.Errorf("plain transfer put %d bytes on the wire for %d", sent.WireBytes, size)
			}
		})
	}
}

func TestChecksumCatchesACorruptByte(t *testing.T) {
	sent, recv := transfer(t, Spec{Streams: 2, Block: 1 << 20}, 4<<20, 3_000_001)
	if sent.SHA256 == recv.SHA256 {
		t.Fatal("a flipped byte went unnoticed: the checksums agree")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Streams: 0, Block: 1 << 20}, "streams 0"},
		{Spec{Streams: 1000, Block: 1 << 20}, "over the agent's limit"},
		{Spec{Streams: 1, Block: 1 << 20, Window: 1}, "window 1 bytes"},
		{Spec{Streams: 1, Block: 10}, "block 10"},
	}
	for _, tt := range tests {
		if err := tt.spec.Validate(limits.Default); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.spec, err, tt.want)
		}
	}
}

// hostile sends raw bytes as the streams of a transfer to a receiver that
// takes files of at most maxBytes, and returns the receiver's error and
// what it left in the file.
func hostile(t *testing.T, spec Spec, maxBytes int64, streams ...[]byte) (error, int64) {
	t.Helper()
	out := newFile(t, "dst")
	r, err := Listen(spec, bind.Local{Addr: "127.0.0.1"}, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background(), out)
		done <- err
	}()
	for _, b := range streams {
		c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", r.Port))
		if err != nil {
			t.Fatal(err)
		}
		if err := token.Greet(c, r.Token, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		c.Write(b)
		c.(*net.TCPConn).CloseWrite()
		defer c.Close()
	}
	err = <-done
	fi, _ := out.Stat()
	return err, fi.Size()
}

// TestReceiverRefusesHostileStreams: a sender may not make the receiver
// write beyond the file it announced, announce more than the limit, claim
// a range that is not its own, send a stream twice, or inflate a small
// compressed block into a huge one (each found by sending raw bytes to a
// receiving agent).
func TestReceiverRefusesHostileStreams(t *testing.T) {
	plain := Spec{Streams: 1, Block: 64 << 10}
	packed := Spec{Streams: 1, Block: 64 << 10, Compress: true}
	bomb := func() []byte {
		enc, _ := zstd.NewWriter(nil)
		defer enc.Close()
		frame := enc.EncodeAll(make([]byte, 512<<20), nil) // 512 MiB of zeros, a few KiB packed
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(frame)))
		return append(l[:], frame...)
	}()
	tests := []struct {
		name     string
		spec     Spec
		maxBytes int64
		streams  [][]byte
		want     string
	}{
		{"offset far beyond a 1-byte file", plain, 1 << 30,
			[][]byte{header{id: 0, total: 1, off: 2 << 30, length: 1}.encode()}, "not its range"},
		{"a 2 GiB file over a 1 MiB limit", plain, 1 << 20,
			[][]byte{header{id: 0, total: 2 << 30, off: 0, length: 2 << 30}.encode()}, "over the receiver's limit"},
		{"a stream id past the count", plain, 1 << 20,
			[][]byte{header{id: 7, total: 10, off: 0, length: 10}.encode()}, "stream 7 of a 1-stream transfer"},
		{"a stream sent twice", Spec{Streams: 2, Block: 64 << 10}, 1 << 20,
			[][]byte{header{id: 0, total: 10, length: 5}.encode(), header{id: 0, total: 10, length: 5}.encode()}, "arrived twice"},
		{"two streams announcing different files", Spec{Streams: 2, Block: 64 << 10}, 1 << 20,
			[][]byte{header{id: 0, total: 10, length: 5}.encode(), header{id: 1, total: 20, off: 10, length: 10}.encode()}, "announces a"},
		{"a frame bigger than a block can pack to", packed, 1 << 30,
			[][]byte{append(header{id: 0, total: 100, length: 100, compressed: true}.encode(), 0x7f, 0xff, 0xff, 0xff)}, "over the bound"},
		{"a decompression bomb", packed, 1 << 30,
			[][]byte{append(header{id: 0, total: 100, length: 100, compressed: true}.encode(), bomb...)}, "compressed block"},
		{"not a transfer", plain, 1 << 20, [][]byte{[]byte("GET / HTTP/1.0\r\n\r\n.......................")}, "not a wanlab transfer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err, size := hostile(t, tt.spec, tt.maxBytes, tt.streams...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("receiver: %v, want an error with %q", err, tt.want)
			}
			if size > 100 {
				t.Errorf("the receiver wrote a %d-byte file for a hostile stream", size)
			}
		})
	}
}

// FuzzCopyRange feeds arbitrary bytes to a receiving stream: it must never
// write outside its range, whatever the bytes say.
func FuzzCopyRange(f *testing.F) {
	enc, _ := zstd.NewWriter(nil)
	good := enc.EncodeAll([]byte("hello, hello, hello"), nil)
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(good)))
	f.Add(append(header{id: 0, total: 19, length: 19, compressed: true}.encode(), append(l[:], good...)...), 1)
	f.Add(append(header{id: 1, total: 40, off: 20, length: 20}.encode(), make([]byte, 20)...), 2)
	f.Add([]byte("WLX2"), 1)
	f.Fuzz(func(t *testing.T, data []byte, streams int) {
		if streams < 1 || streams > 8 {
			return
		}
		const limit = 1 << 16
		r := bytes.NewReader(data)
		h, err := readHeader(r, streams, limit)
		if err != nil {
			return
		}
		w := &boundedWriter{lo: h.off, hi: h.off + h.length}
		var wire atomic.Int64
		n, _ := copyRange(r, w, h, 4096, nil, &wire)
		if n > h.length || w.err != nil {
			t.Fatalf("wrote %d bytes of a %d-byte range: %v", n, h.length, w.err)
		}
	})
}

// boundedWriter fails a write outside [lo, hi).
type boundedWriter struct {
	lo, hi int64
	err    error
}

func (w *boundedWriter) WriteAt(p []byte, off int64) (int, error) {
	if off < w.lo || off+int64(len(p)) > w.hi {
		w.err = fmt.Errorf("a write of %d bytes at %d, outside [%d, %d)", len(p), off, w.lo, w.hi)
		return 0, w.err
	}
	return len(p), nil
}
