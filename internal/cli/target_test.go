package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/binomial"
	"github.com/wanlab/wanlab/internal/delay"
	"github.com/wanlab/wanlab/internal/measure/target"
)

// TestPingUsage: measure ping's mistakes are usage errors (exit 2), said
// before any agent is dialled.
func TestPingUsage(t *testing.T) {
	for _, tc := range []struct {
		verb string
		args []string
		msg  string
	}{
		{"ping", []string{"--target", "192.0.2.7"}, "give --from"},
		{"ping", []string{"--from", "a"}, "--target"},
		{"ping", []string{"--from", "a", "--target", "b", "-4", "-6"}, "give -4 or -6, not both"},
		{"ping", []string{"--from", "a", "--target", "b", "-c", "0"}, "--count 0: give 1 to 10000"},
		{"ping", []string{"--from", "a", "--target", "b", "-i", "1ms"}, "--interval 1ms: give 10ms to 1m0s"},
		{"ping", []string{"--from", "a", "--target", "b", "-s", "9000"}, "--size 9000: give 8 to 8952"},
		{"ping", []string{"--from", "a", "--target", "b", "--timeout", "2m"}, "--timeout 2m0s: give up to 1m0s"},
		{"ping", []string{"--from", "a", "--target", "b"}, "give --testbed NAME"},
		{"stamp", []string{"--from", "a", "--target", "b", "-s", "40"}, "--size 40: give 44 to 9000"},
		{"stamp", []string{"--from", "a", "--target", "b", "-i", "0.5ms"}, "--interval 500µs: give 1ms to 1h0m0s"},
		{"stamp", []string{"--from", "a", "--target", "b", "-6"}, "give --testbed NAME"},
		{"throughput", []string{"--from", "a", "--to", "b", "--target", "c:5201"}, "give --to (a host with an agent) or --target (an iperf3 server), not both"},
		{"throughput", []string{"--target", "c:5201"}, "give --from, the host whose agent tests toward --target"},
		{"throughput", []string{"--from", "a", "--target", "c:5201", "-R"}, "--reverse, --bidir, --udp and --db are not taken with it"},
		{"throughput", []string{"--from", "a", "--target", "c:5201", "-4", "-6"}, "give -4 or -6, not both"},
		{"throughput", []string{"--from", "a", "--target", "c:5201"}, "give --testbed NAME"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"measure", tc.verb}, tc.args...), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("%s %v: exit %d, stderr %q; want exit %d and %q", tc.verb, tc.args, code, errb.String(), exitUsage, tc.msg)
		}
	}
}

// TestPrintPing: a ping's summary as measure ping prints it: the name
// asked beside the address tested, and a silent far end said as such.
func TestPrintPing(t *testing.T) {
	s := &target.Summary{From: "cern", Kind: target.Ping, Target: "router.example", Address: "2001:db8::1", Count: 10, Interval: 1000, Size: 56,
		RTTms: delay.Stats{Min: 10, Avg: 10.5, Max: 12, P50: 10.4, P99: 12, Mdev: 0.3}, JitterMS: 0.2, Sent: 10, Received: 9, Lost: 1,
		Loss: binomial.NewRatio(1, 10), Late: 1}
	var out bytes.Buffer
	printFarProbes(&out, s)
	for _, want := range []string{"cern -> 2001:db8::1 (router.example): 10 echoes of 56 bytes, 1000 ms apart",
		"min 10 / avg 10.5 / max 12 ms", "1 of 10 echoes (10%", "1 late"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	s = &target.Summary{From: "cern", Kind: target.Ping, Target: "192.0.2.1", Address: "192.0.2.1", Count: 3, Sent: 3, Lost: 3,
		Loss: binomial.NewRatio(3, 3), Silent: true, Error: "icmp echo to 192.0.2.1: no reply to any of 3 echoes within 2s of each"}
	out.Reset()
	printFarProbes(&out, s)
	if got := out.String(); strings.Contains(got, "rtt") || !strings.Contains(got, "SILENT: icmp echo to 192.0.2.1") || !strings.Contains(got, "cern -> 192.0.2.1:") {
		t.Errorf("a silent far end printed as:\n%s", got)
	}
}

// TestPrintSTAMP: a STAMP round's summary prints the delay each way and
// whether the clocks made it reliable.
func TestPrintSTAMP(t *testing.T) {
	s := &target.Summary{From: "cern", Kind: target.STAMP, Target: "192.0.2.7", Address: "192.0.2.7:862", Count: 2, Interval: 10, Size: 44,
		RTTms: delay.Stats{Min: 5, Avg: 5, Max: 5, P50: 5, P99: 5}, Sent: 2, Received: 2, Loss: binomial.NewRatio(0, 2),
		OneWay: &target.OneWay{Forward: delay.Stats{Min: 3, Avg: 3, Max: 3, P50: 3}, Back: delay.Stats{Min: 2, Avg: 2, Max: 2, P50: 2}}}
	var out bytes.Buffer
	printFarProbes(&out, s)
	for _, want := range []string{"cern -> 192.0.2.7:862 (192.0.2.7): 2 packets of 44 bytes", "one way cern -> 192.0.2.7:862  min 3 / avg 3 / max 3 ms",
		"one way 192.0.2.7:862 -> cern  min 2", "clock", "unreliable: a clock did not say"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}
