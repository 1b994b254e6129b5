package icmpecho

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/icmp"
)

func TestLoopback(t *testing.T) {
	for _, target := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1"} {
		for _, socket := range []string{SocketAuto, SocketDatagram, SocketRaw} {
			t.Run(target+" "+socket, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				p := Pinger{Target: netip.MustParseAddr(target), Count: 5, Interval: 20 * time.Millisecond, Timeout: 10 * time.Second, Socket: socket}
				res, err := p.Run(ctx)
				if errors.Is(err, errDenied) {
					t.Skipf("this host does not let the test open it: %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s socket, %d of %d round trips from kernel timestamps: %+v", res.Socket, res.KernelTimes, res.Received, res.RTT)
				if socket != SocketAuto && res.Socket != socket || res.Target != netip.MustParseAddr(target).Unmap() {
					t.Errorf("socket %q toward %v", res.Socket, res.Target)
				}
				r := res.RTT
				if res.Sent != 5 || res.Received != 5 || res.Duplicates != 0 || res.Late != 0 || res.Loss.Lost != 0 || len(res.Echoes) != 5 {
					t.Errorf("loopback lost echoes: %+v", res)
				}
				if !(0 < r.Min && r.Min <= r.Median && r.Median <= r.Max && r.Min <= r.Mean && r.Mean <= r.Max && r.Max < p.Timeout) {
					t.Errorf("round trips out of order: %+v", r)
				}
			})
		}
	}
}

var pingSummary = regexp.MustCompile(`(\d+) received.*\n.*= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms`)

// TestAgainstSystemPing sets the Pinger beside the system's ping on
// loopback: both are logged; they must agree only that the path is fast
// and loses nothing.
func TestAgainstSystemPing(t *testing.T) {
	const ping = "/usr/bin/ping"
	if _, err := os.Stat(ping); err != nil {
		t.Skipf("no %s", ping)
	}
	for _, target := range []string{"127.0.0.1", "::1"} {
		t.Run(target, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, ping, "-c", "5", "-i", "0.2", "-n", target).CombinedOutput()
			m := pingSummary.FindStringSubmatch(string(out))
			if err != nil || m == nil {
				t.Skipf("%s does not run here: %v\n%s", ping, err, out)
			}
			res, err := Pinger{Target: netip.MustParseAddr(target), Count: 5, Interval: 200 * time.Millisecond}.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("ping:     %s received, rtt min/avg/max/mdev = %s/%s/%s/%s ms", m[1], m[2], m[3], m[4], m[5])
			ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }
			t.Logf("icmpecho: %d received, rtt min/avg/max/stddev = %s/%s/%s/%s ms (median %s; %s socket)",
				res.Received, ms(res.RTT.Min), ms(res.RTT.Mean), ms(res.RTT.Max), ms(res.RTT.StdDev), ms(res.RTT.Median), res.Socket)
			avg, _ := strconv.ParseFloat(m[3], 64)
			if m[1] != "5" || res.Received != 5 || avg <= 0 || avg > 1000 || res.RTT.Mean <= 0 || res.RTT.Mean > time.Second {
				t.Errorf("loopback is not fast and lossless for both")
			}
		})
	}
}

// fake is an ICMP socket that answers each echo as answer says: packets
// queue until read, and read waits for one or for its deadline.
type fake struct {
	mu       sync.Mutex
	deadline time.Time
	changed  chan struct{}
	queue    []packet
	answer   func(req *icmp.Echo) []packet
	rewrites bool
}

type packet struct {
	b    []byte
	from netip.Addr
}

func newFake(rewrites bool, answer func(req *icmp.Echo) []packet) *fake {
	return &fake{changed: make(chan struct{}), answer: answer, rewrites: rewrites}
}

func (f *fake) signal() { close(f.changed); f.changed = make(chan struct{}) }

func (f *fake) write(b []byte) error {
	m, err := icmp.ParseMessage(protoICMP, b)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, f.answer(m.Body.(*icmp.Echo))...)
	f.signal()
	return nil
}

func (f *fake) read(b, oob []byte) (int, netip.Addr, time.Time, error) {
	for {
		f.mu.Lock()
		if len(f.queue) > 0 {
			p := f.queue[0]
			f.queue = f.queue[1:]
			f.mu.Unlock()
			return copy(b, p.b), p.from, time.Time{}, nil
		}
		wait, changed := time.Until(f.deadline), f.changed
		f.mu.Unlock()
		if wait <= 0 {
			return 0, netip.Addr{}, time.Time{}, os.ErrDeadlineExceeded
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-changed:
			timer.Stop()
		}
	}
}

func (f *fake) setReadDeadline(t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deadline = t
	f.signal()
	return nil
}

func (f *fake) rewritesID() bool { return f.rewrites }
func (f *fake) close() error     { return nil }

var far = netip.MustParseAddr("192.0.2.1")

// fakePinger is a Pinger of far through c.
func fakePinger(c conn, count int, timeout time.Duration) Pinger {
	return Pinger{Target: far, Count: count, Interval: MinInterval, Timeout: timeout,
		open: func(string, netip.Addr, netip.Addr) (conn, string, error) { return c, "fake", nil }}
}

