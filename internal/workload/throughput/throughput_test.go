package throughput

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/testsupport"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
	"github.com/wanlab/wanlab/internal/workload/token"
)

// run runs a receiver and a sender over loopback and returns both summaries
// and the intervals each emitted.
func run(t *testing.T, spec Spec) (recv, sent Summary, rIvs, sIvs []Interval) {
	t.Helper()
	r := listen(t, spec)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		recv = r.Run(ctx, func(iv Interval) { rIvs = append(rIvs, iv) })
	}()
	sent = Send(ctx, spec, fmt.Sprintf("127.0.0.1:%d", r.Port), r.Token, func(iv Interval) { sIvs = append(sIvs, iv) })
	wg.Wait()
	return
}

// listen opens a receiver of spec on loopback, or fails t.
func listen(t *testing.T, spec Spec) *Receiver {
	t.Helper()
	r, err := Listen(spec, bind.Local{Addr: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func total(s Summary) (b uint64) {
	for _, st := range s.Streams {
		b += st.Bytes
	}
	return b
}

func TestTCPDuration(t *testing.T) {
	spec := Spec{Protocol: TCP, Streams: 3, Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond}
	recv, sent, rIvs, sIvs := run(t, spec)
	if recv.Partial || sent.Partial {
		t.Fatalf("partial: recv %v, sent %v", recv.Err, sent.Err)
	}
	if total(sent) == 0 || total(recv) != total(sent) {
		t.Errorf("sent %d bytes, received %d: every byte sent must arrive", total(sent), total(recv))
	}
	for i, st := range sent.Streams {
		if st.Bytes != recv.Streams[i].Bytes || st.TCP == nil {
			t.Errorf("stream %d: sent %d, received %d, tcp info %v", i, st.Bytes, recv.Streams[i].Bytes, st.TCP)
		}
	}
	if len(sIvs) < 4 || len(rIvs) < 4 {
		t.Errorf("%d sender and %d receiver intervals for 0.5 s at 0.1 s", len(sIvs), len(rIvs))
	}
	var sum uint64
	for _, iv := range sIvs {
		for _, st := range iv.Streams {
			sum += st.Bytes
		}
		if iv.Streams[0].TCP == nil || iv.Streams[0].TCP.RTT == 0 {
			t.Errorf("interval %v without TCP_INFO", iv)
		}
	}
	if sum != total(sent) {
		t.Errorf("intervals add up to %d bytes, total is %d", sum, total(sent))
	}
}

func TestTCPBytes(t *testing.T) {
	spec := Spec{Protocol: TCP, Streams: 2, Bytes: 3<<20 + 12345, Interval: time.Second}
	recv, sent, _, _ := run(t, spec)
	for i := range 2 {
		if sent.Streams[i].Bytes != uint64(spec.Bytes) || recv.Streams[i].Bytes != uint64(spec.Bytes) {
			t.Errorf("stream %d: sent %d, received %d, want exactly %d", i, sent.Streams[i].Bytes, recv.Streams[i].Bytes, spec.Bytes)
		}
	}
}

func TestUDP(t *testing.T) {
	spec := Spec{Protocol: UDP, Streams: 2, Duration: 500 * time.Millisecond, UDPRate: 20e6, UDPLength: 1000, Interval: 100 * time.Millisecond}
	recv, sent, _, _ := run(t, spec)
	if recv.Partial {
		t.Fatalf("partial: %v", recv.Err)
	}
	for i, st := range recv.Streams {
		sentPackets := sent.Streams[i].Bytes / 1000
		if st.Packets+st.Lost != sentPackets {
			t.Errorf("stream %d: received %d + lost %d != sent %d", i, st.Packets, st.Lost, sentPackets)
		}
	}
	// 20 Mbit/s for 0.5 s of 1000-byte datagrams: 1250 in all.
	if got := total(sent) / 1000; got < 1100 || got > 1300 {
		t.Errorf("sent %d datagrams, want about 1250", got)
	}
}

func TestStrangerIsIgnored(t *testing.T) {
	spec := Spec{Protocol: TCP, Streams: 1, Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}
	r := listen(t, spec)
	stranger, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", r.Port))
	if err != nil {
		t.Fatal(err)
	}
	stranger.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	defer stranger.Close()
	done := make(chan Summary)
	go func() { done <- r.Run(context.Background(), func(Interval) {}) }()
	sent := Send(context.Background(), spec, fmt.Sprintf("127.0.0.1:%d", r.Port), r.Token, func(Interval) {})
	recv := <-done
	if recv.Partial || total(recv) != total(sent) {
		t.Errorf("with a stranger connected: received %d of %d, partial %v (%v)", total(recv), total(sent), recv.Partial, recv.Err)
	}
}

// TestStrangersDoNotBreakATest: strangers on a receiver's port cost a
// test nothing, and a test's own streams, all dialled at once, never take
// each other's places. 64 silent connections once got the real sender's
// connection reset ("only 0 of 1 streams connected"); then a flood faster
// than a stream's greeting, or a burst of more than 64 streams, had
// streams dropped for newer connections.
func TestStrangersDoNotBreakATest(t *testing.T) {
	tests := []struct {
		name      string
		streams   int
		strangers int  // silent connections from another address
		flood     bool // re-dialled as the receiver closes them
	}{
		{"a port full of strangers", 2, token.Margin + 36, false},
		{"a continuous flood", 8, 512, true},
		{"200 streams at once", 200, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Protocol: TCP, Streams: tc.streams, Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}
			r := listen(t, spec)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan Summary)
			go func() { done <- r.Run(ctx, func(Interval) {}) }()
			addr := fmt.Sprintf("127.0.0.1:%d", r.Port)
			switch {
			case tc.flood:
				testsupport.FloodStrangers(t, addr, "127.0.0.2", tc.strangers).WaitClosed(t, 2*token.Margin)
			case tc.strangers > 0:
				testsupport.DialStrangersFrom(t, addr, "127.0.0.2", tc.strangers).WaitClosed(t, tc.strangers-token.Margin)
			}
			sent := Send(ctx, spec, addr, r.Token, func(Interval) {})
			recv := <-done
			if sent.Partial || recv.Partial || total(recv) != total(sent) {
				t.Errorf("%d streams: sent %d (%v), received %d (%v)", tc.streams, total(sent), sent.Err, total(recv), recv.Err)
			}
		})
	}
}

