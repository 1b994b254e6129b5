package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/crosscheck"
)

// TestDualStack builds a dual-stack test-bed, a -> router r -> b, and
// checks IPv6 through the engine with the real tools, beside IPv4 on the
// same path in the same run: ping -6 sees the delay, tracepath -6 the
// router (its IPv6 address, answering ICMPv6 time exceeded) and the path
// MTU (packet too big), iperf3 over IPv6 the rate, and the link's
// counters count the IPv6 packets.
func TestDualStack(t *testing.T) {
	if err := crosscheck.Require("ping", "iperf3", "tracepath"); err != nil {
		t.Fatal(err)
	}
	name := up(t, `name: e2e-dual
subnet6: fd00:6:1::/64
hosts: {a: {}, b: {}}
routers: {r: {}}
links:
  - {between: [a, r], rate: 20Mbit, delay: 5ms}
  - {between: [r, b], rate: 20Mbit, delay: 10ms, mtu: 1400}
`)
	st := status(t, name)
	b4, b6 := st.addr("b"), st.addr6("b")
	if !strings.HasPrefix(b4, "10.") || b6 != "fd00:6:1::2" || st.addr6("a") != "fd00:6:1::1" {
		t.Fatalf("status: b at %q and %q, a at %q: want IPv4 and IPv6 addresses (fd00:6:1::1, ::2)", b4, b6, st.addr6("a"))
	}
	r := runner(name)
	ctx := context.Background()
	for _, addr := range []string{b4, b6} {
		p, err := r.Ping(ctx, "a", addr, 10, 50*time.Millisecond)
		if err != nil {
			t.Fatalf("ping %s: %v", addr, err)
		}
		if p.Received != 10 || p.MinMS < 30 || p.MedianMS > 30.5+0.5 {
			t.Errorf("ping %s: %d of 10, min %.2f median %.2f ms; want all, about 30 ms (the links' 2 x 15 ms)", addr, p.Received, p.MinMS, p.MedianMS)
		}
	}
	out, _ := r.Command(ctx, "a", "tracepath", "-6", "-n", b6).CombinedOutput()
	hops := regexp.MustCompile(`(?m)^\s*\d+:\s+(\S+)`).FindAllStringSubmatch(string(out), -1)
	var seen []string
	for _, h := range hops {
		if len(seen) == 0 || seen[len(seen)-1] != h[1] {
			seen = append(seen, h[1])
		}
	}
	if strings.Join(seen, " ") != "fd77:616e:6c61:ff::1 "+b6 || !strings.Contains(string(out), "pmtu 1400") {
		t.Errorf("tracepath -6: hops %v, want router r's IPv6 address then b, and pmtu 1400:\n%s", seen, out)
	}
	for _, addr := range []string{b4, b6} {
		ip, err := r.Iperf(ctx, crosscheck.IperfOptions{Client: "a", Server: "b", ServerAddr: addr, Duration: 4 * time.Second, Omit: time.Second})
		if err != nil {
			t.Fatalf("iperf3 to %s: %v", addr, err)
		}
		// TCP payload of 1400-byte packets: 1328 bytes over IPv4, 1308 over IPv6.
		if mbps := ip.ReceivedBPS / 1e6; mbps < 17 || mbps > 20 {
			t.Errorf("iperf3 to %s: %.2f Mbit/s through 20 Mbit/s links", addr, mbps)
		} else {
			t.Logf("iperf3 to %s: %.2f Mbit/s", addr, mbps)
		}
	}
}

// TestDualStackMeasure: wanlab's own measure verbs on a dual-stack
// test-bed test over the family -4 or -6 asks for (IPv4 by default),
// and say which they used.
func TestDualStackMeasure(t *testing.T) {
	name := up(t, "name: e2e-dual2\nsubnet6: fd00:6:2::/64\nhosts: {a: {}, b: {}}\nlinks: [{between: [a, b], rate: 20Mbit, delay: 5ms}]\n")
	for _, f := range []struct{ flag, family string }{{"", "ipv4"}, {"-4", "ipv4"}, {"-6", "ipv6"}} {
		args := []string{"measure", "throughput", "--testbed", name, "--from", "a", "--to", "b", "-t", "2", "--json"}
		if f.flag != "" {
			args = append(args, f.flag)
		}
		var r struct {
			Start struct{ Family string }
			End   struct {
				SumReceived struct {
					BitsPerSecond float64 `json:"bits_per_second"`
				} `json:"sum_received"`
			}
		}
		wanlab(t, args...).decode(t, "measure throughput "+f.flag+": ", &r)
		if r.Start.Family != f.family || r.End.SumReceived.BitsPerSecond < 15e6 {
			t.Errorf("measure throughput %s: family %q, %g bit/s; want %s near 20 Mbit/s", f.flag, r.Start.Family, r.End.SumReceived.BitsPerSecond, f.family)
		}
		var p struct {
			Family string
			RTT    struct {
				Min float64 `json:"min"`
			} `json:"rtt_ms"`
		}
		probeArgs := []string{"measure", "probe", "--testbed", name, "--from", "a", "--to", "b", "-c", "5", "--json"}
		if f.flag != "" {
			probeArgs = append(probeArgs, f.flag)
		}
		wanlab(t, probeArgs...).decode(t, "measure probe "+f.flag+": ", &p)
		if p.Family != f.family || p.RTT.Min < 10 || p.RTT.Min > 10.5 {
			t.Errorf("measure probe %s: family %q, min RTT %.2f ms; want %s, 10-10.5 ms", f.flag, p.Family, p.RTT.Min, f.family)
		}
	}
}

