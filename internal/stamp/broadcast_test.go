package stamp

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNoBroadcast: a session toward a broadcast address is refused by
// the kernel before a packet leaves (the socket has no broadcast flag).
func TestNoBroadcast(t *testing.T) {
	_, err := Session{Count: 1, Interval: time.Millisecond, Timeout: 100 * time.Millisecond}.Run(context.Background(), "127.255.255.255:862")
	if !errors.Is(err, unix.EACCES) {
		t.Errorf("a session toward 127.255.255.255: %v, want EACCES (no broadcast)", err)
	}
}
