package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/testsupport"
)

// famBed is TestServeFamilies' test-bed: three dual-stack sites.
const famBed = `name: e2e-fam
subnet6: fd00:6:4::/64
hosts:
  cern: {site: cern}
  cnaf: {site: cnaf}
  slac: {site: slac}
sites:
  cern: {rate: 50Mbit, delay: 2ms}
  cnaf: {rate: 50Mbit, delay: 3ms}
  slac: {rate: 50Mbit, delay: 5ms}
`

// TestServeFamilies monitors a dual-stack mesh over both families
// (issue 36): every pair is a path of each family, in the API and on
// /metrics with its family label. Then a tenth of the IPv6 packets into
// cnaf are dropped (ip6tables in cnaf's namespace; IPv4 untouched): loss
// alerts fire on the IPv6 paths into cnaf alone, each saying it is an
// IPv6-only degradation, one incident names cnaf's way in for IPv6 alone,
// and all end once the drop is lifted.
func TestServeFamilies(t *testing.T) {
	// Mostly waiting for summaries and alerts: it runs beside the others
	// that do.
	t.Parallel()
	testsupport.NeedRoot(t)
	testsupport.Need(t, "iptables")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "fam.yaml"), []byte(famBed), 0o644)
	cfg := filepath.Join(dir, "monitor.yaml")
	os.WriteFile(cfg, []byte(`testbed: fam.yaml
groups: {sites: [cern, cnaf, slac]}
tests:
  - {name: lat, type: probe, group: sites, rate: 10/s, summary: 5s, families: [ipv4, ipv6]}
alerts: {loss_above: 2%, for: 2}
`), 0o644)
	s := startServe(t, "--config", cfg, "--db", filepath.Join(dir, "monitor.db"))
	defer s.stop()
	paths := func() map[string]core.PathView {
		var doc struct{ Paths []core.PathView }
		s.get("/api/v1/paths", &doc)
		out := map[string]core.PathView{}
		for _, p := range doc.Paths {
			out[p.Src+"->"+p.Dst+" "+p.Family] = p
		}
		return out
	}
	hosts := []string{"cern", "cnaf", "slac"}
	allOK := func() bool {
		p := paths()
		for _, a := range hosts {
			for _, b := range hosts {
				for _, f := range []string{"ipv4", "ipv6"} {
					if a != b && (p[a+"->"+b+" "+f].State != "ok" || !p[a+"->"+b+" "+f].PerFamily) {
						return false
					}
				}
			}
		}
		return true
	}
	if !waitFor(90*time.Second, allOK) {
		t.Fatalf("not every pair measured over both families: %+v\n%s", paths(), s.stderr)
	}
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, f := range []string{"ipv4", "ipv6"} {
		if !strings.Contains(string(body), `wanlab_path_rtt_seconds{dst="cnaf",family="`+f+`"`) {
			t.Errorf("/metrics has no %s RTT series into cnaf", f)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	drop := []string{"INPUT", "-p", "udp", "-m", "statistic", "--mode", "random", "--probability", "0.10", "-j", "DROP"}
	if out, err := runner("e2e-fam").Command(ctx, "cnaf", append([]string{"ip6tables", "-A"}, drop...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip6tables in cnaf: %v: %s", err, out)
	}
	injected := time.Now()
	want := map[string]bool{"cern->cnaf": true, "slac->cnaf": true}
	fired := func() bool {
		got := map[string]bool{}
		for _, a := range s.alerts() {
			if a.Rule == core.RuleLossAbove && a.Family == "ipv6" && a.Scope == core.ScopeIPv6Only {
				got[a.Src+"->"+a.Dst] = true
			}
		}
		return got["cern->cnaf"] && got["slac->cnaf"]
	}
	if !waitFor(90*time.Second, fired) {
		t.Errorf("no IPv6-only loss alerts on both paths into cnaf: %s", alertList(s.alerts()))
	}
	t.Logf("IPv6-only loss alerts into cnaf %s after the drop", time.Since(injected).Round(time.Second))
	for _, a := range s.alerts() {
		if a.Family != "ipv6" || !want[a.Src+"->"+a.Dst] {
			t.Errorf("an alert the IPv6 drop into cnaf does not explain: %s %s->%s (%s, %s, scope %q): %s", a.Rule, a.Src, a.Dst, a.Test, a.Family, a.Scope, a.Message)
		}
		if !strings.Contains(a.Message, "IPv6 only") {
			t.Errorf("alert %s %s->%s does not say IPv6 only: %s", a.Rule, a.Src, a.Dst, a.Message)
		}
	}
	// One incident names cnaf's way in, for IPv6 alone: the IPv4 runs
	// crossing it are healthy.
	incidents := func() []core.ActiveIncident {
		var doc struct{ Incidents []core.ActiveIncident }
		s.get("/api/v1/incidents", &doc)
		return doc.Incidents
	}
	named := func() bool {
		inc := incidents()
		return len(inc) == 1 && strings.Contains(inc[0].Key, "cnaf") && inc[0].Family == "ipv6" && inc[0].Scope == core.ScopeIPv6Only
	}
	if !waitFor(60*time.Second, named) {
		t.Errorf("incidents %+v: want one on cnaf's way in, IPv6 only", incidents())
	} else if inc := incidents()[0]; !slices.Equal(inc.Columns, []string{"cnaf"}) || len(inc.Rows) != 0 {
		t.Errorf("incident %s marks rows %v and columns %v, want cnaf's column", inc.Key, inc.Rows, inc.Columns)
	}
	if p := paths(); p["cern->cnaf ipv4"].State != "ok" {
		t.Errorf("cern->cnaf over IPv4 while IPv6 drops: %+v", p["cern->cnaf ipv4"])
	}
	if out, err := runner("e2e-fam").Command(ctx, "cnaf", append([]string{"ip6tables", "-D"}, drop...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip6tables -D in cnaf: %v: %s", err, out)
	}
	if !waitFor(90*time.Second, func() bool { return len(s.alerts()) == 0 && len(incidents()) == 0 }) {
		t.Errorf("alerts or incidents still active after the drop was lifted: %s %+v", alertList(s.alerts()), incidents())
	}
}
