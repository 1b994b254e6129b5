package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wanlab/wanlab/internal/agent"
	"github.com/wanlab/wanlab/internal/realhosts"
	"github.com/wanlab/wanlab/internal/workload/bind"
)

// Two dual-stack agents (listening on every address, naming 127.0.0.1 and
// ::1 in their Hello), reached through an inventory that gives no test
// address: hosts check shows both addresses, and a scenario's workload
// runs over IPv4 by default and over IPv6 with -6, as the run's "family"
// says.
func TestRunDualStackAgents(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "pki")
	wanlab(t, exitOK, "pki", "init", ca)
	wanlab(t, exitOK, "pki", "issue", "agent", "--dir", ca, "--role", "agent", "--ip", "[::1]")
	wanlab(t, exitOK, "pki", "issue", "ctl", "--dir", ca, "--role", "controller")
	dual := func(s *agent.Server) {
		s.Test, s.TestAddress, s.TestAddress6 = bind.Local{}, "127.0.0.1", "::1"
	}
	a, _ := v6Agent(t, ca, "a", `"127.0.0.1", "::1"`, dual)
	b, _ := v6Agent(t, ca, "b", `"127.0.0.1", "::1"`, dual)
	inv := filepath.Join(dir, "dual.yaml")
	text := fmt.Sprintf("tls: {ca: pki/ca.crt, cert: pki/ctl.crt, key: pki/ctl.key}\nhosts:\n  a: {agent: %q}\n  b: {agent: %q}\n", a, b)
	if err := os.WriteFile(inv, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := wanlab(t, exitOK, "hosts", "check", inv, "--json")
	var sts []realhosts.Status
	if err := json.Unmarshal([]byte(out), &sts); err != nil || len(sts) != 2 {
		t.Fatalf("hosts check: %v\n%s", err, out)
	}
	for _, st := range sts {
		if !st.Reachable || st.TestAddress != "127.0.0.1" || st.TestAddress6 != "::1" {
			t.Errorf("hosts check of a dual-stack agent: %+v", st)
		}
	}

	scen := filepath.Join(dir, "pair.yaml")
	if err := os.WriteFile(scen, []byte("name: pair\nhosts: {a: {}, b: {}}\nlinks: [{between: [a, b], rate: 100Mbit}]\n"+
		"workloads:\n  - name: push\n    throughput: {from: a, to: b, duration: 1s}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "w.db")
	for _, tc := range []struct{ flag, want string }{{"", "ipv4"}, {"-6", "ipv6"}} {
		args := []string{"run", scen, "--inventory", inv, "--db", db, "--json"}
		if tc.flag != "" {
			args = append(args, tc.flag)
		}
		out, _ := wanlab(t, exitOK, args...)
		var res struct {
			Family string
			Status string
			Steps  []struct {
				Status  string
				Metrics map[string]float64
			}
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("run %s: %v\n%s", tc.flag, err, out)
		}
		if res.Family != tc.want || res.Status != "done" || len(res.Steps) != 1 || res.Steps[0].Metrics["throughput_mbps"] <= 0 {
			t.Errorf("run %s: family %q, status %s, steps %+v; want %s, done, a throughput", tc.flag, res.Family, res.Status, res.Steps, tc.want)
		}
	}
}
