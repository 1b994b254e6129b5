package train

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/kind/kindtest"
	"github.com/wanlab/wanlab/internal/workload/token"
)

func TestSenderSpecValidate(t *testing.T) {
	fine := func() SenderSpec {
		return SenderSpec{Address: "127.0.0.1:9", Streams: []Stream{{Count: 10, Size: 1472}}}
	}
	kindtest.RunValidates(t, fine, []kindtest.SpecCase[SenderSpec]{
		{Name: "fine", Edit: func(*SenderSpec) {}},
		{Name: "no address", Edit: func(s *SenderSpec) { s.Address = "" }, Want: "receiver address"},
		{Name: "no streams", Edit: func(s *SenderSpec) { s.Streams = nil }, Want: "0 streams"},
		{Name: "one packet", Edit: func(s *SenderSpec) { s.Streams[0].Count = 1 }, Want: "give at least 2"},
		{Name: "too small", Edit: func(s *SenderSpec) { s.Streams[0].Size = 8 }, Want: "size 8"},
		{Name: "too large", Edit: func(s *SenderSpec) { s.Streams[0].Size = 65000 }, Want: "size 65000"},
		{Name: "gap too long", Edit: func(s *SenderSpec) { s.Streams[0].Gap = time.Second }, Want: "gap 1s"},
		{Name: "too many packets", Edit: func(s *SenderSpec) { s.Streams[0].Count = MaxPackets + 1 }, Want: "packets in all"},
	})
	ok := fine()
	// The trains' bytes in all are within the bytes of one test.
	lim := limits.Default
	lim.MaxBytes = 10000
	if err := ok.Validate(lim); !errors.Is(err, limits.ErrLimit) || !strings.Contains(err.Error(), "the trains' packets 14720 bytes") {
		t.Errorf("14720 bytes of trains against a limit of 10000: %v", err)
	}
}

// TestTrainsOverLoopback sends a back-to-back train and a paced stream
// over loopback: every packet arrives in order with a kernel timestamp,
// the paced one spaced as asked, and a datagram without the token is
// counted as foreign, not taken.
func TestTrainsOverLoopback(t *testing.T) {
	tok := token.New()
	r, err := Listen(ReceiverSpec{Token: tok, Expect: 40, Timeout: 5 * time.Second}, bind.Local{Addr: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", r.Port())
	got := make(chan Received, 1)
	go func() {
		rec, _ := r.Receive(context.Background())
		got <- rec
	}()
	// Datagrams of another test, from a source that never greeted: foreign.
	stranger, err := net.Dial("udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	foreign := make([]byte, 100)
	copy(foreign, token.New().Bytes())
	for range 3 {
		stranger.Write(foreign)
	}
	sent, err := Send(context.Background(), SenderSpec{Token: tok, Address: addr, Streams: []Stream{
		{Count: 20, Size: 1000, Pause: 5 * time.Millisecond},
		{Count: 20, Size: 200, Gap: time.Millisecond},
	}})
	if err != nil || sent.Packets != 40 || sent.Bytes != 20*1000+20*200 {
		t.Fatalf("sent %+v, %v", sent, err)
	}
	rec := <-got
	if len(rec.Arrivals) != 40 || rec.Foreign != 3 || rec.Bytes != sent.Bytes {
		t.Fatalf("received %d packets (%d bytes) and %d foreign, want 40 (%d bytes) and 3", len(rec.Arrivals), rec.Bytes, rec.Foreign, sent.Bytes)
	}
	var paced []Arrival
	for i, a := range rec.Arrivals {
		if a.Recv <= 0 || a.Sent <= 0 {
			t.Fatalf("arrival %d has no times: %+v", i, a)
		}
		if a.Stream == 1 {
			paced = append(paced, a)
		}
	}
	span := time.Duration(paced[len(paced)-1].Recv - paced[0].Recv)
	if span < 15*time.Millisecond || span > 60*time.Millisecond {
		t.Errorf("20 packets 1 ms apart arrived over %v, want about 19 ms", span)
	}
}

// TestSenderToStrangerSendsOnlyGreetings: an agent asked to send trains
// toward a UDP socket that is not this test's receiver (one that never
// answers, or another test's receiver) sends greetings only, never a
// train (it once sent 2,000 packets of 8,972 bytes to a silent socket).
func TestSenderToStrangerSendsOnlyGreetings(t *testing.T) {
	streams := []Stream{{Count: 2000, Size: MaxSize}, {Count: 50, Size: 1000, Gap: time.Millisecond}}
	t.Run("silent socket", func(t *testing.T) {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		type datagram struct {
			n        int
			greeting bool
		}
		got := make(chan datagram, 10000)
		go func() {
			buf := make([]byte, 65536)
			for {
				n, _, err := pc.ReadFrom(buf)
				if err != nil {
					close(got)
					return
				}
				got <- datagram{n, n == token.MessageLen && string(buf[:4]) == "WLG1"}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		sent, err := Send(ctx, SenderSpec{Token: token.New(), Address: pc.LocalAddr().String(), Streams: streams})
		if err == nil || sent.Packets != 0 || sent.Bytes != 0 {
			t.Errorf("Send toward a silent socket: sent %+v, error %v; want nothing sent and an error", sent, err)
		}
		time.Sleep(100 * time.Millisecond) // what was sent has arrived on loopback
		pc.Close()
		var greetings, others, bytes int
		for d := range got {
			bytes += d.n
			if d.greeting {
				greetings++
			} else {
				others++
			}
		}
		if others > 0 || greetings == 0 || greetings > 10 {
			t.Errorf("the silent socket received %d greetings and %d other datagrams (%d bytes); want a few greetings and nothing else", greetings, others, bytes)
		}
	})
	t.Run("another test's receiver", func(t *testing.T) {
		r, err := Listen(ReceiverSpec{Token: token.New(), Expect: 2050, Timeout: 3 * time.Second}, bind.Local{Addr: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan Received, 1)
		go func() {
			rec, _ := r.Receive(context.Background())
			got <- rec
		}()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		sent, err := Send(ctx, SenderSpec{Token: token.New(), Address: fmt.Sprintf("127.0.0.1:%d", r.Port()), Streams: streams})
		if err == nil || sent.Packets != 0 {
			t.Errorf("Send with another token: sent %+v, error %v; want nothing sent and an error", sent, err)
		}
		if rec := <-got; len(rec.Arrivals) != 0 || rec.Foreign != 0 {
			t.Errorf("the other test's receiver got %d packets and %d foreign, want none", len(rec.Arrivals), rec.Foreign)
		}
	})
}
