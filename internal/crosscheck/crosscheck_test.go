package crosscheck

import (
	"os"
	"strings"
	"testing"
)

// checkParse parses file with parse, named name: it gives want, or when
// wantErr is set an error with wantErr in it.
func checkParse[T comparable](t *testing.T, name, file string, parse func([]byte) (T, error), want T, wantErr string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parse(data)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one containing %q", err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Errorf("%s = %+v, %v; want %+v", name, got, err, want)
	}
}

func TestParsePing(t *testing.T) {
	tests := []struct {
		file    string
		want    PingResult
		wantErr string
	}{
		{"testdata/ping.txt", PingResult{Sent: 4, Received: 4, MinMS: 52.340, AvgMS: 52.601, MaxMS: 53.281, MdevMS: 0.393}, ""},
		{"testdata/ping-replies.txt", PingResult{Sent: 6, Received: 5, MinMS: 10.1, AvgMS: 68.25, MaxMS: 300.5, MdevMS: 116.125, MedianMS: 10.2}, ""},
		{"testdata/ping-unreachable.txt", PingResult{}, "no ping summary"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			checkParse(t, "ParsePing", tt.file, func(data []byte) (PingResult, error) { return ParsePing(string(data)) }, tt.want, tt.wantErr)
		})
	}
}

func TestParseIperf(t *testing.T) {
	tests := []struct {
		file    string
		udp     bool
		want    IperfResult
		wantErr string
	}{
		{"testdata/iperf3-tcp.json", false, IperfResult{SentBPS: 101916677.207801, ReceivedBPS: 96507973.47591707, Retransmits: 94}, ""},
		{"testdata/iperf3-udp.json", true, IperfResult{SentBPS: 19990920.490293525, ReceivedBPS: 19987073.186459538, Packets: 4998, JitterMS: 0.06722283661107374}, ""},
		{"testdata/iperf3-error.json", false, IperfResult{}, "Connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			checkParse(t, "ParseIperf", tt.file, func(data []byte) (IperfResult, error) { return ParseIperf(data, tt.udp) }, tt.want, tt.wantErr)
		})
	}
}

func TestParseIperfRejectsGarbage(t *testing.T) {
	if _, err := ParseIperf([]byte("iperf3: error - unable to connect"), false); err == nil {
		t.Error("accepted non-JSON output")
	}
}

func TestParseDD(t *testing.T) {
	out := "12+0 records in\n12+0 records out\n12582912 bytes (13 MB, 12 MiB) copied, 3.10295 s, 4.1 MB/s\n"
	if got, err := ParseDD(out); err != nil || got < 4.055e6 || got > 4.056e6 {
		t.Errorf("ParseDD = %v, %v; want 12582912 / 3.10295 B/s", got, err)
	}
	if _, err := ParseDD("dd: failed to open 'x': No such file or directory\n"); err == nil {
		t.Error("ParseDD of an error message succeeded")
	}
}
