package e2e

import (
	"context"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
	"github.com/wanlab/wanlab/internal/measure/target"
	"github.com/wanlab/wanlab/internal/workload/throughput"
)

// farBed is TestFarEnds' test-bed: two dual-stack hosts, one link.
const farBed = `name: e2e-far
subnet6: fd00:8::/64
hosts: {a: {}, b: {}}
links:
  - {between: [a, b], rate: 40Mbit, delay: 5ms}
`

// TestFarEnds measures toward far ends that run no wanlab agent on a
// dual-stack test-bed, against the truth the emulated link gives and the
// real tools on the same path in the same run: a real iperf3 -s in host
// b (wanlab's own iperf3 client against iperf3's, over IPv4 and IPv6),
// b's agent as a STAMP reflector, and ICMP echo; then wanlab serve with
// an iperf3 target and a STAMP target in its configuration.
func TestFarEnds(t *testing.T) {
	if err := crosscheck.Require("iperf3", "ping"); err != nil {
		t.Fatal(err)
	}
	name := up(t, farBed)
	st := status(t, name)
	b4, b6 := st.addr("b"), st.addr6("b")
	r := runner(name)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	server := r.Command(ctx, "b", "iperf3", "-s", "-p", "5201")
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); server.Wait() }()
	time.Sleep(300 * time.Millisecond) // iperf3 -s listening; a refused first try is retried below

	// wanlab's iperf3 client and iperf3's own, one after the other, on
	// the same path, over each family.
	for _, addr := range []string{b4, b6} {
		var ours throughput.Result
		var res result
		for try := 0; try < 3; try++ {
			if res = wanlab(t, "measure", "throughput", "--testbed", name, "--from", "a", "--target", net.JoinHostPort(addr, "5201"), "-t", "5", "--json"); res.code == 0 {
				break
			}
			time.Sleep(time.Second)
		}
		res.decode(t, "measure throughput --target: ", &ours)
		theirs, err := r.Iperf(context.Background(), crosscheck.IperfOptions{Client: "a", Server: "b", ServerAddr: addr, Port: 5202, Duration: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		got, want := ours.End.SumReceived.BitsPerSecond, theirs.ReceivedBPS
		t.Logf("toward iperf3 -s at %s: wanlab %.2f Mbit/s, iperf3's client %.2f Mbit/s (%+.1f%%), family %s", addr, got/1e6, want/1e6, 100*(got/want-1), ours.Start.Family)
		if math.Abs(got/want-1) > 0.05 || got < 30e6 {
			t.Errorf("toward %s: wanlab %.2f Mbit/s against iperf3's own %.2f through a 40 Mbit/s link", addr, got/1e6, want/1e6)
		}
		if wantFamily := map[string]string{b4: "ipv4", b6: "ipv6"}[addr]; ours.Start.Family != wantFamily {
			t.Errorf("toward %s: family %q", addr, ours.Start.Family)
		}
	}

	// STAMP toward b's agent, and ICMP echo: the link's round trip.
	for _, c := range []struct{ verb, addr string }{{"stamp", b4}, {"stamp", b6}, {"ping", b4}, {"ping", b6}} {
		var s target.Summary
		wanlab(t, "measure", c.verb, "--testbed", name, "--from", "a", "--target", c.addr, "-c", "20", "-i", "0.05", "--json").decode(t, "measure "+c.verb+": ", &s)
		if s.Received != 20 || s.RTTms.Min < 10 || s.RTTms.P50 > 10.5 {
			t.Errorf("measure %s toward %s: %d of 20, min %.2f p50 %.2f ms; want every reply, within 10-10.5 ms (the link's 2 x 5 ms)", c.verb, c.addr, s.Received, s.RTTms.Min, s.RTTms.P50)
		}
	}

	// The monitoring service with the same kinds of far ends as targets,
	// on a test-bed of its own that it brings up: b's agent as a STAMP
	// reflector over IPv4, an iperf3 -s in b over IPv6.
	dir := t.TempDir()
	bed := strings.Replace(strings.Replace(farBed, "e2e-far", "e2e-farmon", 1), "fd00:8::", "fd00:9::", 1)
	os.WriteFile(filepath.Join(dir, "farmon.yaml"), []byte(bed), 0o644)
	cfg := filepath.Join(dir, "monitor.yaml")
	os.WriteFile(cfg, []byte(`testbed: farmon.yaml
targets:
  refl: {stamp: "10.250.0.2:862"}
  srv: {iperf3: "[fd00:9::2]:5201"}
groups:
  far: [a, refl]
  bulk: [a, srv]
tests:
  - {name: latency, type: probe, group: far, rate: 10/s, summary: 3s}
  - {name: bulk, type: throughput, group: bulk, every: 10s, slip: 1s, duration: 2s}
`), 0o644)
	s := startServe(t, "--config", cfg, "--db", filepath.Join(dir, "monitor.db"))
	defer s.stop()
	mon := runner("e2e-farmon").Command(ctx, "b", "iperf3", "-s", "-p", "5201")
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); mon.Wait() }()
	if !waitFor(90*time.Second, func() bool {
		p := s.paths()
		return p["latency a->refl"].State == "ok" && p["bulk a->srv"].State == "ok"
	}) {
		t.Fatalf("the targets' paths: %+v\n%s", s.paths(), s.stderr)
	}
	p := s.paths()
	// The minimum: the bulk test toward srv shares the link and queues
	// the probes of its seconds.
	if rtt := p["latency a->refl"].Values["rtt_min_seconds"]; rtt < 0.010 || rtt > 0.0105 {
		t.Errorf("latency a->refl (STAMP): minimum RTT %g s, want 10-10.5 ms", rtt)
	}
	if bps := p["bulk a->srv"].Values["throughput_bits_per_second"]; bps < 30e6 || bps > 40e6 {
		t.Errorf("bulk a->srv (iperf3 over IPv6): %s bit/s, want near the link's 40 Mbit/s", strconv.FormatFloat(bps, 'g', 4, 64))
	}
}
