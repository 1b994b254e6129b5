package transfer

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func transfer(t *testing.T, spec Spec, size, corruptAt int64) (sent, recv Result) {
	t.Helper()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	if err := MakeFile(src, size); err != nil {
		t.Fatal(err)
	}
	r, err := Listen(spec)
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
	sent, err = Send(context.Background(), spec, src, fmt.Sprintf("127.0.0.1:%d", r.Port))
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
		{Spec{Streams: 1, Block: 1 << 20, Window: 1}, "window 1 bytes"},
		{Spec{Streams: 1, Block: 10}, "block 10"},
	}
	for _, tt := range tests {
		if err := tt.spec.Validate(256); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.spec, err, tt.want)
		}
	}
}
