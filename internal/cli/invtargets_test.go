package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wanlab/wanlab/internal/measure/target"
)

// writeTargetsInventory writes an inventory with a target of each kind.
func writeTargetsInventory(t *testing.T) string {
	t.Helper()
	inv := filepath.Join(t.TempDir(), "sites.yaml")
	text := "tls: {ca: ca.crt, cert: ctl.crt, key: ctl.key}\nhosts:\n  cern: {agent: \"[2001:db8::1]:7400\"}\n" +
		"targets:\n  iperf: {iperf3: \"[2001:db8::9]:5201\"}\n  refl: {stamp: 192.0.2.7}\n  gw: {ping: router.example.org}\n"
	if err := os.WriteFile(inv, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return inv
}

// --target NAME is the inventory's target of that name, which must be of
// the verb's kind; anything else is an address or a name the agent
// resolves, as before.
func TestFarTarget(t *testing.T) {
	inv := writeTargetsInventory(t)
	for _, tc := range []struct {
		where               hosts
		far, kind           string
		addr, name, problem string
	}{
		{hosts{inventory: inv}, "iperf", target.Iperf3, "[2001:db8::9]:5201", "iperf", ""},
		{hosts{inventory: inv}, "refl", target.STAMP, "192.0.2.7", "refl", ""},
		{hosts{inventory: inv}, "gw", target.Ping, "router.example.org", "gw", ""},
		{hosts{inventory: inv}, "192.0.2.8", target.Ping, "192.0.2.8", "192.0.2.8", ""},
		{hosts{inventory: inv}, "other", target.Ping, "other", "other", ""},
		{hosts{testbed: "bed"}, "gw", target.Ping, "gw", "gw", ""},
		{hosts{inventory: inv}, "refl", target.Ping, "", "", "--target refl: the inventory " + inv + " names it a STAMP reflector (stamp: 192.0.2.7): wanlab measure stamp tests toward it"},
	} {
		addr, name, err := farTarget(tc.where, tc.far, tc.kind)
		if tc.problem != "" {
			if err == nil || err.Error() != tc.problem {
				t.Errorf("%s as %s: %v, want %q", tc.far, tc.kind, err, tc.problem)
			}
			continue
		}
		if err != nil || addr != tc.addr || name != tc.name {
			t.Errorf("%s as %s: %q, %q, %v; want %q, %q", tc.far, tc.kind, addr, name, err, tc.addr, tc.name)
		}
	}
}

// A target of another kind is a usage error, said before any agent is
// dialled.
func TestTargetKindUsage(t *testing.T) {
	inv := writeTargetsInventory(t)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"ping", "--target", "iperf"}, "names it an iperf3 server (iperf3: [2001:db8::9]:5201): wanlab measure throughput tests toward it"},
		{[]string{"stamp", "--target", "gw"}, "names it a ping target (ping: router.example.org): wanlab measure ping tests toward it"},
		{[]string{"throughput", "--target", "refl"}, "names it a STAMP reflector (stamp: 192.0.2.7): wanlab measure stamp tests toward it"},
	} {
		var out, errb bytes.Buffer
		code := run(append(append([]string{"measure"}, tc.args...), "--inventory", inv, "--from", "cern"), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errb.String(), exitUsage, tc.msg)
		}
	}
}
