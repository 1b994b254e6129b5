package proc

import (
	"strings"
	"testing"
)

const netDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 1842737   12001    0    0    0     0          0         0  1842737   12001    0    0    0     0       0          0
  eth0: 18446744073709551615 7 0 0 0 0 0 0 42 3 0 0 0 0 0 0
`

func TestParseNetDev(t *testing.T) {
	got, err := ParseNetDev(strings.NewReader(netDev))
	if err != nil {
		t.Fatal(err)
	}
	want := []NetDev{{"lo", 1842737, 12001, 1842737, 12001}, {"eth0", 18446744073709551615, 7, 42, 3}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"h\nh\nlo 1 2 3\n", "h\nh\nlo: 1 2 3\n", "h\nh\nlo: x 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n", "h\nh\n: 1 1 0 0 0 0 0 0 1 1\n"} {
		if _, err := ParseNetDev(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if devs, err := NetDevs(); err != nil || len(devs) == 0 {
		t.Errorf("this machine's interfaces: %v, %v", devs, err)
	}
}

func FuzzParseNetDev(f *testing.F) {
	f.Add([]byte(netDev))
	f.Fuzz(func(t *testing.T, data []byte) {
		devs, err := ParseNetDev(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		for _, d := range devs {
			if d.Name == "" || strings.ContainsAny(d.Name, ":\n") {
				t.Fatalf("name %q", d.Name)
			}
		}
	})
}

func TestParseSNMP(t *testing.T) {
	text := "Ip: Forwarding DefaultTTL\nIp: 1 64\nUdp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\nUdp: 10 0 7 12 5 0\n"
	for _, c := range []struct {
		proto, name string
		want        uint64
		ok          bool
	}{{"Udp", "RcvbufErrors", 5, true}, {"Ip", "DefaultTTL", 64, true}, {"Udp", "Nothing", 0, false}, {"Tcp", "RtoMin", 0, false}} {
		got, err := ParseSNMP(strings.NewReader(text), c.proto, c.name)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("%s %s: %d, %v", c.proto, c.name, got, err)
		}
	}
}
