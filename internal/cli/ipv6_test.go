package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/datadir"
	"github.com/wanlab/wanlab/internal/limits"
	"github.com/wanlab/wanlab/internal/pki"
	"github.com/wanlab/wanlab/internal/policy"
	"github.com/wanlab/wanlab/internal/realhosts"
	"github.com/wanlab/wanlab/internal/workload/bind"
)

// wanlab runs the command line, failing the test on an exit other than
// want, and returns its output.
func wanlab(t *testing.T, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != want {
		t.Fatalf("wanlab %s: exit %d, want %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, want, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// v6Agent serves an agent over TLS on [::1], testing on ::1, with the
// lab's agent certificate (IP SAN ::1) and a policy letting cn:ctl test
// toward peers; it returns its control address and the server, whose
// policy a test may change. set, if given, changes the server before it
// serves.
func v6Agent(t *testing.T, dir, host, peers string, set ...func(*agent.Server)) (string, *agent.Server) {
	t.Helper()
	data, err := datadir.Open(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &agent.Server{Host: host, Version: "test", Limits: limits.Default, Data: data, Test: bind.Local{Addr: "::1"}}
	for _, f := range set {
		f(srv)
	}
	pol, err := policy.Parse("p.yaml", []byte("rules:\n  - {name: lab, identities: [cn:ctl], peers: ["+peers+"]}\n"), srv.Limits)
	if err != nil {
		t.Fatal(err)
	}
	srv.SetPolicy(pol)
	side, err := pki.NewServer(pki.Files{CA: filepath.Join(dir, pki.CACert), Cert: filepath.Join(dir, "agent.crt"), Key: filepath.Join(dir, "agent.key")})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ctx, ln, side.Config()) }()
	t.Cleanup(func() { cancel(); <-served; data.Close() })
	return ln.Addr().String(), srv
}

// v6Lab makes a CA with the command line (the agent's certificate holds
// ::1 as an IP SAN), serves agents a and b on [::1], and writes an
// inventory of IPv6 alone for them: a's test address is the agent's
// word, b's the inventory's, bare.
func v6Lab(t *testing.T) (inventory string, a *agent.Server, agents [2]string) {
	t.Helper()
	dir := t.TempDir()
	ca := filepath.Join(dir, "pki")
	wanlab(t, exitOK, "pki", "init", ca)
	wanlab(t, exitOK, "pki", "issue", "agent", "--dir", ca, "--role", "agent", "--ip", "[::1]")
	wanlab(t, exitOK, "pki", "issue", "ctl", "--dir", ca, "--role", "controller")
	agents[0], a = v6Agent(t, ca, "a", `"::1"`)
	agents[1], _ = v6Agent(t, ca, "b", `"::1/128"`)
	inventory = filepath.Join(dir, "v6.yaml")
	text := fmt.Sprintf(`tls: {ca: pki/ca.crt, cert: pki/ctl.crt, key: pki/ctl.key}
hosts:
  a: {agent: "%s"}
  b: {agent: "%s", address: "::1"}
`, agents[0], agents[1])
	if err := os.WriteFile(inventory, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return inventory, a, agents
}

// Two agents on IPv6 loopback, reached through an inventory of IPv6
// alone: a throughput test, probes and a transfer run between them and
// their results say IPv6; -4 is refused as a usage error naming the host;
// a policy whose peers hold no IPv6 address refuses to send toward one.
func TestMeasureOverIPv6(t *testing.T) {
	inv, a, agents := v6Lab(t)
	family := func(what, out string, get func(map[string]any) any) {
		t.Helper()
		var r map[string]any
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		if got := get(r); got != "ipv6" {
			t.Errorf("%s: family %v, want ipv6\n%s", what, got, out)
		}
	}

	out, _ := wanlab(t, exitOK, "hosts", "check", inv, "--json")
	var sts []realhosts.Status
	if err := json.Unmarshal([]byte(out), &sts); err != nil || len(sts) != 2 {
		t.Fatalf("hosts check: %v\n%s", err, out)
	}
	for _, st := range sts {
		if !st.Reachable || st.TestAddress != "::1" || st.TestAddress6 != "::1" {
			t.Errorf("hosts check over [::1]: %+v", st)
		}
	}

	out, _ = wanlab(t, exitOK, "measure", "throughput", "--inventory", inv, "--from", "a", "--to", "b", "-t", "1", "--json")
	family("throughput", out, func(r map[string]any) any { return r["start"].(map[string]any)["family"] })
	var tp struct {
		End struct {
			SumReceived struct{ Bytes uint64 } `json:"sum_received"`
		} `json:"end"`
	}
	if json.Unmarshal([]byte(out), &tp); tp.End.SumReceived.Bytes == 0 {
		t.Errorf("throughput over ::1 moved nothing: %s", out)
	}
	// -6 says what the inventory does already; --reverse sends toward a,
	// whose test address is its agent's word.
	out, _ = wanlab(t, exitOK, "measure", "throughput", "--inventory", inv, "--from", "a", "--to", "b", "-R", "-6", "-t", "1", "--json")
	family("throughput -R -6", out, func(r map[string]any) any { return r["start"].(map[string]any)["family"] })

	// UDP: the token's greeting and the datagrams over IPv6.
	out, _ = wanlab(t, exitOK, "measure", "throughput", "--inventory", inv, "--from", "a", "--to", "b", "-u", "-b", "10Mbit", "-t", "1", "--json")
	family("throughput -u", out, func(r map[string]any) any { return r["start"].(map[string]any)["family"] })
	if json.Unmarshal([]byte(out), &tp); tp.End.SumReceived.Bytes == 0 {
		t.Errorf("UDP throughput over ::1 moved nothing: %s", out)
	}

	out, _ = wanlab(t, exitOK, "measure", "probe", "--inventory", inv, "--from", "a", "--to", "b", "-c", "20", "-i", "0.01", "--json")
	family("probe", out, func(r map[string]any) any { return r["family"] })
	var pr struct{ Received int }
	if json.Unmarshal([]byte(out), &pr); pr.Received == 0 {
		t.Errorf("no probe came back over ::1: %s", out)
	}

	out, _ = wanlab(t, exitOK, "measure", "trace", "--inventory", inv, "--from", "a", "--to", "b", "--max-hops", "3", "--json")
	family("trace", out, func(r map[string]any) any { return r["family"] })
	if !strings.Contains(out, `"addr": "::1"`) {
		t.Errorf("the trace over ::1 did not reach it: %s", out)
	}

	out, _ = wanlab(t, exitOK, "measure", "transfer", "--inventory", inv, "--from", "a", "--to", "b", "--size", "1MB", "--json")
	family("transfer", out, func(r map[string]any) any { return r["there"].(map[string]any)["family"] })

	// b's address is in the inventory: refused before any agent is dialled.
	_, stderr := wanlab(t, exitUsage, "measure", "probe", "--inventory", inv, "--from", "a", "--to", "b", "-4")
	if !strings.Contains(stderr, "-4: the inventory "+inv+" gives host b (::1) no IPv4 test address") {
		t.Errorf("-4 toward b: %s", stderr)
	}
	// Where the agents say their addresses: refused once dialled.
	said := filepath.Join(filepath.Dir(inv), "said.yaml")
	text := fmt.Sprintf("tls: {ca: pki/ca.crt, cert: pki/ctl.crt, key: pki/ctl.key}\nhosts:\n  a: {agent: %q}\n  b: {agent: %q}\n", agents[0], agents[1])
	if err := os.WriteFile(said, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr = wanlab(t, exitUsage, "measure", "throughput", "--inventory", said, "--from", "b", "--to", "a", "-4", "-t", "1")
	if !strings.Contains(stderr, "-4: host b: its tests are to be over IPv4, but its test address is ::1 (give address: in the inventory)") {
		t.Errorf("-4 toward a: %s", stderr)
	}
	_, stderr = wanlab(t, exitUsage, "measure", "throughput", "--inventory", inv, "--from", "b", "--to", "a", "-4", "-6")
	if !strings.Contains(stderr, "give -4 or -6, not both") {
		t.Errorf("-4 -6: %s", stderr)
	}

	// A policy of IPv4 peers refuses to send toward an IPv6 one.
	pol, err := policy.Parse("p.yaml", []byte("rules:\n  - {name: lab, identities: [cn:ctl], peers: [\"127.0.0.0/8\", \"::ffff:10.0.0.0/104\"]}\n"), limits.Default)
	if err != nil {
		t.Fatal(err)
	}
	a.SetPolicy(pol)
	_, stderr = wanlab(t, exitFailure, "measure", "probe", "--inventory", inv, "--from", "a", "--to", "b", "-c", "2")
	if !strings.Contains(stderr, "refuses to send toward ::1") {
		t.Errorf("a policy of IPv4 peers let a probe toward ::1 go: %s", stderr)
	}
}

// pki issue --ip takes IPv6 addresses, bare or in brackets, and refuses a
// zone, which no certificate holds.
func TestSANIP(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"10.1.0.1", "10.1.0.1", ""},
		{"2001:db8::1", "2001:db8::1", ""},
		{"[2001:db8::1]", "2001:db8::1", ""},
		{"::ffff:10.1.0.1", "10.1.0.1", ""},
		{"fe80::1%eth0", "", `--ip "fe80::1%eth0" has a zone (%eth0)`},
		{"dtn01", "", `--ip "dtn01" is not an IP address`},
	} {
		ip, err := sanIP(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("sanIP(%q) = %v, %v; want an error with %q", tc.in, ip, err, tc.err)
			}
			continue
		}
		if err != nil || ip.String() != tc.want {
			t.Errorf("sanIP(%q) = %v, %v; want %s", tc.in, ip, err, tc.want)
		}
	}
}

// --test-address takes IPv6, bare or in brackets, and the wildcards.
func TestTestAddressFlag(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", "", ""},
		{"10.1.0.1", "10.1.0.1", ""},
		{"2001:db8::1", "2001:db8::1", ""},
		{"[2001:db8::1]", "2001:db8::1", ""},
		{"::", "::", ""},
		{"dtn01", "", `--test-address "dtn01": give an IP address`},
	} {
		l, _, err := testLocal(tc.in, "")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("testLocal(%q) = %v, %v; want an error with %q", tc.in, l, err, tc.err)
			}
			continue
		}
		if err != nil || l.Addr != tc.want {
			t.Errorf("testLocal(%q) = %+v, %v; want %q", tc.in, l, err, tc.want)
		}
	}
}