func TestMatching(t *testing.T) {
	var held []packet
	answer := func(id int) func(req *icmp.Echo) []packet {
		return func(req *icmp.Echo) []packet {
			p := packet{reply(t, false, id, req.Seq, req.Data), far}
			return []packet{p}
		}
	}
	tests := []struct {
		name     string
		rewrites bool
		answer   func(req *icmp.Echo) []packet
		want     Result // its counters
		silent   bool
	}{
		{"a datagram socket's id is the kernel's", true, answer(4242), Result{Sent: 3, Received: 3}, false},
		{"a raw socket sees other programs' replies", false, func(req *icmp.Echo) []packet { return answer(req.ID ^ 1)(req) }, Result{Sent: 3}, true},
		{"a raw socket's own id", false, func(req *icmp.Echo) []packet { return answer(req.ID)(req) }, Result{Sent: 3, Received: 3}, false},
		{"strangers, duplicates, reordering", true, func(req *icmp.Echo) []packet {
			p := answer(req.ID)(req)[0]
			out := []packet{
				{p.b, netip.MustParseAddr("192.0.2.2")},                           // another host
				{reply(t, false, req.ID, req.Seq, []byte("not our cookie")), far}, // another run
				{[]byte{8, 0, 0}, far},                                            // no reply at all
			}
			switch {
			case held == nil: // the first reply comes after the second
				held = []packet{p}
				return out
			case len(held) == 1: // the second's reply comes twice
				held = append(held, p)
				return append(out, p, held[0], p)
			}
			return append(out, p)
		}, Result{Sent: 3, Received: 3, Duplicates: 1, Reordered: 1}, false},
		{"silent", true, func(*icmp.Echo) []packet { return nil }, Result{Sent: 3}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			held = nil
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := fakePinger(newFake(tc.rewrites, tc.answer), 3, 200*time.Millisecond).Run(ctx)
			var silent *SilentError
			if tc.silent != errors.As(err, &silent) || !tc.silent && err != nil {
				t.Fatalf("error %v", err)
			}
			if tc.silent && (silent.Target != far || silent.Sent != 3 || !strings.Contains(err.Error(), "icmp echo to 192.0.2.1: no reply to any of 3 echoes within 200ms") || !silent.Timeout()) {
				t.Errorf("a silent target: %v", err)
			}
			w := tc.want
			if res.Sent != w.Sent || res.Received != w.Received || res.Duplicates != w.Duplicates || res.Reordered != w.Reordered || res.Socket != "fake" {
				t.Errorf("got %+v", res)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := newFake(true, func(*icmp.Echo) []packet { cancel(); return nil })
	done := make(chan error, 1)
	go func() {
		_, err := fakePinger(f, 2, MaxTimeout).Run(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "192.0.2.1") {
			t.Errorf("got %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a cancelled run did not end")
	}
}

func TestPingerChecks(t *testing.T) {
	a := netip.MustParseAddr("127.0.0.1")
	tests := []struct {
		name string
		p    Pinger
		want string
	}{
		{"no target", Pinger{}, "give a unicast address"},
		{"multicast", Pinger{Target: netip.MustParseAddr("ff02::1")}, "icmp echo to ff02::1: give a unicast address"},
		{"family", Pinger{Target: a, Source: netip.MustParseAddr("::1")}, "source ::1 is of the other IP family"},
		{"count", Pinger{Target: a, Count: MaxCount + 1}, "10001 echoes: give 1 to 10000"},
		{"interval", Pinger{Target: a, Interval: time.Millisecond}, "interval 1ms: give 10ms to 1m0s"},
		{"timeout", Pinger{Target: a, Timeout: -1}, "timeout -1ns"},
		{"size", Pinger{Target: a, Size: 4}, "4 bytes of data: give 8 to 8952"},
		{"socket", Pinger{Target: a, Socket: "tcp"}, `socket "tcp"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.open = func(string, netip.Addr, netip.Addr) (conn, string, error) {
				t.Fatal("a bad Pinger opened a socket")
				return nil, "", nil
			}
			if _, err := tc.p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestBounds(t *testing.T) {
	p := Pinger{Target: netip.MustParseAddr("192.0.2.1"), Count: 10, Interval: 100 * time.Millisecond}
	if got := p.Bytes(); got != 10*(20+8+DefaultSize) {
		t.Errorf("bytes %d", got)
	}
	if got := p.Rate(); got != (20+8+DefaultSize)*8*10 {
		t.Errorf("rate %v", got)
	}
	if got := p.Duration(); got != 900*time.Millisecond+DefaultTimeout {
		t.Errorf("duration %v", got)
	}
	p.Target = netip.MustParseAddr("2001:db8::1")
	if got := p.Bytes(); got != 10*(40+8+DefaultSize) {
		t.Errorf("IPv6 bytes %d", got)
	}
}

// TestRawFilter: a raw socket is handed echo replies only, not the echo
// requests it sends itself on loopback (which come first without the
// filter).
func TestRawFilter(t *testing.T) {
	for _, target := range []string{"127.0.0.1", "::1"} {
		t.Run(target, func(t *testing.T) {
			a := netip.MustParseAddr(target)
			c, _, err := open(SocketRaw, a, netip.Addr{})
			if errors.Is(err, errDenied) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.close()
			b, err := request(a.Is6(), 7, 1, testCookie, 16)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.write(b); err != nil {
				t.Fatal(err)
			}
			c.setReadDeadline(time.Now().Add(30 * time.Second))
			buf, oob := make([]byte, 1500), make([]byte, 128)
			n, from, _, err := c.read(buf, oob)
			if err != nil {
				t.Fatal(err)
			}
			r, err := decodeReply(buf[:n], a.Is6())
			if err != nil || from != a || !r.ours(testCookie) {
				t.Errorf("the first packet read is no reply of ours: %v, from %v", err, from)
			}
		})
	}
}
