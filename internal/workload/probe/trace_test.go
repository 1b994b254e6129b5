package probe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/bind"
)

// On loopback the reflector is the first hop.
func TestTraceLoopback(t *testing.T) {
	r, addr, _ := loopbackReflector(t)
	hops, reached, err := Trace(context.Background(), addr, r.Token, 5, time.Second)
	if err != nil || !reached || len(hops) != 1 || hops[0].Addr != "127.0.0.1" || hops[0].TTL != 1 {
		t.Errorf("Trace = %+v, %v, %v; want the reflector at TTL 1", hops, reached, err)
	}
	if _, _, err := Trace(context.Background(), "127.0.0.1:1", r.Token, 99, time.Second); err == nil {
		t.Error("99 hops were accepted")
	}
}

// routed is three namespaces, a - r1 - r2 - b, with r1 and r2 routing.
type routed struct {
	t      *testing.T
	suffix string
}

func (n routed) ns(name string) string { return "wltr" + n.suffix + name }

func (n routed) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// in runs fn on a thread inside namespace name: sockets fn opens stay there.
func (n routed) in(name string, fn func()) {
	n.t.Helper()
	h, err := netns.GetFromName(n.ns(name))
	if err != nil {
		n.t.Fatal(err)
	}
	defer h.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := netns.Set(h); err != nil {
			n.t.Error(err)
			return
		}
		fn()
	}()
	<-done
}

// A path through two routers: the hops are the routers, then the
// reflector; when the route changes, so does the list.
func TestTraceThroughRouters(t *testing.T) {
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iproute2")
	b := make([]byte, 2)
	rand.Read(b)
	n := routed{t: t, suffix: hex.EncodeToString(b)}
	names := []string{"a", "r1", "r2", "r3", "b"}
	for _, name := range names {
		n.ip("netns", "add", n.ns(name))
		t.Cleanup(func() { exec.Command("ip", "netns", "del", n.ns(name)).Run() })
		n.ip("-n", n.ns(name), "link", "set", "lo", "up")
	}
	// a -10.93.1.0/24- r1 -10.93.2.0/24- r2 -10.93.3.0/24- b, and r3 beside r2 (10.93.4/5).
	link := func(x, y, net string) {
		n.ip("link", "add", "v"+n.suffix+x+y, "netns", n.ns(x), "type", "veth", "peer", "name", "v"+n.suffix+y+x, "netns", n.ns(y))
		n.ip("-n", n.ns(x), "addr", "add", net+".1/24", "dev", "v"+n.suffix+x+y)
		n.ip("-n", n.ns(y), "addr", "add", net+".2/24", "dev", "v"+n.suffix+y+x)
		n.ip("-n", n.ns(x), "link", "set", "v"+n.suffix+x+y, "up")
		n.ip("-n", n.ns(y), "link", "set", "v"+n.suffix+y+x, "up")
	}
	link("a", "r1", "10.93.1")
	link("r1", "r2", "10.93.2")
	link("r2", "b", "10.93.3")
	link("r1", "r3", "10.93.4")
	link("r3", "b", "10.93.5")
	for _, r := range []string{"r1", "r2", "r3"} {
		n.ip("netns", "exec", n.ns(r), "sysctl", "-qw", "net.ipv4.ip_forward=1")
	}
	n.ip("-n", n.ns("a"), "route", "add", "default", "via", "10.93.1.2")
	n.ip("-n", n.ns("b"), "route", "add", "default", "via", "10.93.3.1")
	n.ip("-n", n.ns("r1"), "route", "add", "10.93.3.0/24", "via", "10.93.2.2")
	n.ip("-n", n.ns("r2"), "route", "add", "10.93.1.0/24", "via", "10.93.2.1")
	n.ip("-n", n.ns("r3"), "route", "add", "10.93.1.0/24", "via", "10.93.4.1")
	n.ip("-n", n.ns("r3"), "route", "add", "10.93.3.0/24", "via", "10.93.5.2")

	var refl *Reflector
	var err error
	n.in("b", func() { refl, err = NewReflector(bind.Local{Addr: "10.93.3.2"}) })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go refl.Run(ctx, time.Minute)
	addr := fmt.Sprintf("10.93.3.2:%d", refl.Port)
	trace := func() []string {
		var hops []Hop
		var reached bool
		var err error
		n.in("a", func() { hops, reached, err = Trace(context.Background(), addr, refl.Token, 8, time.Second) })
		if err != nil || !reached {
			t.Fatalf("Trace = %+v, %v, %v", hops, reached, err)
		}
		var out []string
		for _, h := range hops {
			out = append(out, h.Addr)
		}
		return out
	}
	if got, want := trace(), []string{"10.93.1.2", "10.93.2.2", "10.93.3.2"}; !slices.Equal(got, want) {
		t.Errorf("hops %v, want %v", got, want)
	}
	// The route changes: r1 sends toward b through r3.
	n.ip("-n", n.ns("r1"), "route", "replace", "10.93.3.0/24", "via", "10.93.4.2")
	if got, want := trace(), []string{"10.93.1.2", "10.93.4.2", "10.93.3.2"}; !slices.Equal(got, want) {
		t.Errorf("after the route change: hops %v, want %v", got, want)
	}
}

// On IPv6 loopback too: the trace sets the hop limit and reads ICMPv6
// errors, and the reflector is the first hop.
func TestTraceLoopbackIPv6(t *testing.T) {
	r, err := NewReflector(bind.Local{Addr: "::1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx, 5*time.Second)
	hops, reached, err := Trace(context.Background(), fmt.Sprintf("[::1]:%d", r.Port), r.Token, 5, time.Second)
	if err != nil || !reached || len(hops) != 1 || hops[0].Addr != "::1" || hops[0].TTL != 1 {
		t.Errorf("Trace = %+v, %v, %v; want the reflector ::1 at TTL 1", hops, reached, err)
	}
}
