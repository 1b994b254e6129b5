package token

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/testsupport"
)

// listen opens a test's listener on loopback.
func listen(t *testing.T, tok Token, o Options, now func() time.Time) *Listener {
	t.Helper()
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if now == nil {
		now = time.Now
	}
	ln := newListener(inner, tok, o, now)
	t.Cleanup(func() { ln.Close() })
	return ln
}

// connectAll opens n connections of the test at once, as a sender's
// streams or a burst of clients do, and waits until ln has passed on all
// of them. It reports every connection that failed.
func connectAll(t *testing.T, ln *Listener, tok Token, n int) {
	t.Helper()
	accepted := make(chan int, 1)
	go func() {
		got := 0
		for ; got < n; got++ {
			c, err := ln.Accept()
			if err != nil {
				break
			}
			c.Close()
		}
		accepted <- got
	}()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp4", ln.Addr().String(), 10*time.Second)
			if err != nil {
				errs[i] = err
				return
			}
			defer c.Close()
			errs[i] = Greet(c, tok, Wait)
		}()
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			if failed++; failed <= 3 {
				t.Errorf("connection %d of %d: %v", i+1, n, err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d connections failed", failed, n)
	}
	select {
	case got := <-accepted:
		if got != n {
			t.Fatalf("the listener passed on %d of %d connections", got, n)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the listener did not pass on %d connections within 10 s", n)
	}
}

// TestFloodFromAnotherHostTakesNoPlace: a continuous flood of silent
// connections from another address, re-dialled as the listener closes
// them, once took the places of a test's own connections (the oldest
// of 64 was dropped for each new one, so a flood faster than a stream's
// greeting evicted it). The flood's address holds at most its share:
// every connection of the test gets in.
func TestFloodFromAnotherHostTakesNoPlace(t *testing.T) {
	for _, expect := range []int{8, 100} {
		t.Run(fmt.Sprintf("%d connections", expect), func(t *testing.T) {
			tok := New()
			o := Options{Expect: expect}
			ln := listen(t, tok, o, nil)
			_, pool := o.bounds()
			// 512 at once: more than the listener holds, re-dialled faster
			// than a stream's greeting is checked.
			flood := testsupport.FloodStrangers(t, ln.Addr().String(), "127.0.0.2", 512)
			flood.WaitClosed(t, 2*Margin) // the flood has its share and more is turned away
			connectAll(t, ln, tok, expect)
			if flood.Dialled() < int64(pool+3*Margin) {
				t.Errorf("the flood dialled only %d connections: it was not continuous", flood.Dialled())
			}
		})
	}
}

// TestBurstAllConnect: a test's own connections, all dialled at once,
// once dropped each other past 64 awaiting their token.
func TestBurstAllConnect(t *testing.T) {
	tok := New()
	const n = 200
	ln := listen(t, tok, Options{Expect: n}, nil)
	connectAll(t, ln, tok, n)
}

// TestSilentSourcePastGrace: one source that sends nothing once held
// max(Expect, Margin) connections (1,024 with the agent's default limit)
// for all of their wait. It holds more than Margin only within Grace,
// which lets a test's own burst in: past it, the newest beyond Margin are
// closed, and the test's own connections still get in.
func TestSilentSourcePastGrace(t *testing.T) {
	const expect = 200
	tok := New()
	// A wait far longer than the test: only the bound closes them.
	ln := listen(t, tok, Options{Expect: expect, Wait: time.Minute}, nil)
	strangers := testsupport.DialStrangersFrom(t, ln.Addr().String(), "127.0.0.2", expect)
	strangers.WaitClosed(t, expect-Margin)
	ln.mu.Lock()
	held := len(ln.pending[netip.MustParsePrefix("127.0.0.2/32")])
	ln.mu.Unlock()
	if held != Margin {
		t.Errorf("past Grace, %d silent connections from one source await their token, want %d", held, Margin)
	}
	connectAll(t, ln, tok, expect)
}

// TestSameHostStrangers: strangers from the test's own address fill its
// share; a new connection takes the place of the oldest of them only
// once that one has waited past Grace, and is closed before.
func TestSameHostStrangers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		aged   time.Duration // how long the strangers have waited when the stream connects
		wantIn bool
	}{
		{"strangers within their grace", 0, false},
		{"strangers past their grace", Grace + time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := New()
			var skew atomic.Int64
			ln := listen(t, tok, Options{Expect: 1}, func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
			const n = Margin + 36
			strangers := testsupport.DialStrangers(t, ln.Addr().String(), n)
			strangers.WaitClosed(t, n-Margin) // one address holds at most Margin
			skew.Store(int64(tc.aged))
			c, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			err = Greet(c, tok, 5*time.Second)
			if (err == nil) != tc.wantIn {
				t.Fatalf("the stream from the strangers' address: %v, want it let in: %v", err, tc.wantIn)
			}
			if !tc.wantIn {
				if got := strangers.Closed(); got != n-Margin {
					t.Errorf("%d strangers closed, want %d: none dropped within its grace", got, n-Margin)
				}
				return
			}
			if got, err := ln.Accept(); err != nil {
				t.Fatal(err)
			} else {
				got.Close()
			}
			strangers.WaitClosed(t, n-Margin+1)
			if got := strangers.Closed(); got > n-Margin+1 {
				t.Errorf("%d strangers closed for one stream, want %d", got, n-Margin+1)
			}
		})
	}
}

