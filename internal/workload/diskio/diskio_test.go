package diskio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteBehind writes a stream in uneven pieces, as network reads come,
// and checks that every byte is in the file and nothing is left pending.
func TestWriteBehind(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := make([]byte, 3*WriteBehindChunk*WriteBehindDepth+12345)
	for i := range want {
		want[i] = byte(i * 31)
	}
	const off = 4096
	w := NewWriteBehind(f, off)
	for n, piece := 0, 1; n < len(want); piece = piece*7%65521 + 1 {
		k := min(piece, len(want)-n)
		if _, err := f.WriteAt(want[n:n+k], off+int64(n)); err != nil {
			t.Fatal(err)
		}
		n += k
		if err := w.Wrote(off+int64(n), n == len(want)); err != nil {
			t.Fatal(err)
		}
		if len(w.pending) > WriteBehindDepth {
			t.Fatalf("%d chunks pending, the most is %d", len(w.pending), WriteBehindDepth)
		}
	}
	if len(w.pending) != 0 || w.start != off+int64(len(want)) {
		t.Errorf("after the last write: %d chunks pending, next chunk at %d", len(w.pending), w.start)
	}
	if err := DropCached(f); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, off); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the file does not hold what was written (%v)", err)
	}
}
