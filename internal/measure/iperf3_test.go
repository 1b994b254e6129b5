package measure

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestFromIperf3(t *testing.T) {
	for _, tc := range []struct {
		file     string
		protocol string
		streams  int
		check    func(t *testing.T, r *ThroughputResult)
	}{
		{"testdata/iperf3-tcp.json", "tcp", 2, func(t *testing.T, r *ThroughputResult) {
			if r.End.SumSent.Retransmits == nil || *r.End.SumSent.Retransmits != 9 || r.End.SumReceived.BitsPerSecond < 1e9 {
				t.Errorf("end %+v", r.End.SumSent)
			}
			if len(r.Intervals) != 4 || len(r.Intervals[0].Streams) != 2 || r.Intervals[0].Streams[0].RTT != 51 {
				t.Errorf("intervals %+v", r.Intervals)
			}
		}},
		{"testdata/iperf3-udp.json", "udp", 1, func(t *testing.T, r *ThroughputResult) {
			if r.End.SumReceived.Packets == 0 || r.End.SumReceived.JitterMS <= 0 {
				t.Errorf("udp end %+v", r.End.SumReceived)
			}
		}},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		r, start, err := FromIperf3(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if r.Start.Protocol != tc.protocol || r.Start.Streams != tc.streams || r.Start.From != "127.0.0.1" || start.Year() < 2026 {
			t.Errorf("%s: start %+v at %v", tc.file, r.Start, start)
		}
		tc.check(t, r)
		if n := len(r.Samples(start)); n == 0 {
			t.Errorf("%s: no samples", tc.file)
		}
	}
}

func TestFromIperf3Refuses(t *testing.T) {
	for in, want := range map[string]string{
		`{"name": "x"}`: "not iperf3 JSON",
		`not json`:      "not iperf3 JSON",
		`{"start": {"connected": [], "test_start": {}}, "intervals": [], "end": {}, "error": "unable to connect to server: Connection refused"}`: "no hosts",
		`{"intervals": [], "error": "unable to connect to server: Connection refused"}`:                                                          "unable to connect",
	} {
		_, _, err := FromIperf3([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	if _, _, err := FromIperf3([]byte(`[]`)); !errors.Is(err, ErrNotIperf3) {
		t.Errorf("a list: %v", err)
	}
}