// TestVictim: the rule that picks the connection dropped for a new one.
func TestVictim(t *testing.T) {
	now := time.Now()
	a, b, c := netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("10.0.0.2/32"), netip.MustParsePrefix("10.0.0.3/32")
	// waited returns pending connections of src that have waited d each.
	waited := func(src netip.Prefix, d ...time.Duration) []*pending {
		var ps []*pending
		for _, d := range d {
			ps = append(ps, &pending{source: src, since: now.Add(-d)})
		}
		return ps
	}
	old, young := Grace+time.Second, Grace/2
	for _, tc := range []struct {
		name    string
		pending map[netip.Prefix][]*pending
		from    netip.Prefix
		want    *time.Duration // how long the victim waited; nil: none
		wantSrc netip.Prefix
	}{
		{"the source with the most first", map[netip.Prefix][]*pending{a: waited(a, old, old), b: waited(b, old, old, old)}, c, &old, b},
		{"the oldest of the source", map[netip.Prefix][]*pending{a: waited(a, old+time.Second, old, young)}, c, ptr(old + time.Second), a},
		{"the most holds only young ones", map[netip.Prefix][]*pending{a: waited(a, old), b: waited(b, young, young)}, c, &old, a},
		{"all within their grace", map[netip.Prefix][]*pending{a: waited(a, young), b: waited(b, young, young)}, c, nil, netip.Prefix{}},
		{"never from a source with fewer", map[netip.Prefix][]*pending{a: waited(a, old), b: waited(b, young, young)}, b, nil, netip.Prefix{}},
		{"its own source at its bound", map[netip.Prefix][]*pending{a: waited(a, old, young, young), b: waited(b, old, old, old)}, a, &old, a},
		{"its own source at its bound, all young", map[netip.Prefix][]*pending{a: waited(a, young, young, young), b: waited(b, old, old)}, a, nil, netip.Prefix{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Listener{perSource: 3, pool: 6, pending: tc.pending}
			got := l.victim(tc.from, now)
			switch {
			case tc.want == nil && got != nil:
				t.Errorf("dropped a connection of %v that waited %v, want none", got.source, now.Sub(got.since))
			case tc.want == nil:
			case got == nil:
				t.Errorf("dropped none, want one of %v that waited %v", tc.wantSrc, *tc.want)
			case got.source != tc.wantSrc || now.Sub(got.since) != *tc.want:
				t.Errorf("dropped one of %v that waited %v, want one of %v that waited %v", got.source, now.Sub(got.since), tc.wantSrc, *tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestSourceOf(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 5}, "192.0.2.7/32"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 5}, "192.0.2.7/32"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 5}, "2001:db8:1:2::/64"},
		{&net.UnixAddr{Name: "/x", Net: "unix"}, "invalid Prefix"},
	} {
		if got := sourceOf(tc.addr).String(); got != tc.want {
			t.Errorf("sourceOf(%v) = %s, want %s", tc.addr, got, tc.want)
		}
	}
}

// TestListenerBoundsStrangers: plain connections never pile up beyond
// their bounds, and each is closed when its wait for the token is over,
// while a stream with the token is passed on meanwhile.
func TestListenerBoundsStrangers(t *testing.T) {
	tests := []struct {
		name       string
		strangers  int
		wait       time.Duration
		wantClosed int
	}{
		{"flood", 3 * Margin, Wait, 2 * Margin},
		{"each waits its own time", 3, 300 * time.Millisecond, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := New()
			ln := listen(t, tok, Options{Wait: tc.wait, Expect: 1}, nil)
			strangers := testsupport.DialStrangersFrom(t, ln.Addr().String(), "127.0.0.2", tc.strangers)
			c, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := Greet(c, tok, 5*time.Second); err != nil {
				t.Fatalf("with %d strangers connected: %v", tc.strangers, err)
			}
			got, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			got.Close()
			strangers.WaitClosed(t, tc.wantClosed)
			ln.mu.Lock()
			held := ln.held
			ln.mu.Unlock()
			if held > Margin {
				t.Errorf("%d strangers from one address await their token, want at most %d", held, Margin)
			}
		})
	}
}

func TestListenerClose(t *testing.T) {
	ln := listen(t, New(), Options{}, nil)
	strangers := testsupport.DialStrangers(t, ln.Addr().String(), 3)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ln.mu.Lock()
		held := ln.held
		ln.mu.Unlock()
		if held == 3 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("after 10 s, %d of 3 strangers are awaiting their token", held)
		}
	}
	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	strangers.WaitClosed(t, 3)
}
