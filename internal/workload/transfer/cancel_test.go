package transfer

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestFileWorkEndsWithItsContext: making a file to send, and hashing one,
// went on after the controller was gone (up to the agent's byte limit of
// 1 TiB). Both stop within a chunk of their context's end.
func TestFileWorkEndsWithItsContext(t *testing.T) {
	small := newFile(t, "small")
	if err := MakeFile(context.Background(), small, 4<<20); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// cancelAfter is when ctx is cancelled (0: before the call).
		cancelAfter time.Duration
		run         func(context.Context) error
	}{
		// A gigabyte takes seconds to make: cancelled as it begins.
		{"make", time.Millisecond, func(ctx context.Context) error { return MakeFile(ctx, newFile(t, "big"), 1<<30) }},
		{"hash", 0, func(ctx context.Context) error { _, err := hashFile(ctx, small, 4<<20); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelAfter == 0 {
				cancel()
			} else {
				time.AfterFunc(tc.cancelAfter, cancel)
			}
			began := time.Now()
			err := tc.run(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled: %v, want an error wrapping %v", err, context.Canceled)
			}
			if took := time.Since(began); took > 3*time.Second {
				t.Errorf("returned after %v", took)
			}
		})
	}
}
