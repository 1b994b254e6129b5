package throughput

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
		check    func(t *testing.T, r *Result)
	}{
		{"testdata/iperf3-tcp.json", "tcp", 2, func(t *testing.T, r *Result) {
			if r.End.SumSent.Retransmits == nil || *r.End.SumSent.Retransmits != 9 || r.End.SumReceived.BitsPerSecond < 1e9 {
				t.Errorf("end %+v", r.End.SumSent)
			}
			if len(r.Intervals) != 4 || len(r.Intervals[0].Streams) != 2 || r.Intervals[0].Streams[0].RTT != 51 {
				t.Errorf("intervals %+v", r.Intervals)
			}
		}},
		{"testdata/iperf3-udp.json", "udp", 1, func(t *testing.T, r *Result) {
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
		`{"start": {"connected": [], "test_start": {}}, "intervals": [], "end": {}}`: "no hosts",
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

// TestFromIperf3Error: a test iperf3 itself reports as failed, as iperf3 -J
// writes it (an empty connected list, an empty end), is iperf3's error in
// its own words, not "not iperf3 JSON output".
func TestFromIperf3Error(t *testing.T) {
	const refused = "unable to connect to server - server may have stopped running or use a different port, firewall issue, etc.: Connection refused"
	for name, in := range map[string]string{
		"iperf3 3.16": `{"start": {"connected": [], "version": "iperf 3.16", "system_info": "Linux x", "timestamp": {"time": "Tue, 01 Dec 2026 10:00:00 GMT", "timesecs": 1795946400}, "connecting_to": {"host": "10.9.9.9", "port": 5201}}, "intervals": [], "end": {}, "error": "` + refused + `"}`,
		"test_start":  `{"start": {"connected": [], "test_start": {}}, "intervals": [], "end": {}, "error": "` + refused + `"}`,
		"no start":    `{"intervals": [], "error": "` + refused + `"}`,
	} {
		_, _, err := FromIperf3([]byte(in))
		var ie *Iperf3Error
		if !errors.As(err, &ie) || ie.Message != refused || errors.Is(err, ErrNotIperf3) {
			t.Errorf("%s: %v, want iperf3's error", name, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "iperf3 reported an error: unable to connect to server") {
			t.Errorf("%s: %q", name, err)
		}
	}
}