// muteStream connects to a receiver at addr, presents the token and sends
// no header; it closes when the test ends.
func muteStream(t *testing.T, addr string, tok token.Token) {
	t.Helper()
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := token.Greet(c, tok, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestStreamHeadersAreReadEachOnItsOwn: the receiver read each stream's
// header inline, for up to 10 s whatever its context: a connection that
// presented the token and no header held up the other streams, and the
// receiver's end. Each header is read on its own and ends with ctx.
func TestStreamHeadersAreReadEachOnItsOwn(t *testing.T) {
	t.Run("others get in", func(t *testing.T) {
		spec := Spec{Protocol: TCP, Streams: 2, Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}
		r := listen(t, spec)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		addr := fmt.Sprintf("127.0.0.1:%d", r.Port)
		watch := testsupport.WatchReads(r.ln)
		r.ln = watch
		done := make(chan Summary)
		go func() { done <- r.Run(ctx, func(Interval) {}) }()
		muteStream(t, addr, r.Token)
		watch.Wait(t)
		began := time.Now()
		sent := Send(ctx, spec, addr, r.Token, func(Interval) {})
		recv := <-done
		if sent.Partial || recv.Partial || total(recv) != total(sent) {
			t.Errorf("with a mute stream connected: sent %d (%v), received %d (%v)", total(sent), sent.Err, total(recv), recv.Err)
		}
		if took := time.Since(began); took > 5*time.Second {
			t.Errorf("a 200 ms test took %v with a mute stream connected", took)
		}
	})
	t.Run("ends with its context", func(t *testing.T) {
		spec := Spec{Protocol: TCP, Streams: 2, Duration: time.Second, Interval: 100 * time.Millisecond}
		r := listen(t, spec)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		watch := testsupport.WatchReads(r.ln)
		r.ln = watch
		done := make(chan Summary)
		go func() { done <- r.Run(ctx, func(Interval) {}) }()
		muteStream(t, fmt.Sprintf("127.0.0.1:%d", r.Port), r.Token)
		watch.Wait(t)
		cancel()
		select {
		case recv := <-done:
			if !errors.Is(recv.Err, context.Canceled) {
				t.Errorf("a receiver stopped while awaiting a header: %v, want context.Canceled", recv.Err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("the receiver still awaits a stream's header 2 s after its context ended")
		}
	})
}

func TestSenderGoneIsPartial(t *testing.T) {
	spec := Spec{Protocol: TCP, Streams: 2, Duration: 5 * time.Second, Interval: 100 * time.Millisecond}
	r := listen(t, spec)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan Summary)
	go func() { done <- r.Run(context.Background(), func(Interval) {}) }()
	// The sender's context ends early: its connections are reset.
	sent := Send(ctx, spec, fmt.Sprintf("127.0.0.1:%d", r.Port), r.Token, func(Interval) {})
	recv := <-done
	if !sent.Partial || total(recv) == 0 {
		t.Errorf("sender cut short: partial %v (%v), receiver got %d bytes", sent.Partial, sent.Err, total(recv))
	}
}

func TestValidate(t *testing.T) {
	fine := func() Spec { return Spec{Protocol: TCP, Streams: 1, Duration: time.Second, Interval: time.Second} }
	kindtest.RunValidates(t, fine, []kindtest.SpecCase[Spec]{
		{Name: "ok", Edit: func(*Spec) {}},
		{Name: "zero streams", Edit: func(s *Spec) { s.Streams = 0 }, Want: "at least 1"},
		{Name: "too many streams", Edit: func(s *Spec) { s.Streams = 1000 }, Want: "over the agent's limit of 256 streams", Is: limits.ErrLimit},
		{Name: "no end", Edit: func(s *Spec) { s.Duration = 0 }, Want: "give a duration or a number of bytes"},
		{Name: "window 1 byte", Edit: func(s *Spec) { s.Window = 1 }, Want: "at least 4096"},
		{Name: "too long", Edit: func(s *Spec) { s.Duration = 2 * time.Hour }, Want: "over the agent's limit of 1h0m0s", Is: limits.ErrLimit},
		{Name: "udp without rate", Edit: func(s *Spec) { s.Protocol = UDP; s.UDPLength = 1000 }, Want: "udp rate 0 bit/s: give a positive rate"},
		{Name: "udp too fast", Edit: func(s *Spec) { s.Protocol = UDP; s.UDPLength = 1000; s.UDPRate = 1e12 }, Want: "over the agent's limit", Is: limits.ErrLimit},
		{Name: "tiny datagram", Edit: func(s *Spec) { s.Protocol = UDP; s.UDPRate = 1e6; s.UDPLength = 10 }, Want: "datagram length 10"},
		{Name: "tiny interval", Edit: func(s *Spec) { s.Interval = time.Millisecond }, Want: "interval"},
		{Name: "bytes times streams overflow", Edit: func(s *Spec) { s.Duration = 0; s.Bytes = 1 << 62; s.Streams = 8 }, Want: "over the agent's limit", Is: limits.ErrLimit},
		{Name: "udp rate NaN", Edit: func(s *Spec) { s.Protocol = UDP; s.UDPLength = 1000; s.UDPRate = math.NaN() }, Want: "give a positive rate"},
	})
}
