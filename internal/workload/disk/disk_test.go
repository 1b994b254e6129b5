package disk

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/testsupport"
)

func TestRun(t *testing.T) {
	for _, spec := range []Spec{
		{Dir: testsupport.TempRoot(t), Size: 8 << 20, Block: 1 << 20, Fsync: true},
		{Dir: testsupport.TempRoot(t), Size: 4 << 20, Block: 64 << 10, Direct: true},
	} {
		res, err := Run(context.Background(), spec)
		if err != nil {
			if spec.Direct && strings.Contains(err.Error(), "invalid argument") {
				t.Logf("O_DIRECT is not supported on this file system: %v", err)
				continue
			}
			t.Fatal(err)
		}
		if res.WriteBytesPerSecond <= 0 || res.ReadBytesPerSecond <= 0 || res.Bytes != spec.Size {
			t.Errorf("%+v: %+v", spec, res)
		}
		entries, _ := os.ReadDir(spec.Dir.Name())
		if len(entries) != 0 {
			t.Errorf("test file left behind in %s", spec.Dir.Name())
		}
	}
}

// TestRunEndsWithItsContext: a 300 MB direct-I/O test once went on writing
// for 8 s after its controller was killed. Run stops within a block of its
// context's end and leaves no file behind.
func TestRunEndsWithItsContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"buffered", Spec{Size: 512 << 20, Block: 1 << 20}},
		{"fsync", Spec{Size: 512 << 20, Block: 1 << 20, Fsync: true}},
		{"direct", Spec{Size: 512 << 20, Block: 4096, Direct: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Dir = testsupport.TempRoot(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			returned := make(chan struct{})
			cancelled := make(chan time.Time, 1)
			go func() {
				// Cancel as soon as the test file appears: the test has
				// only begun.
				for {
					select {
					case <-returned:
						cancelled <- time.Time{}
						return
					default:
					}
					if entries, _ := os.ReadDir(tc.spec.Dir.Name()); len(entries) > 0 {
						cancel()
						cancelled <- time.Now()
						return
					}
					time.Sleep(time.Millisecond)
				}
			}()
			_, err := Run(ctx, tc.spec)
			end := time.Now()
			close(returned)
			at := <-cancelled
			if tc.spec.Direct && errors.Is(err, unix.EINVAL) {
				t.Skipf("O_DIRECT is not supported on this file system: %v", err)
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run cancelled as it began: %v, want an error wrapping %v", err, context.Canceled)
			}
			if late := end.Sub(at); late > 3*time.Second {
				t.Errorf("Run returned %v after its context ended", late)
			}
			if entries, _ := os.ReadDir(tc.spec.Dir.Name()); len(entries) != 0 {
				t.Errorf("test file left behind in %s", tc.spec.Dir.Name())
			}
		})
	}
}

// TestFsyncIsChunked: a buffered test with fsync wrote its whole file
// into the page cache and synced it in one call, which nothing could
// interrupt: it held a host long after its controller had gone. Its
// chunks go to the disk as they are written, and it stops between them.
func TestFsyncIsChunked(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var chunks []int64
	syncRange = func(fd int, off, n int64, flags int) error {
		if flags == unix.SYNC_FILE_RANGE_WRITE {
			chunks = append(chunks, off+n)
		}
		if len(chunks) == 4 {
			cancel() // the controller goes while the file is written
		}
		return unix.SyncFileRange(fd, off, n, flags)
	}
	defer func() { syncRange = unix.SyncFileRange }()
	spec := Spec{Dir: testsupport.TempRoot(t), Size: 256 << 20, Block: 1 << 20, Fsync: true}
	_, err := Run(ctx, spec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled after %v: %v, want an error wrapping %v", chunks, err, context.Canceled)
	}
	if len(chunks) != 4 || chunks[3] > 4*syncChunk+int64(spec.Block) {
		t.Errorf("chunks sent to the disk up to %v, want 4 of %d bytes", chunks, syncChunk)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{Size: 0, Block: 4096}, "size must be positive"},
		{Spec{Size: 1 << 40, Block: 4096}, "over the agent's limit"},
		{Spec{Size: 1 << 20, Block: 100}, "block 100"},
		{Spec{Size: 1 << 20, Block: 5000, Direct: true}, "multiple of 4096"},
	}
	for _, tt := range tests {
		if err := tt.spec.Validate(limits.Limits{MaxBytes: 1 << 30}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.spec, err, tt.want)
		}
	}
}
