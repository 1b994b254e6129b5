package runner

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wanlab/wanlab/internal/monitor/core"
	"github.com/wanlab/wanlab/internal/testsupport"
)

func TestMain(m *testing.M) { testsupport.Main(m) }

func TestRatesWrapAndReboot(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int, up uint32, in, out uint64, bits int) Counters {
		return Counters{At: t0.Add(time.Duration(s) * time.Second), Uptime: up, Ifaces: map[string]IfaceCounters{"eth0": {In: in, Out: out, Bits: bits, Speed: 1e9}}}
	}
	tests := []struct {
		name      string
		prev, cur Counters
		in, out   float64
		ok        bool
	}{
		{"steady", at(0, 100, 1000, 0, 64), at(10, 1100, 1000+1250000, 2500000, 64), 1e6, 2e6, true},
		{"64-bit wrap", at(0, 100, ^uint64(0)-99, 0, 64), at(10, 1100, 150, 0, 64), 8 * 250 / 10.0, 0, true},
		{"32-bit wrap", at(0, 100, 1<<32-1000, 0, 32), at(10, 1100, 250, 0, 32), 8 * 1250 / 10.0, 0, true},
		{"reboot", at(0, 100000, 5e9, 5e9, 64), at(10, 900, 1e6, 1e6, 64), 0, 0, false},
	}
	for _, tt := range tests {
		r, ok := Rates(tt.prev, tt.cur)
		if ok != tt.ok {
			t.Errorf("%s: ok %v", tt.name, ok)
			continue
		}
		if ok && (r["eth0"].In != tt.in || r["eth0"].Out != tt.out || r["eth0"].Speed != 1e9) {
			t.Errorf("%s: %+v, want in %g out %g", tt.name, r["eth0"], tt.in, tt.out)
		}
	}
}

// A real snmpd, read over v2c and v3: the loopback's counters grow by what
// the test sends through it.
func TestPollRealSnmpd(t *testing.T) {
	addr := testsupport.Snmpd(t)
	targets := []core.SNMPTarget{
		{Name: "v2c", Address: addr, Timeout: time.Second, Version: "2c", Community: testsupport.SNMPCommunity, Interfaces: []string{"lo"}},
		{Name: "v3", Address: addr, Timeout: time.Second, Version: "3", User: testsupport.SNMPUser, AuthProto: "SHA", AuthPass: testsupport.SNMPAuthPass,
			PrivProto: "AES", PrivPass: testsupport.SNMPPrivPass, Interfaces: []string{"lo"}},
	}
	for _, tg := range targets {
		before, err := Poll(tg)
		if err != nil {
			t.Fatalf("%s: %v", tg.Name, err)
		}
		lo, ok := before.Ifaces["lo"]
		if !ok || lo.Bits != 64 || len(before.Ifaces) != 1 {
			t.Fatalf("%s: interfaces %+v, want lo alone with 64-bit counters", tg.Name, before.Ifaces)
		}
		const sent = 20 << 20
		sendThroughLoopback(t, sent)
		// snmpd caches interface counters for a few seconds.
		var after Counters
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
			if after, err = Poll(tg); err != nil {
				t.Fatal(err)
			}
			if after.Ifaces["lo"].In > lo.In+sent {
				break
			}
		}
		r, ok := Rates(before, after)
		if !ok {
			t.Fatalf("%s: no rates from %+v to %+v", tg.Name, before, after)
		}
		bits := r["lo"].In * after.At.Sub(before.At).Seconds()
		if bits < 8*sent { // other tests share the loopback: at least what this one sent
			t.Errorf("%s: lo carried %.0f bits between the polls, want at least the %d sent", tg.Name, bits, 8*sent)
		}
	}
	// Wrong credentials and a dead port are errors that say which device.
	bad := targets[0]
	bad.Community = "nope"
	if _, err := Poll(bad); err == nil || !strings.Contains(err.Error(), "SNMP v2c") {
		t.Errorf("a wrong community: %v", err)
	}
	gone := targets[1]
	gone.Interfaces = []string{"eth9"}
	if _, err := Poll(gone); err == nil || !strings.Contains(err.Error(), "none of eth9") {
		t.Errorf("a missing interface: %v", err)
	}
}

func sendThroughLoopback(t *testing.T, n int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = io.Copy(io.Discard, c)
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(c, zeros{}, n); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
