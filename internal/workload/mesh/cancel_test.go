package mesh

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/wanlab/wanlab/internal/testsupport"
)

// TestOpenFilesEndsWithItsContext: a node's source file (up to 64 MiB, at
// a capped disk's rate) was written whole after its controller was gone.
// It stops within a chunk and leaves nothing behind.
func TestOpenFilesEndsWithItsContext(t *testing.T) {
	dir := testsupport.TempRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	files, err := OpenFiles(ctx, dir, maxSpan, false)
	if !errors.Is(err, context.Canceled) {
		if files != nil {
			files.Close()
		}
		t.Errorf("OpenFiles cancelled: %v, want an error wrapping %v", err, context.Canceled)
	}
	if entries, _ := os.ReadDir(dir.Name()); len(entries) != 0 {
		t.Errorf("%d files left behind", len(entries))
	}
}
