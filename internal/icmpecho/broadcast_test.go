package icmpecho

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNoBroadcast: an echo toward a subnet's broadcast address from a raw
// socket is refused by the kernel before it leaves (the socket has no
// broadcast flag, which Go sets on raw sockets), rather than reaching
// every host on the subnet.
func TestNoBroadcast(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("raw ICMP sockets need root")
	}
	p := Pinger{Target: netip.MustParseAddr("127.255.255.255"), Count: 1, Interval: MinInterval, Timeout: 100 * time.Millisecond, Socket: SocketRaw}
	_, err := p.Run(context.Background())
	if !errors.Is(err, unix.EACCES) {
		t.Errorf("an echo toward 127.255.255.255: %v, want EACCES (no broadcast)", err)
	}
}
