package train

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/workload/bind"
	"github.com/wanlab/wanlab/internal/workload/token"
)

func TestSenderSpecValidate(t *testing.T) {
	ok := SenderSpec{Address: "127.0.0.1:9", Streams: []Stream{{Count: 10, Size: 1472}}}
	tests := []struct {
		name string
		edit func(*SenderSpec)
		want string
	}{
		{"fine", func(*SenderSpec) {}, ""},
		{"no address", func(s *SenderSpec) { s.Address = "" }, "receiver address"},
		{"no streams", func(s *SenderSpec) { s.Streams = nil }, "0 streams"},
		{"one packet", func(s *SenderSpec) { s.Streams[0].Count = 1 }, "give at least 2"},
		{"too small", func(s *SenderSpec) { s.Streams[0].Size = 8 }, "size 8"},
		{"too large", func(s *SenderSpec) { s.Streams[0].Size = 65000 }, "size 65000"},
		{"gap too long", func(s *SenderSpec) { s.Streams[0].Gap = time.Second }, "gap 1s"},
		{"too many packets", func(s *SenderSpec) { s.Streams[0].Count = MaxPackets + 1 }, "packets in all"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			s.Streams = append([]Stream(nil), ok.Streams...)
			tc.edit(&s)
			err := s.Validate(limits.Default)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
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
	if _, err := Send(context.Background(), SenderSpec{Token: token.New(), Address: addr, Streams: []Stream{{Count: 3, Size: 100}}}); err != nil {
		t.Fatal(err)
	}
	sent, err := Send(context.Background(), SenderSpec{Token: tok, Address: addr, Streams: []Stream{
		{Count: 20, Size: 1000, Pause: 5 * time.Millisecond},
		{Count: 20, Size: 200, Gap: time.Millisecond},
	}})
	if err != nil || sent.Packets != 40 {
		t.Fatalf("sent %+v, %v", sent, err)
	}
	rec := <-got
	if len(rec.Arrivals) != 40 || rec.Foreign != 3 {
		t.Fatalf("received %d packets and %d foreign, want 40 and 3", len(rec.Arrivals), rec.Foreign)
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