// TestIPv6Only builds a test-bed whose hosts have IPv6 alone: a host's
// address is its IPv6 one, and ping reaches the far end through the
// engine with the link's delay.
func TestIPv6Only(t *testing.T) {
	if err := crosscheck.Require("ping"); err != nil {
		t.Fatal(err)
	}
	name := up(t, "name: e2e-v6only\nfamily: ipv6\nhosts: {a: {}, b: {}}\nlinks: [{between: [a, b], delay: 4ms}]\n")
	st := status(t, name)
	b := st.addr("b")
	if b != "fd77:616e:6c61::2" || st.addr6("b") != b {
		t.Fatalf("b at %q (addr6 %q), want fd77:616e:6c61::2 for both", b, st.addr6("b"))
	}
	p, err := runner(name).Ping(context.Background(), "a", b, 5, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if p.Received != 5 || p.MinMS < 8 || p.MedianMS > 9 {
		t.Errorf("ping -6 over a 4 ms link: %d of 5, min %.2f median %.2f ms", p.Received, p.MinMS, p.MedianMS)
	}
	if out, _ := runner(name).Command(context.Background(), "a", "ip", "-4", "addr", "show", "dev", "wl0").CombinedOutput(); strings.Contains(string(out), "inet ") {
		t.Errorf("an IPv6-only host has an IPv4 address:\n%s", out)
	}
}

// TestDualStackRun runs a scenario's workloads on a dual-stack test-bed
// over IPv6 with -6 (a throughput step, and a command whose {addr:b} is
// b's IPv6 address), over IPv4 without it, and refuses -4 for an
// IPv6-only scenario before anything is built.
func TestDualStackRun(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "dualrun.yaml")
	os.WriteFile(scen, []byte(`name: e2e-dualrun
subnet6: fd00:6:3::/64
hosts: {a: {}, b: {}}
links: [{between: [a, b], rate: 20Mbit, delay: 5ms}]
workloads:
  - name: push
    throughput: {from: a, to: b, duration: 3s}
  - name: reach
    command: {clients: [{host: a, run: ["ping", "-c", "2", "{addr:b}"]}]}
`), 0o644)
	db := filepath.Join(dir, "runs.db")
	for _, f := range []struct{ flag, family string }{{"-6", "ipv6"}, {"", "ipv4"}} {
		args := []string{"run", scen, "--db", db, "--json"}
		if f.flag != "" {
			args = append(args, f.flag)
		}
		var doc struct {
			Family string
			Steps  []struct {
				Status  string
				Metrics map[string]float64
			}
		}
		wanlab(t, args...).decode(t, "run "+f.flag+": ", &doc)
		if doc.Family != f.family || len(doc.Steps) != 2 {
			t.Fatalf("run %s: family %q, %d steps; want %s, 2", f.flag, doc.Family, len(doc.Steps), f.family)
		}
		for i, s := range doc.Steps {
			if s.Status != "done" {
				t.Errorf("run %s: step %d %s", f.flag, i+1, s.Status)
			}
		}
		if v := doc.Steps[0].Metrics["throughput_mbps"]; v < 15 || v > 20.5 {
			t.Errorf("run %s: %.2f Mbit/s over a 20 Mbit/s link", f.flag, v)
		}
	}
	assertNothingLeft(t, "e2e-dualrun")
	only := filepath.Join(dir, "v6only.yaml")
	os.WriteFile(only, []byte("name: e2e-v6run\nfamily: ipv6\nhosts: {a: {}, b: {}}\nlinks: [{between: [a, b]}]\nworkloads:\n  - name: push\n    throughput: {from: a, to: b, duration: 1s}\n"), 0o644)
	if r := wanlab(t, "run", only, "-4", "--db", db); r.code != 2 || !strings.Contains(r.stderr, "family: ipv6") {
		t.Errorf("run -4 of an IPv6-only scenario: exit %d: %s", r.code, r.stderr)
	}
	assertNothingLeft(t, "e2e-v6run")
}
