package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wanlab run's -4 and -6: one the scenario's hosts lack is a usage
// error naming the scenario's family, before anything is built or
// stored; so is either with --resume, or both at once.
func TestRunFamilyUsage(t *testing.T) {
	dir := t.TempDir()
	scen := func(name, top string) string {
		path := filepath.Join(dir, name+".yaml")
		text := "name: " + name + "\n" + top + "hosts: {a: {}, b: {}}\nlinks: [{between: [a, b], rate: 10Mbit}]\n" +
			"workloads:\n  - name: mine\n    command: {clients: [{host: a, run: [\"true\"]}]}\n"
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	v6 := scen("v6only", "family: ipv6\n")
	v4 := scen("v4only", "")
	agents := filepath.Join(dir, "agents.yaml")
	os.WriteFile(agents, []byte("name: agents\nfamily: ipv6\ntls: {ca: ca.crt, cert: ctl.crt, key: ctl.key}\n"+
		"hosts: {a: {agent: \"[2001:db8::1]:7400\"}, b: {agent: \"[2001:db8::2]:7400\"}}\nlinks: [{between: [a, b]}]\n"), 0o600)
	db := filepath.Join(dir, "w.db")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"run", v6, "-4"}, "-4: scenario " + v6 + " has family: ipv6: its hosts have no IPv4 address"},
		{[]string{"run", v4, "-6"}, "-6: scenario " + v4 + " has family: ipv4: its hosts have no IPv6 address (give it subnet6:"},
		{[]string{"run", v6, "-4", "-6"}, "give -4 or -6, not both"},
		{[]string{"run", "--resume", "2", "-6"}, "-6 cannot change a resumed run"},
		{[]string{"run", agents, "-4"}, "-4: scenario " + agents + " has family: ipv6"},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append(tc.args, "--db", db), &out, &errb)
			if code != exitUsage || !strings.Contains(errb.String(), tc.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), exitUsage, tc.msg)
			}
		})
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the archive was created for a run refused as a usage error")
	}
}

// runFamily: a dual-stack scenario's run tests over IPv4 unless -6, one
// of IPv6 alone over IPv6; an inventory's hosts over what -4 or -6 asks,
// else their own family.
func TestRunFamily(t *testing.T) {
	dual, err := planOf("dual.yaml", []byte("name: dual\nsubnet6: fd00:6:1::/64\nhosts: {a: {}, b: {}}\nlinks: [{between: [a, b]}]\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		inventory, asked, want string
	}{
		{"", "", "ipv4"},
		{"", "ipv6", "ipv6"},
		{"", "ipv4", "ipv4"},
		{"sites.yaml", "", ""},
		{"sites.yaml", "ipv6", "ipv6"},
	} {
		got, err := runFamily(dual, tc.inventory, nil, tc.asked)
		if err != nil || got != tc.want {
			t.Errorf("inventory %q, asked %q: %q, %v; want %q", tc.inventory, tc.asked, got, err, tc.want)
		}
	}
	if got, err := runFamily(nil, "", nil, ""); got != "" || err != nil {
		t.Errorf("a resumed run: %q, %v; want its own family", got, err)
	}
}

// --test-address6 makes a dual-stack agent: listeners on every address,
// both addresses named.
func TestTestLocalDualStack(t *testing.T) {
	for _, tc := range []struct {
		addr, addr6 string
		listen      string
		named       [2]string
		err         string
	}{
		{"", "", "", [2]string{}, ""},
		{"10.1.0.1", "", "10.1.0.1", [2]string{}, ""},
		{"[2001:db8::1]", "", "2001:db8::1", [2]string{}, ""},
		{"10.1.0.1", "2001:db8::1", "", [2]string{"10.1.0.1", "2001:db8::1"}, ""},
		{"", "[2001:db8::1]", "", [2]string{"", "2001:db8::1"}, ""},
		{"", "10.1.0.1", "", [2]string{}, "--test-address6 \"10.1.0.1\": give an IPv6 address"},
		{"2001:db8::2", "2001:db8::1", "", [2]string{}, "--test-address 2001:db8::2 is IPv6"},
	} {
		test, named, err := testLocal(tc.addr, tc.addr6)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q, %q: %v, want %q", tc.addr, tc.addr6, err, tc.err)
			}
			continue
		}
		if err != nil || test.Addr != tc.listen || named != tc.named {
			t.Errorf("%q, %q: listen %q, named %q, %v; want %q, %q", tc.addr, tc.addr6, test.Addr, named, err, tc.listen, tc.named)
		}
	}
}
